import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildLogLine } from '../../platform/build-log';
import { localLayout, type LocalLayout } from '../../platform/local-layout';
import { insertApp } from '../support/app-rows';
import { auth } from '../support/apps';
import { memberWith, seedWorkspace, tokenWith, type Workspace } from '../support/fixtures';
import { startStack, type TestStack } from '../support/stack';

let stack: TestStack;
let ws: Workspace;
let dataDir: string;
let layout: LocalLayout;

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds);
  dataDir = mkdtempSync(path.join(tmpdir(), 'berth-data-'));
  layout = localLayout({ dataDir });
  stack.apiDeps.localLayout = layout;
});
afterAll(async () => {
  await stack.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function deployment(appUuid: string): Promise<string> {
  const uuid = randomUUID();
  await stack.ds.query(
    `INSERT INTO app_deployments (uuid, app_uuid, workspace_uuid, state, deployment_method, commit_sha, branch)
    VALUES ($1, $2, $3, 'failed', 'git_push', $4, 'main')`,
    [uuid, appUuid, ws.uuid, 'a'.repeat(40)],
  );
  return uuid;
}

function writeLog(deploymentUuid: string, lines: Array<[string, string]>): void {
  const file = layout.buildLogFile(deploymentUuid);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, lines.map(([at, text]) => buildLogLine(text, new Date(at))).join(''));
}

const logsPath = (appUuid: string, deploymentUuid: string) =>
  `/api/v1/apps/${appUuid}/deployments/${deploymentUuid}/logs`;

describe('GET /apps/{uuid}/deployments/{deployment_uuid}/logs', () => {
  it('answers the build output line by line, oldest first, with its timestamps, to apps:view', async () => {
    const app = await insertApp(stack.ds, ws);
    const d = await deployment(app.uuid);
    writeLog(d, [
      ['2026-11-23T19:01:02.000Z', 'building commit aaaa of /git/web.git'],
      ['2026-11-23T19:01:03.250Z', '$ npm install'],
      ['2026-11-23T19:01:09.000Z', 'build failed: npm install exited with code 1'],
    ]);
    const viewer = await tokenWith(stack.ds, ws.uuid, ['apps:view']);
    const res = await stack.http.get(logsPath(app.uuid, d)).set(auth(viewer));
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      { timestamp: '2026-11-23T19:01:02.000Z', message: 'building commit aaaa of /git/web.git' },
      { timestamp: '2026-11-23T19:01:03.250Z', message: '$ npm install' },
      { timestamp: '2026-11-23T19:01:09.000Z', message: 'build failed: npm install exited with code 1' },
    ]);
  });

  it('a deployment with no build log (nothing written yet, or a driver that keeps none) answers an empty array', async () => {
    const app = await insertApp(stack.ds, ws);
    const d = await deployment(app.uuid);
    const res = await stack.http.get(logsPath(app.uuid, d)).set(auth(ws.ownerToken));
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
    stack.apiDeps.localLayout = undefined;
    try {
      writeLog(d, [['2026-11-23T19:01:02.000Z', 'not read without the local driver']]);
      expect((await stack.http.get(logsPath(app.uuid, d)).set(auth(ws.ownerToken))).body).toEqual([]);
    } finally {
      stack.apiDeps.localLayout = layout;
    }
  });

  it("404 for an unknown deployment, a deployment of another app, an unknown app, and another workspace's app", async () => {
    const app = await insertApp(stack.ds, ws);
    const other = await insertApp(stack.ds, ws);
    const d = await deployment(app.uuid);
    writeLog(d, [['2026-11-23T19:01:02.000Z', 'secret-ish build output']]);
    const get = (a: string, dep: string, token = ws.ownerToken) => stack.http.get(logsPath(a, dep)).set(auth(token));
    expect((await get(app.uuid, randomUUID())).status).toBe(404);
    expect((await get(other.uuid, d)).status).toBe(404);
    expect((await get(randomUUID(), d)).status).toBe(404);
    expect((await get(app.uuid, 'not-a-uuid')).status).toBe(404);
    const stranger = await seedWorkspace(stack.ds);
    const res = await get(app.uuid, d, stranger.ownerToken);
    expect(res.status).toBe(404);
    expect(JSON.stringify(res.body)).not.toContain('build output');
  });

  it('PRJ-04 a deployment of an app in a project closed to the caller is a 404; without apps:view a 403', async () => {
    const project = (
      await stack.http
        .post('/api/v1/projects')
        .set(auth(ws.ownerToken))
        .send({ name: `closed-${randomUUID().slice(0, 6)}` })
    ).body.uuid;
    const app = await insertApp(stack.ds, ws, { projectId: project });
    const d = await deployment(app.uuid);
    writeLog(d, [['2026-11-23T19:01:02.000Z', 'inside the project']]);
    const insider = await memberWith(stack.ds, ws.uuid, 'log-insider', ['apps:view']);
    const outsider = await memberWith(stack.ds, ws.uuid, 'log-outsider', ['apps:view']);
    await stack.http
      .post(`/api/v1/projects/${project}/restrictions`)
      .set(auth(ws.ownerToken))
      .send({ subject_type: 'role', role_name: 'log-insider' })
      .expect(201);
    expect((await stack.http.get(logsPath(app.uuid, d)).set(auth(insider.token))).body).toEqual([
      { timestamp: '2026-11-23T19:01:02.000Z', message: 'inside the project' },
    ]);
    expect((await stack.http.get(logsPath(app.uuid, d)).set(auth(outsider.token))).status).toBe(404);
    const noView = await tokenWith(stack.ds, ws.uuid, ['apps:manage']);
    expect((await stack.http.get(logsPath(app.uuid, d)).set(auth(noView))).status).toBe(403);
  });
});
