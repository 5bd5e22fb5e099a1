import { PERMISSIONS } from '../../domain/permissions';
import { routes } from '../../api/routes';
import { tableCounts } from '../support/db';
import { seedWorkspace, tokenWith, type Workspace } from '../support/fixtures';
import { pathFor } from '../support/routes';
import { startStack, type TestStack } from '../support/stack';
import {
  insertApp,
  RECEIVER_ALLOW,
  startDnsServer,
  startReceiver,
  type DnsServer,
  type Receiver,
} from '../support/webhooks';

/** Webhook management: the record, the secret shown once, destination and scoping rules at create/update. */
let stack: TestStack;
let ws: Workspace;
let receiver: Receiver;
let dns: DnsServer;
let auth: { Authorization: string };

beforeAll(async () => {
  dns = await startDnsServer();
  receiver = await startReceiver();
  stack = await startStack({ env: { BERTH_WEBHOOK_ALLOW_CIDRS: RECEIVER_ALLOW, BERTH_DNS_SERVERS: dns.address } });
  ws = await seedWorkspace(stack.ds);
  auth = { Authorization: `Bearer ${ws.ownerToken}` };
});
afterAll(async () => {
  if (process.env.DEBUG_LOGS) console.log(stack.logLines.filter((l) => /"level":(40|50)/.test(l)).join('\n'));
  await stack?.close();
  await receiver?.close();
  await dns?.close();
});

const create = (body: Record<string, unknown>, headers = auth) =>
  stack.http.post('/api/v1/webhooks').set(headers).send(body);

describe('webhook management', () => {
  it('AUTH-14 workspace:general is needed for every webhook route, and enough for all of them', async () => {
    const webhookRoutes = routes.filter((r) => r.path.startsWith('/webhooks'));
    expect(webhookRoutes.length).toBeGreaterThanOrEqual(8);
    const general = await tokenWith(stack.ds, ws.uuid, ['workspace:general']);
    const everythingElse = await tokenWith(
      stack.ds,
      ws.uuid,
      PERMISSIONS.filter((p) => p !== 'workspace:general'),
    );
    for (const r of webhookRoutes) {
      const call = (token: string) => {
        const req = stack.http[r.method](pathFor(r)).set('Authorization', `Bearer ${token}`);
        return r.body ? req.send({}) : req;
      };
      const denied = await call(everythingElse);
      expect([r.path, denied.status]).toEqual([r.path, 403]);
      const allowed = await call(general);
      expect([r.path, allowed.status < 500 && allowed.status !== 403 && allowed.status !== 401]).toEqual([
        r.path,
        true,
      ]);
    }
    const made = await create({ url: receiver.url }, { Authorization: `Bearer ${general}` }).expect(201);
    await stack.http
      .get(`/api/v1/webhooks/${made.body.uuid}`)
      .set('Authorization', `Bearer ${everythingElse}`)
      .expect(403);
  });

  it('WH-10 the whsec_ secret (24+ random bytes) is shown once, at creation, stored sealed, and never again', async () => {
    const before = stack.responseBodies.length;
    const res = await create({ url: receiver.url, description: 'once' }).expect(201);
    const secret: string = res.body.secret;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(secret.slice(6), 'base64').length).toBeGreaterThanOrEqual(24);
    expect(res.headers.location).toBe(`/api/v1/webhooks/${res.body.uuid}`);
    const shown = await stack.http.get(`/api/v1/webhooks/${res.body.uuid}`).set(auth).expect(200);
    expect(shown.body).not.toHaveProperty('secret');
    expect(Object.keys(shown.body).sort()).toEqual([
      'app_uuids',
      'consecutive_failures',
      'created_at',
      'description',
      'enabled',
      'events',
      'include_review_apps',
      'updated_at',
      'url',
      'uuid',
    ]);
    const listed = await stack.http.get('/api/v1/webhooks').set(auth).expect(200);
    expect(listed.body.find((w: { uuid: string }) => w.uuid === res.body.uuid)).not.toHaveProperty('secret');
    await stack.http
      .put(`/api/v1/webhooks/${res.body.uuid}`)
      .set(auth)
      .send({ description: 'still hidden' })
      .expect(200);
    // No rotation: there is no route that returns or replaces the secret.
    expect(routes.filter((r) => r.path.startsWith('/webhooks') && /secret|rotate/.test(r.path))).toEqual([]);
    const [row] = await stack.ds.query(`SELECT secret_sealed FROM webhooks WHERE uuid = $1`, [res.body.uuid]);
    expect(row.secret_sealed).not.toContain(secret.slice(6));
    expect(stack.secretBox.open(row.secret_sealed)).toBe(secret);
    const carrying = stack.responseBodies.slice(before).filter((b) => b.includes(secret));
    expect(carrying).toHaveLength(1);
    expect(stack.logLines.some((l) => l.includes(secret))).toBe(false);
  });

  it('WH-10 an Idempotency-Key replay of the create returns the same webhook, and the stored response is sealed', async () => {
    const headers = { ...auth, 'Idempotency-Key': 'wh-create-1' };
    const first = await create({ url: receiver.url }, headers).expect(201);
    const again = await create({ url: receiver.url }, headers).expect(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    const [stored] = await stack.ds.query(`SELECT body::text AS body FROM idempotency_keys WHERE key = 'wh-create-1'`);
    expect(stored.body).not.toContain(first.body.secret.slice(6));
    const [{ count }] = await stack.ds.query(
      `SELECT count(*)::int AS count FROM webhooks WHERE workspace_uuid = $1 AND uuid = $2`,
      [ws.uuid, first.body.uuid],
    );
    expect(count).toBe(1);
  });

  it('creates with defaults: all events, workspace-wide, review apps off, enabled, no failures', async () => {
    const res = await create({ url: receiver.url }).expect(201);
    expect(res.body).toMatchObject({
      url: receiver.url,
      description: '',
      events: [],
      app_uuids: [],
      include_review_apps: false,
      enabled: true,
      consecutive_failures: 0,
    });
  });

  it('WH-18 ping cannot be subscribed to (422); an unknown event type is a 400', async () => {
    const before = await tableCounts(stack.ds);
    const ping = await create({ url: receiver.url, events: ['deploy_started', 'ping'] }).expect(422);
    expect(ping.body.errors).toEqual([{ path: 'body.events', message: 'ping is not subscribable' }]);
    await create({ url: receiver.url, events: ['build_started'] }).expect(400);
    expect(await tableCounts(stack.ds)).toEqual(before);
    const ok = await create({ url: receiver.url, events: ['deploy_ended', 'deploy_ended', 'quota_alert'] }).expect(201);
    expect(ok.body.events).toEqual(['deploy_ended', 'quota_alert']);
    const wh = ok.body.uuid;
    await stack.http
      .put(`/api/v1/webhooks/${wh}`)
      .set(auth)
      .send({ events: ['ping'] })
      .expect(422);
  });

  const REFUSED = [
    'http://127.0.0.1/hook',
    'http://127.0.0.3:8080/',
    'http://127.1/',
    'http://2130706433/',
    'http://0x7f.0.0.1/',
    'http://017700000001/',
    'http://[::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[::ffff:127.0.0.2]/',
    'http://[::ffff:7f00:2]/',
    'http://[64:ff9b::7f00:2]/',
    'http://[2002:7f00:2::]/',
    'http://[::127.0.0.2]/',
    'http://10.0.0.1/',
    'http://172.16.5.4/',
    'http://172.31.255.255/',
    'http://192.168.1.1/',
    'http://169.254.169.254/latest/meta-data/',
    'http://169.254.0.1/',
    'http://100.64.0.1/',
    'http://100.127.255.254/',
    'http://0.0.0.0/',
    'http://0.1.2.3/',
    'http://224.0.0.1/',
    'http://239.255.255.250/',
    'http://255.255.255.255/',
    'http://240.0.0.1/',
    'http://192.0.2.1/',
    'http://198.18.0.1/',
    'http://[::]/',
    'http://[fc00::1]/',
    'http://[fd12:3456::1]/',
    'http://[fe80::1]/',
    'http://[ff02::1]/',
    'http://[::ffff:10.0.0.1]/',
    'http://[::ffff:169.254.169.254]/',
    'http://[64:ff9b::a00:1]/',
    'http://[2002:a00:1::]/',
    'http://[2001::1]/',
    'http://localhost/',
    'http://localhost:8080/hook',
    'http://LOCALHOST./',
    'http://api.localhost/',
    'http://printer.local/',
    'http://metadata.google.internal/',
    'http://svc.cluster.internal/',
    'http://intranet/',
    'ftp://hooks.berth.test/',
    'file:///etc/passwd',
    'javascript:alert(1)',
    'http://user:pass@hooks.berth.test/',
    'not a url',
  ];

  it('WH-19 every private range, loopback form and internal name is refused at create with 422, and nothing is written', async () => {
    dns.set('hooks.berth.test', ['127.0.0.2']);
    const before = await tableCounts(stack.ds);
    const accepted: string[] = [];
    for (const url of REFUSED) {
      const res = await create({ url });
      if (res.status !== 422) accepted.push(`${url} -> ${res.status}`);
      else expect(res.body.errors[0].path).toBe('body.url');
    }
    expect(accepted).toEqual([]);
    expect(await tableCounts(stack.ds)).toEqual(before);
    // The allow-list lets exactly 127.0.0.2 through, in the same run.
    await create({ url: receiver.url }).expect(201);
    await create({ url: 'http://127.0.0.2/other' }).expect(201);
  });

  it('WH-19 a hostname is resolved at create: private answers, mixed answers and names that do not resolve are refused', async () => {
    dns.set('good.berth.test', ['127.0.0.2']);
    dns.set('private.berth.test', ['10.1.2.3']);
    dns.set('metadata.berth.test', ['169.254.169.254']);
    dns.set('mixed.berth.test', ['127.0.0.2', '192.168.0.10']);
    dns.set('v6loop.berth.test', ['::1']);
    dns.set('mapped.berth.test', ['::ffff:127.0.0.2']);
    dns.set('cgnat.berth.test', ['100.64.1.1']);
    await create({ url: `http://good.berth.test:${receiver.port}/hook` }).expect(201);
    for (const host of ['private', 'metadata', 'mixed', 'v6loop', 'mapped', 'cgnat']) {
      const res = await create({ url: `http://${host}.berth.test/hook` }).expect(422);
      expect(res.body.detail).toMatch(/resolves to/);
    }
    const missing = await create({ url: 'http://nowhere.berth.test/hook' }).expect(422);
    expect(missing.body.detail).toMatch(/does not resolve/);
    expect(dns.queries).toContain('private.berth.test');
  });

  it('WH-19 the same rules apply when the url is updated', async () => {
    const wh = (await create({ url: receiver.url }).expect(201)).body.uuid;
    for (const url of ['http://10.0.0.1/', 'http://localhost/', 'http://[::1]/', 'http://169.254.169.254/']) {
      await stack.http.put(`/api/v1/webhooks/${wh}`).set(auth).send({ url }).expect(422);
    }
    const shown = await stack.http.get(`/api/v1/webhooks/${wh}`).set(auth).expect(200);
    expect(shown.body.url).toBe(receiver.url);
  });

  it('WH-03 app_uuids must be apps of the workspace (422); listed apps are kept; empty widens to the whole workspace', async () => {
    const other = await seedWorkspace(stack.ds);
    const foreign = await insertApp(stack.ds, other.uuid, other.resourceUuid);
    const mine = await insertApp(stack.ds, ws.uuid, ws.resourceUuid);
    const before = await tableCounts(stack.ds);
    const res = await create({ url: receiver.url, app_uuids: [mine, foreign] }).expect(422);
    expect(res.body.errors).toEqual([
      { path: 'body.app_uuids', message: `${foreign} is not an app of this workspace` },
    ]);
    await create({ url: receiver.url, app_uuids: ['00000000-0000-4000-8000-000000000001'] }).expect(422);
    expect(await tableCounts(stack.ds)).toEqual(before);
    const scoped = await create({ url: receiver.url, app_uuids: [mine, mine], include_review_apps: true }).expect(201);
    expect(scoped.body).toMatchObject({ app_uuids: [mine], include_review_apps: true });
    await stack.http
      .put(`/api/v1/webhooks/${scoped.body.uuid}`)
      .set(auth)
      .send({ app_uuids: [foreign] })
      .expect(422);
    const widened = await stack.http
      .put(`/api/v1/webhooks/${scoped.body.uuid}`)
      .set(auth)
      .send({ app_uuids: [] })
      .expect(200);
    expect(widened.body.app_uuids).toEqual([]);
  });

  it('ERR-06 include_review_apps and enabled accept true/false and "1"/"0", nothing else', async () => {
    const res = await create({ url: receiver.url, include_review_apps: '1', enabled: '0' }).expect(201);
    expect(res.body).toMatchObject({ include_review_apps: true, enabled: false });
    await create({ url: receiver.url, include_review_apps: 'yes' }).expect(400);
    await create({ url: receiver.url, enabled: 1 }).expect(400);
    const updated = await stack.http
      .put(`/api/v1/webhooks/${res.body.uuid}`)
      .set(auth)
      .send({ include_review_apps: '0' })
      .expect(200);
    expect(updated.body.include_review_apps).toBe(false);
  });

  it('updates only the fields sent; re-enabling with enabled: true resets the failure count', async () => {
    const made = (await create({ url: receiver.url, description: 'a', events: ['deploy_started'] }).expect(201)).body;
    const described = await stack.http
      .put(`/api/v1/webhooks/${made.uuid}`)
      .set(auth)
      .send({ description: 'b' })
      .expect(200);
    expect(described.body).toMatchObject({ description: 'b', events: ['deploy_started'], url: receiver.url });
    expect(Date.parse(described.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(made.updated_at));
    await stack.ds.query(
      `UPDATE webhooks SET enabled = false, consecutive_failures = 3, disabled_at = now() WHERE uuid = $1`,
      [made.uuid],
    );
    const stillDisabled = await stack.http
      .put(`/api/v1/webhooks/${made.uuid}`)
      .set(auth)
      .send({ description: 'c' })
      .expect(200);
    expect(stillDisabled.body).toMatchObject({ enabled: false, consecutive_failures: 3 });
    const reenabled = await stack.http
      .put(`/api/v1/webhooks/${made.uuid}`)
      .set(auth)
      .send({ enabled: true })
      .expect(200);
    expect(reenabled.body).toMatchObject({ enabled: true, consecutive_failures: 0 });
    const disabled = await stack.http
      .put(`/api/v1/webhooks/${made.uuid}`)
      .set(auth)
      .send({ enabled: false })
      .expect(200);
    expect(disabled.body.enabled).toBe(false);
  });

  it('lists newest first with page headers; show and delete answer 404 for another workspace', async () => {
    const other = await seedWorkspace(stack.ds);
    const theirs = (await create({ url: receiver.url }, { Authorization: `Bearer ${other.ownerToken}` }).expect(201))
      .body.uuid;
    const a = (await create({ url: receiver.url, description: 'first' }).expect(201)).body.uuid;
    const b = (await create({ url: receiver.url, description: 'second' }).expect(201)).body.uuid;
    const list = await stack.http.get('/api/v1/webhooks?per_page=2').set(auth).expect(200);
    expect(list.body.map((w: { uuid: string }) => w.uuid)).toEqual([b, a]);
    expect(Number(list.headers['x-total-count'])).toBeGreaterThan(2);
    expect(list.headers.link).toContain('rel="next"');
    await stack.http.get(`/api/v1/webhooks/${theirs}`).set(auth).expect(404);
    await stack.http.delete(`/api/v1/webhooks/${theirs}`).set(auth).expect(404);
    await stack.http.delete(`/api/v1/webhooks/${a}`).set(auth).expect(204);
    await stack.http.get(`/api/v1/webhooks/${a}`).set(auth).expect(404);
    await stack.http.get(`/api/v1/webhooks/${a}/deliveries`).set(auth).expect(404);
  });
});
