import { mkdirSync, appendFileSync } from 'node:fs';
import { request } from 'node:http';
import path from 'node:path';
import { formatLogLine } from '../../platform/app-log';
import { insertApp } from '../support/app-rows';
import { auth } from '../support/apps';
import { seedWorkspace, tokenWith, type Workspace } from '../support/fixtures';
import { tempLayout } from '../support/local-apps';
import { startStack, type TestStack } from '../support/stack';

let stack: TestStack;
let ws: Workspace;
let temp: ReturnType<typeof tempLayout>;

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds);
  temp = tempLayout();
});
afterAll(async () => {
  await stack.close();
  temp.cleanup();
});

function writeLines(appUuid: string, lines: Array<[string, string, Date]>): void {
  const file = temp.layout.appLogFile(appUuid);
  mkdirSync(path.dirname(file), { recursive: true });
  appendFileSync(file, lines.map(([source, message, at]) => formatLogLine(source, message, at)).join(''));
}

const at = (s: number) => new Date(Date.UTC(2026, 10, 23, 12, 0, s));

/** Opens the SSE stream and collects its events until `count` arrived. */
function sseEvents(
  appUuid: string,
  token: string,
  query: string,
  count: number,
  onOpen: () => void,
): Promise<{ type: string | undefined; events: any[] }> {
  const { port } = stack.server.address() as { port: number };
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: `/api/v1/apps/${appUuid}/logs${query}`,
        headers: { ...auth(token), accept: 'text/event-stream' },
      },
      (res) => {
        const events: any[] = [];
        let buf = '';
        res.setEncoding('utf8');
        onOpen();
        res.on('data', (chunk: string) => {
          buf += chunk;
          let i;
          while ((i = buf.indexOf('\n\n')) !== -1) {
            const frame = buf.slice(0, i);
            buf = buf.slice(i + 2);
            if (frame.startsWith('data: ')) events.push(JSON.parse(frame.slice(6)));
          }
          if (events.length >= count) {
            req.destroy();
            resolve({ type: res.headers['content-type'], events });
          }
        });
      },
    );
    req.on('error', (err) => {
      if (!req.destroyed) reject(err);
    });
    req.end();
  });
}

describe('app logs', () => {
  it('answers an empty list when the data plane keeps no log (simulated driver), and 404 for an unknown app', async () => {
    const app = await insertApp(stack.ds, ws);
    const res = await stack.http.get(`/api/v1/apps/${app.uuid}/logs`).set(auth(ws.ownerToken));
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
    expect(
      (await stack.http.get(`/api/v1/apps/00000000-0000-4000-8000-000000000000/logs`).set(auth(ws.ownerToken))).status,
    ).toBe(404);
  });

  it('GET /apps/{uuid}/logs (apps:view): the last `tail` lines, since a time, oldest first; bad queries are 400', async () => {
    stack.apiDeps.localLayout = temp.layout;
    const app = await insertApp(stack.ds, ws);
    writeLines(app.uuid, [
      ['web.1', 'listening on 4000', at(1)],
      ['berth', 'web.1 exited with code 1, restarting in 2 s', at(2)],
      ['web.1', 'listening on 4000', at(3)],
      ['web.2', 'GET / 200', at(4)],
    ]);
    const viewer = await tokenWith(stack.ds, ws.uuid, ['apps:view']);
    const all = await stack.http.get(`/api/v1/apps/${app.uuid}/logs`).set(auth(viewer));
    expect(all.status).toBe(200);
    expect(all.body).toHaveLength(4);
    expect(all.body[1]).toEqual({
      timestamp: at(2).toISOString(),
      source: 'berth',
      message: 'web.1 exited with code 1, restarting in 2 s',
    });
    const tail = await stack.http.get(`/api/v1/apps/${app.uuid}/logs?tail=2`).set(auth(viewer));
    expect(tail.body.map((l: any) => l.timestamp)).toEqual([at(3).toISOString(), at(4).toISOString()]);
    const since = await stack.http
      .get(`/api/v1/apps/${app.uuid}/logs?since=${encodeURIComponent(at(2).toISOString())}`)
      .set(auth(viewer));
    expect(since.body.map((l: any) => l.source)).toEqual(['berth', 'web.1', 'web.2']);
    for (const q of ['tail=0', 'tail=10001', 'tail=x', 'since=yesterday', 'follow=1']) {
      const bad = await stack.http.get(`/api/v1/apps/${app.uuid}/logs?${q}`).set(auth(viewer));
      expect(bad.status).toBe(400);
      expect(bad.body.detail ?? bad.body.title).toBeTruthy();
    }
    const other = await tokenWith(stack.ds, ws.uuid, ['apps:deploy']);
    expect((await stack.http.get(`/api/v1/apps/${app.uuid}/logs`).set(auth(other))).status).toBe(403);
  });

  it('reads the tail of a long log without losing lines across read chunks', async () => {
    stack.apiDeps.localLayout = temp.layout;
    const app = await insertApp(stack.ds, ws);
    const long = 'x'.repeat(300);
    writeLines(
      app.uuid,
      Array.from({ length: 2000 }, (_, i) => ['web.1', `${i} ${long}`, at(i % 60)] as [string, string, Date]),
    );
    const res = await stack.http.get(`/api/v1/apps/${app.uuid}/logs?tail=1500`).set(auth(ws.ownerToken));
    expect(res.body).toHaveLength(1500);
    expect(res.body.map((l: any) => Number(l.message.split(' ')[0]))).toEqual(
      Array.from({ length: 1500 }, (_, i) => 500 + i),
    );
  });

  it('with Accept: text/event-stream sends the selected lines, then follows new ones', async () => {
    stack.apiDeps.localLayout = temp.layout;
    const app = await insertApp(stack.ds, ws);
    writeLines(app.uuid, [
      ['web.1', 'old', at(1)],
      ['web.1', 'recent', at(2)],
    ]);
    const got = await sseEvents(app.uuid, ws.ownerToken, '?tail=1', 3, () => {
      setTimeout(
        () =>
          writeLines(app.uuid, [
            ['web.1', 'new one', at(5)],
            ['berth', 'web.1 started', at(6)],
          ]),
        300,
      );
    });
    expect(got.type).toMatch(/^text\/event-stream/);
    expect(got.events.map((e) => e.message)).toEqual(['recent', 'new one', 'web.1 started']);
  });
});
