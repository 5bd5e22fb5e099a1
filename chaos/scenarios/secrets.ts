import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { openLocalCa } from '../../activities/provider/local/ingress/tls/local-ca';
import { acmeEnv, certificateUntil, insertVerifiedDomain, startAcmeIngress } from '../../test/support/acme';
import { freePort } from '../../test/support/ports';
import { hasPebble, startPebble, type Pebble } from '../../test/support/pebble';
import type { DataSource } from 'typeorm';
import { createApp } from '../../test/support/apps';
import { eventually, expectNoSecretLeaks, type TestStack } from '../../test/support/stack';
import { activeVpc } from '../../test/support/vpc';
import type { Receiver } from '../../test/support/webhooks';
import { allArrived, check, deliveriesCompleted, emitEvents, subscribe, type Outcome } from '../common';

/** The env a stack needs for this scenario (site connections take a public IPv4 of the pool). */
export const SECRETS_ENV = { BERTH_PUBLIC_IPV4_POOLS: 'local=192.0.2.10/31' };

/**
 * Debian's pebble for the scenario's certificates (absent when pebble is not installed: the
 * scenario then leaves ACME out): start it before the stack, whose env then points at it.
 */
export interface SecretsAcme {
  pebble: Pebble;
  httpPort: number;
  env: NodeJS.ProcessEnv;
  close(): Promise<void>;
}

export async function startSecretsAcme(): Promise<SecretsAcme | null> {
  if (!hasPebble()) return null;
  const httpPort = await freePort();
  const pebble = await startPebble({ httpPort });
  return { pebble, httpPort, env: acmeEnv(pebble), close: () => pebble.close() };
}

/** A PEM's base64 body on one line, the part that would show if a key leaked. */
function pemBody(pem: string): string {
  return pem
    .split('\n')
    .filter((l) => l && !l.startsWith('-----'))
    .join('');
}

/**
 * Keys of certificates: one uploaded through the API (its private key the secret), and,
 * with pebble, the platform's ACME account key and a custom domain's certificate key that
 * its workflow obtained (read back by opening their sealed columns). Their base64 bodies.
 */
async function certificateKeys(
  stack: TestStack,
  app: { uuid: string; name: string },
  auth: Record<string, string>,
  workspaceUuid: string,
  acme: SecretsAcme | null,
): Promise<string[]> {
  const own = await openLocalCa(mkdtempSync(path.join(tmpdir(), 'berth-secrets-ca-')), stack.activityDeps.secretBox);
  const uploaded = await own.issue(`chaos-${randomBytes(3).toString('hex')}.example.test`);
  const res = await stack.http
    .post(`/api/v1/apps/${app.uuid}/tls_certificates`)
    .set(auth)
    .send({ certificate: uploaded.cert, private_key: uploaded.key });
  check(res.status === 201, `TLS certificate upload: ${res.status} ${res.text}`);
  if (!acme) return [pemBody(uploaded.key)];
  const ingress = await startAcmeIngress({
    ds: stack.ds,
    deps: stack.activityDeps,
    pebble: acme.pebble,
    httpPort: acme.httpPort,
    app,
  });
  try {
    const domain = await insertVerifiedDomain(stack.ds, workspaceUuid, app);
    const op = await stack.ds.transaction((m) =>
      stack.outbox.enqueue(m, {
        operation: 'domain-certificate',
        workflow: 'domainCertificate',
        workspaceUuid,
        resourceUuid: domain.uuid,
        args: [{ domainUuid: domain.uuid }],
      }),
    );
    await stack.outbox.dispatch(op);
    const issued = await certificateUntil(stack.ds, domain.uuid, (r) => r.state === 'issued', 'no certificate');
    await stack.http.get(`/api/v1/apps/${app.uuid}/domains/${domain.uuid}`).set(auth);
    const [account] = await stack.ds.query('SELECT account_key_sealed FROM acme_accounts');
    const box = stack.activityDeps.secretBox;
    await stack.temporal.workflow.getHandle(op.workflowId).terminate('scenario done');
    return [
      pemBody(uploaded.key),
      pemBody(box.open(issued.private_key_sealed)),
      pemBody(box.open(account.account_key_sealed)),
    ];
  } finally {
    await ingress.close();
  }
}

const plain = (what: string) => `${what.replace(/-/g, '_')}_${randomBytes(12).toString('hex')}`;

/** Every payload in a history decoded as text (payload data are bytes), so a secret in one shows. */
function historyText(value: unknown): string {
  const parts: string[] = [];
  const walk = (v: unknown) => {
    if (v instanceof Uint8Array) parts.push(Buffer.from(v).toString('utf8'));
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
    else if (typeof v === 'string') parts.push(v);
  };
  walk(value);
  return parts.join('\n');
}

/** Columns of every table that hold text (text, varchar, json, jsonb, text[]) and contain one of the values. */
async function plainInDatabase(
  ds: DataSource,
  values: readonly string[],
): Promise<{ hits: string[]; columns: number }> {
  const columns: Array<{ table_name: string; column_name: string }> = await ds.query(
    `SELECT c.table_name, c.column_name FROM information_schema.columns c
       JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
      WHERE c.table_schema = 'public' AND (c.data_type IN ('text', 'character varying', 'json', 'jsonb') OR c.udt_name IN ('_text', '_varchar'))`,
  );
  const hits: string[] = [];
  for (const { table_name: t, column_name: c } of columns) {
    for (const v of values) {
      const [{ n }] = await ds.query(`SELECT count(*)::int AS n FROM "${t}" WHERE position($1 in "${c}"::text) > 0`, [
        v,
      ]);
      if (n > 0) hits.push(`${t}.${c} holds ${v.slice(0, 8)}…`);
    }
  }
  return { hits, columns: columns.length };
}

/**
 * A full run of every secret-bearing resource created through the API (webhook signing
 * secret, registry credential token, app basic auth password, app and project secret
 * variables, zero-trust and mesh gateway credentials, site-to-site PSKs), events
 * delivered: no secret in any API response (the webhook secret only in its one creation
 * answer), log line, or Temporal history of the stack's task queue; the database holds
 * none of them in plain text.
 */
export async function secretsNeverLeave(
  stack: TestStack,
  receiver: Receiver,
  acme: SecretsAcme | null = null,
): Promise<Outcome> {
  const { ws, auth, secret: webhookSecret, webhookUuid } = await subscribe(stack, receiver);
  const secrets = {
    registry: plain('registry-token'),
    basicAuth: plain('basic-auth-password'),
    appVariable: plain('app-secret-variable'),
    projectVariable: plain('project-secret-variable'),
    clientSecret: plain('zt-client-secret'),
    authKey: plain('tskey-auth'),
    psk1: plain('psk-one'),
    psk2: plain('psk-two'),
  };
  const ok = async (res: Promise<{ status: number; text: string; body: any }>, what: string) => {
    const r = await res;
    check(r.status >= 200 && r.status < 300, `${what}: ${r.status} ${r.text}`);
    return r.body;
  };
  const credential = await ok(
    stack.http.post('/api/v1/container_registry_credentials').set(auth).send({
      name: 'chaos',
      registry: 'generic',
      registry_hostname: 'registry.example.test',
      username: 'deploy',
      token: secrets.registry,
    }),
    'registry credential',
  );
  const project = await ok(
    stack.http
      .post('/api/v1/projects')
      .set(auth)
      .send({ name: 'chaos-secrets', resource_ids: [ws.resourceUuid] }),
    'project',
  );
  const app = await createApp(stack, ws.ownerToken, {
    name: 'chaos-secrets',
    resource_id: ws.resourceUuid,
    project_id: project.uuid,
    basic_auth_enabled: true,
    basic_auth_username: 'admin-user',
    basic_auth_password: secrets.basicAuth,
    deployment_method: 'container_registry',
    deployment_config: { image: 'registry.example.test/acme/web:1.0', credential_id: credential.uuid },
  });
  await ok(
    stack.http
      .put(`/api/v1/apps/${app.uuid}/variables`)
      .set(auth)
      .send({ variables: [{ key: 'API_KEY', value: secrets.appVariable, secret: true }] }),
    'app variables',
  );
  await ok(
    stack.http
      .put(`/api/v1/projects/${project.uuid}/variables`)
      .set(auth)
      .send({ variables: [{ key: 'DB_PASSWORD', value: secrets.projectVariable, secret: true }] }),
    'project variables',
  );
  const vpc = await activeVpc(stack, ws);
  const zeroTrust = await ok(
    stack.http.post(`/api/v1/vpcs/${vpc.uuid}/vpn_gateways`).set(auth).send({
      kind: 'zero_trust',
      organization: 'acme-org',
      client_id: 'client-1234',
      client_secret: secrets.clientSecret,
    }),
    'zero-trust gateway',
  );
  await ok(
    stack.http
      .post(`/api/v1/vpcs/${vpc.uuid}/vpn_gateways`)
      .set(auth)
      .send({ kind: 'mesh', auth_key: secrets.authKey }),
    'mesh gateway',
  );
  await eventually(
    async () =>
      (await stack.http.get(`/api/v1/vpcs/${vpc.uuid}/vpn_gateways`).set(auth)).body.some(
        (g: { uuid: string; status: string }) => g.uuid === zeroTrust.uuid && g.status === 'active',
      ),
    { what: 'the zero-trust gateway active', timeoutMs: 60_000 },
  );
  await ok(
    stack.http
      .post(`/api/v1/vpcs/${vpc.uuid}/site_connections`)
      .set(auth)
      .send({
        name: 'office',
        gateway_uuid: zeroTrust.uuid,
        remote_address: '198.51.100.7',
        remote_cidrs: ['192.168.100.0/24'],
        tunnels: [{ pre_shared_key: secrets.psk1 }, { pre_shared_key: secrets.psk2 }],
      }),
    'site connection',
  );
  const keys = await certificateKeys(stack, app, auth, ws.uuid, acme);
  const ids = await emitEvents(stack, ws.uuid, 10);
  await allArrived(receiver, ids, 60_000);
  await deliveriesCompleted(stack, ids.length, 60_000);
  // Let the workflows the creations started settle before reading their histories.
  await new Promise((r) => setTimeout(r, 3_000));
  for (const path of [
    '/api/v1/apps',
    `/api/v1/apps/${app.uuid}`,
    `/api/v1/apps/${app.uuid}/variables`,
    `/api/v1/projects/${project.uuid}/variables`,
    '/api/v1/container_registry_credentials',
    `/api/v1/vpcs/${vpc.uuid}/vpn_gateways`,
    `/api/v1/vpcs/${vpc.uuid}/site_connections`,
    '/api/v1/webhooks',
    `/api/v1/apps/${app.uuid}/tls_certificates`,
    `/api/v1/apps/${app.uuid}/domains`,
  ]) {
    await ok(stack.http.get(path).set(auth), `GET ${path}`);
  }

  const webhookKey = webhookSecret.slice('whsec_'.length);
  const values = [...Object.values(secrets), webhookSecret, webhookKey, ...keys];
  expectNoSecretLeaks(stack, values, { allowInResponses: [webhookSecret, webhookKey] });
  const answersWithWebhookSecret = stack.responseBodies.filter((b) => b.includes(webhookKey)).length;
  check(answersWithWebhookSecret === 1, `the webhook secret appears in ${answersWithWebhookSecret} responses`);

  let histories = 0;
  let decoded = 0;
  const leaks: string[] = [];
  for await (const wf of stack.temporal.workflow.list({ query: `TaskQueue = '${stack.taskQueue}'` })) {
    const text = historyText(await stack.temporal.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory());
    histories++;
    if (text.includes(webhookUuid)) decoded++; // control: payloads are read as text
    for (const v of values) if (text.includes(v)) leaks.push(`${wf.workflowId} history holds ${v.slice(0, 8)}…`);
  }
  check(histories >= ids.length + 3, `only ${histories} workflow histories on the task queue`);
  check(decoded >= ids.length, `only ${decoded} histories show the webhook uuid: the scan does not read payloads`);
  check(leaks.length === 0, leaks.join('; '));
  const db = await plainInDatabase(stack.ds, values);
  check(db.hits.length === 0, db.hits.join('; '));
  const control = await plainInDatabase(stack.ds, ['registry.example.test']);
  check(control.hits.length > 0, 'the database scan finds nothing, not even a plain value it should');
  return {
    figure:
      `${values.length} secret values (${Object.keys(secrets).length + 1 + keys.length} kinds; certificate keys: ${keys.length}) created through the API: 0 in ${stack.responseBodies.length} responses ` +
      `(webhook secret only in its creation answer), 0 in ${stack.logLines.length} log lines, 0 in ${histories} workflow histories, 0 in ${db.columns} text columns`,
  };
}
