import { REDACTED } from '../../domain/audit';
import { auth, BIG_PLAN, createApp } from '../support/apps';
import { memberWith, seedWorkspace, type Workspace } from '../support/fixtures';
import { expectNoSecretLeaks, startStack, type TestStack } from '../support/stack';
import { RECEIVER_ALLOW, startDnsServer, startReceiver, type DnsServer, type Receiver } from '../support/webhooks';
import { auditEntries } from '../support/audit';

/** The audit log over other areas: app, VPC and webhook updates each record one entry in their transaction. */
let stack: TestStack;
let ws: Workspace;
let receiver: Receiver;
let dns: DnsServer;

beforeAll(async () => {
  dns = await startDnsServer();
  receiver = await startReceiver();
  stack = await startStack({ env: { BERTH_WEBHOOK_ALLOW_CIDRS: RECEIVER_ALLOW, BERTH_DNS_SERVERS: dns.address } });
  ws = await seedWorkspace(stack.ds, { plan: BIG_PLAN });
});
afterAll(async () => {
  await stack?.close();
  await receiver?.close();
  await dns?.close();
});

const auditOf = (resourceUuid: string, action?: string) => auditEntries(stack, ws.ownerToken, resourceUuid, action);

describe('audit entries of app, VPC and webhook updates', () => {
  it('an app update records one app.update entry with the actor and the field diff', async () => {
    const app = await createApp(stack, ws.ownerToken, {
      name: 'audited',
      label: 'Before',
      resource_id: ws.resourceUuid,
    });
    const admin = await memberWith(stack.ds, ws.uuid, 'admin');
    await stack.http
      .patch(`/api/v1/apps/${app.uuid}`)
      .set(auth(admin.token))
      .send({ label: 'After', maintenance: true })
      .expect(200);
    const entries = await auditOf(app.uuid, 'app.update');
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      actor: { type: 'member', uuid: admin.memberUuid },
      source: 'api',
      resource_type: 'app',
      resource_uuid: app.uuid,
      diff: { label: { from: 'Before', to: 'After' }, maintenance: { from: false, to: true } },
    });
    expect(Object.keys(entries[0]!.diff).sort()).toEqual(['label', 'maintenance']);
  });

  it('a basic-auth password change shows as redacted, never the password or its sealed form', async () => {
    const first = 'first-Pa55word-xyz';
    const second = 'second-Pa55word-xyz';
    const app = await createApp(stack, ws.ownerToken, {
      name: 'locked',
      resource_id: ws.resourceUuid,
      basic_auth_enabled: true,
      basic_auth_username: 'admin-user',
      basic_auth_password: first,
    });
    const [{ sealed: sealedBefore }] = await stack.ds.query(
      `SELECT basic_auth_password_sealed AS sealed FROM apps WHERE uuid = $1`,
      [app.uuid],
    );
    await stack.http
      .put(`/api/v1/apps/${app.uuid}/security`)
      .set(auth(ws.ownerToken))
      .send({ basic_auth_username: 'admin-user', basic_auth_password: second })
      .expect(200);
    const [{ sealed: sealedAfter }] = await stack.ds.query(
      `SELECT basic_auth_password_sealed AS sealed FROM apps WHERE uuid = $1`,
      [app.uuid],
    );
    const entries = await auditOf(app.uuid, 'app.update_security');
    expect(entries).toHaveLength(1);
    expect(entries[0]!.diff).toEqual({ basic_auth_password_sealed: { from: REDACTED, to: REDACTED } });
    const text = JSON.stringify(
      await stack.ds.query(`SELECT diff FROM audit_events WHERE resource_uuid = $1`, [app.uuid]),
    );
    for (const s of [first, second, sealedBefore, sealedAfter]) expect(text).not.toContain(s);
    expectNoSecretLeaks(stack, [second, sealedBefore, sealedAfter]);
  });

  it('a VPC update records one vpc.update entry with the label diff', async () => {
    const vpc = await stack.http
      .post('/api/v1/vpcs')
      .set(auth(ws.ownerToken))
      .send({ region_id: ws.regionId, label: 'old label' })
      .expect(201);
    await stack.http
      .put(`/api/v1/vpcs/${vpc.body.uuid}`)
      .set(auth(ws.ownerToken))
      .send({ label: 'new label' })
      .expect(200);
    const entries = await auditOf(vpc.body.uuid, 'vpc.update');
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      actor: { type: 'member' },
      resource_type: 'vpc',
      diff: { label: { from: 'old label', to: 'new label' } },
    });
  });

  it('a webhook url change shows from and to; the sealed secret never appears', async () => {
    const made = await stack.http
      .post('/api/v1/webhooks')
      .set(auth(ws.ownerToken))
      .send({ url: receiver.url })
      .expect(201);
    const moved = `${receiver.url.replace(/\/$/, '')}/moved`;
    await stack.http
      .put(`/api/v1/webhooks/${made.body.uuid}`)
      .set(auth(ws.ownerToken))
      .send({ url: moved, description: 'moved' })
      .expect(200);
    const entries = await auditOf(made.body.uuid, 'webhook.update');
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      resource_type: 'webhook',
      diff: { url: { from: receiver.url, to: moved }, description: { to: 'moved' } },
    });
    expect(entries[0]!.diff).not.toHaveProperty('secret_sealed');
    const [{ sealed }] = await stack.ds.query(`SELECT secret_sealed AS sealed FROM webhooks WHERE uuid = $1`, [
      made.body.uuid,
    ]);
    expect(JSON.stringify(await stack.ds.query(`SELECT diff FROM audit_events`))).not.toContain(sealed);
    expectNoSecretLeaks(stack, [sealed], { allowInResponses: [made.body.secret] });
  });

  it('a rolled-back update records nothing (app and VPC)', async () => {
    const w = await seedWorkspace(stack.ds, { plan: BIG_PLAN });
    const app = await createApp(stack, w.ownerToken, { name: 'rollback', resource_id: w.resourceUuid });
    const a = await stack.http.post('/api/v1/vpcs').set(auth(w.ownerToken)).send({ region_id: w.regionId }).expect(201);
    const b = await stack.http
      .post('/api/v1/vpcs')
      .set(auth(w.ownerToken))
      .send({ region_id: w.regionId, name: 'second', cidr_v4: '10.77.0.0/16' });
    if (b.status !== 201) throw new Error(b.text);
    await stack.http.put(`/api/v1/vpcs/${a.body.uuid}`).set(auth(w.ownerToken)).send({ is_default: true }).expect(200);
    const count = async () =>
      (
        await stack.ds.query(
          `SELECT count(*)::int AS n FROM audit_events WHERE workspace_uuid = $1 AND action LIKE '%.update%'`,
          [w.uuid],
        )
      )[0].n;
    const before = await count();
    // each is refused after its row was read and locked inside the transaction, which rolls back
    expect(
      (
        await stack.http
          .put(`/api/v1/apps/${app.uuid}/security`)
          .set(auth(w.ownerToken))
          .send({ basic_auth_enabled: true })
      ).status,
    ).toBe(422);
    expect(
      (
        await stack.http
          .put(`/api/v1/apps/${app.uuid}`)
          .set(auth(w.ownerToken))
          .send({ label: 'x', quota: { cpu_size: 64, replicas: 100 } })
      ).status,
    ).toBeGreaterThanOrEqual(400);
    expect(
      (
        await stack.http
          .put(`/api/v1/vpcs/${b.body.uuid}`)
          .set(auth(w.ownerToken))
          .send({ label: 'nope', is_default: true })
      ).status,
    ).toBe(422);
    expect(await count()).toBe(before);
    const [row] = await stack.ds.query(`SELECT label FROM vpcs WHERE uuid = $1`, [b.body.uuid]);
    expect(row.label).not.toBe('nope');
  });
});
