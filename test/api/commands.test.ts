import { randomBytes, randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import { createAddon } from '../../api/commands/addons';
import { cloneApp, createApp } from '../../api/commands/apps';
import { auditedWrite, callerOrigin, openTx, type Tx } from '../../api/commands/audited-write';
import { updateWebhook, createWebhook } from '../../api/commands/webhooks';
import type { ApiDeps, Caller } from '../../api/context';
import { callerOfToken } from '../../api/middleware/auth';
import { Problem } from '../../api/problem';
import { SecretBox } from '../../domain/secret-box';
import { loadConfig } from '../../platform/config';
import { createLogger } from '../../platform/logger';
import { Outbox } from '../../platform/outbox';
import { insertApp } from '../support/app-rows';
import { freshDatabase, type TestDatabase } from '../support/db';
import { createResource, memberWith, seedWorkspace, type Workspace } from '../support/fixtures';

/**
 * The commands' rules, called directly (no HTTP) against a fresh database: each runs in a
 * transaction of the test's own, so a refusal is seen as the Problem it throws and nothing
 * of it stays behind; starts are enqueued (outbox rows), never dispatched.
 */
let db: TestDatabase;
let ds: DataSource;
let ws: Workspace;
let owner: Caller;
let deps: ApiDeps;
const unsupported = new Set<string>();

beforeAll(async () => {
  db = await freshDatabase();
  ds = db.ds;
  ws = await seedWorkspace(ds, { plan: { cpu_size: 64, ram_size: 256 * 2 ** 30, disk_size: 4096 * 2 ** 30 } });
  owner = await callerOfToken(ds, ws.ownerToken, null);
  const logger = createLogger('silent');
  deps = {
    dataSource: ds,
    temporal: {} as Client,
    outbox: new Outbox(ds, {} as Client, { taskQueue: 'commands', logger }),
    secretBox: new SecretBox([{ kid: 't', key: randomBytes(32) }]),
    logger,
    config: loadConfig({ BERTH_PROVIDER: 'simulated' }),
    capabilities: {
      engine: (type) => (unsupported.has(type) ? `${type} cannot run on this data plane` : null),
      vpcs: null,
      images: null,
      vpcAttachable: () => null,
      siteConnections: null,
    },
  };
});

afterAll(async () => {
  await db?.drop();
});

/** Runs a command in a transaction of its own, as `caller`. */
function run<T>(caller: Caller, command: (tx: Tx) => Promise<T>): Promise<T> {
  return ds.transaction((m) => command(openTx(m, deps, callerOrigin(caller, { requestId: randomUUID() }))));
}

/** The Problem a command throws, with nothing left behind. */
async function refusal(caller: Caller, command: (tx: Tx) => Promise<unknown>): Promise<Problem> {
  const before = await counts();
  const err = await run(caller, command).then(
    () => null,
    (e: unknown) => e,
  );
  if (!(err instanceof Problem))
    throw new Error(`expected a refusal, got ${err instanceof Error ? err.stack : JSON.stringify(err)}`);
  expect(await counts()).toEqual(before);
  return err;
}

async function counts(): Promise<Record<string, number>> {
  const [row] =
    await ds.query(`SELECT (SELECT count(*) FROM apps)::int AS apps, (SELECT count(*) FROM addons)::int AS addons,
    (SELECT count(*) FROM audit_events)::int AS audit, (SELECT count(*) FROM operations)::int AS operations`);
  return row;
}

const paths = (p: Problem) => (p.errors ?? []).map((e) => e.path);

async function auditOf(resourceUuid: string): Promise<Array<{ action: string; diff: any; actor_uuid: string }>> {
  return ds.query(`SELECT action, diff, actor_uuid FROM audit_events WHERE resource_uuid = $1 ORDER BY created_at`, [
    resourceUuid,
  ]);
}

async function operationsOf(resourceUuid: string): Promise<Array<{ workflow_type: string; args: any[] }>> {
  return ds.query(`SELECT workflow_type, args FROM operations WHERE resource_uuid = $1`, [resourceUuid]);
}

async function project(name: string, restrictedTo?: string): Promise<string> {
  const uuid = randomUUID();
  await ds.query(`INSERT INTO projects (uuid, workspace_uuid, name) VALUES ($1, $2, $3)`, [
    uuid,
    ws.uuid,
    `${name}-${uuid.slice(0, 6)}`,
  ]);
  if (restrictedTo)
    await ds.query(`INSERT INTO project_restrictions (project_uuid, subject_type, user_uuid) VALUES ($1, 'user', $2)`, [
      uuid,
      restrictedTo,
    ]);
  return uuid;
}

const defaults = {
  use_parent_image: false,
  parent_image_auto_sync: false,
  clone_variables: false,
  clone_secret_files: false,
  clone_scaling_settings: false,
  clone_health_checks: false,
  clone_security: false,
};

describe('cloneApp', () => {
  it('CLN-01 writes the copy in state cloning, one app.clone entry naming its source, and the clone saga start', async () => {
    const source = await insertApp(ds, ws, { label: 'shop' });
    const app = await run(owner, (tx) =>
      cloneApp(tx, owner, { ...defaults, sourceUuid: source.uuid, clone_variables: true }),
    );
    expect(app).toMatchObject({
      state: 'cloning',
      label: 'shop (copy)',
      service_name: 'shop',
      resource_uuid: ws.resourceUuid,
      workspace_uuid: ws.uuid,
    });
    expect(app.created_at).toBeInstanceOf(Date);
    const [entry, ...more] = await auditOf(app.uuid);
    expect(more).toEqual([]);
    expect(entry).toMatchObject({
      action: 'app.clone',
      actor_uuid: owner.memberUuid,
      diff: { cloned_from: { to: source.uuid }, state: { to: 'cloning' } },
    });
    const [op] = await operationsOf(app.uuid);
    expect(op).toMatchObject({
      workflow_type: 'appClone',
      args: [
        expect.objectContaining({
          sourceUuid: source.uuid,
          targetUuid: app.uuid,
          flags: expect.objectContaining({ clone_variables: true }),
        }),
      ],
    });
  });

  it('APP-01 a name sent twice gives two apps: the suffix makes each name free', async () => {
    const source = await insertApp(ds, ws, { label: 'twice' });
    const a = await run(owner, (tx) => cloneApp(tx, owner, { ...defaults, sourceUuid: source.uuid, name: 'same' }));
    const b = await run(owner, (tx) => cloneApp(tx, owner, { ...defaults, sourceUuid: source.uuid, name: 'same' }));
    expect(a.name).toMatch(/^same-/);
    expect(b.name).toMatch(/^same-/);
    expect(a.name).not.toBe(b.name);
  });

  it('refuses a source that has nothing settled to copy yet (409)', async () => {
    const source = await insertApp(ds, ws, { state: 'pending' });
    const p = await refusal(owner, (tx) => cloneApp(tx, owner, { ...defaults, sourceUuid: source.uuid }));
    expect(p.status).toBe(409);
  });

  it("CLN-02 refuses add-ons and cron jobs that are not the source app's, each by its path", async () => {
    const source = await insertApp(ds, ws);
    const stranger = randomUUID();
    const p = await refusal(owner, (tx) =>
      cloneApp(tx, owner, {
        ...defaults,
        sourceUuid: source.uuid,
        addons: [{ uuid: stranger, clone_data: false }],
        cronjobs: [stranger],
      }),
    );
    expect(p.status).toBe(422);
    expect(paths(p)).toEqual(['body.addons[0].uuid', 'body.cronjobs[0]']);
  });

  it("refuses a resource without room for the source's quota (422)", async () => {
    const small = await createResource(ds, ws.uuid, ws.regionId, `small-${randomUUID().slice(0, 6)}`, {
      cpu_size: 0.1,
    });
    const source = await insertApp(ds, ws);
    const p = await refusal(owner, (tx) =>
      cloneApp(tx, owner, { ...defaults, sourceUuid: source.uuid, resource_id: small }),
    );
    expect(p.status).toBe(422);
    expect(paths(p)).toContain('body.quota.cpu_size');
  });

  it('CLN-04 refuses a resource assigned to projects when the target project is not one of them', async () => {
    const assigned = await createResource(ds, ws.uuid, ws.regionId, `assigned-${randomUUID().slice(0, 6)}`);
    await ds.query(`INSERT INTO project_resources (project_uuid, resource_uuid) VALUES ($1, $2)`, [
      await project('owning'),
      assigned,
    ]);
    const source = await insertApp(ds, ws);
    const other = await project('other');
    const p = await refusal(owner, (tx) =>
      cloneApp(tx, owner, { ...defaults, sourceUuid: source.uuid, resource_id: assigned, project_id: other }),
    );
    expect(p.status).toBe(422);
    expect(paths(p)).toEqual(['body.project_id']);
  });

  it('PRJ-04 refuses a target project closed to the caller (422) and hides a source in one (404)', async () => {
    const member = await memberWith(ds, ws.uuid, 'developer');
    const caller = await callerOfToken(ds, member.token, null);
    const closed = await project('closed', ws.ownerUserUuid);
    const source = await insertApp(ds, ws);
    const p = await refusal(caller, (tx) =>
      cloneApp(tx, caller, { ...defaults, sourceUuid: source.uuid, project_id: closed }),
    );
    expect(p.status).toBe(422);
    expect(paths(p)).toEqual(['body.project_id']);
    const hidden = await insertApp(ds, ws, { projectId: closed });
    expect((await refusal(caller, (tx) => cloneApp(tx, caller, { ...defaults, sourceUuid: hidden.uuid }))).status).toBe(
      404,
    );
  });
});

/** What the body schema fills in for fields left out. */
const appDefaults = { quota: {}, deployment_config: {} };

describe('createApp', () => {
  it('writes the app in state pending with its quota held, one app.create entry and the lifecycle start', async () => {
    const app = await run(owner, (tx) =>
      createApp(tx, owner, { ...appDefaults, name: 'fresh', resource_id: ws.resourceUuid }),
    );
    expect(app).toMatchObject({ state: 'pending', label: 'fresh', deployment_method: 'git_push', builder: 'auto' });
    expect((await auditOf(app.uuid)).map((e) => e.action)).toEqual(['app.create']);
    expect((await operationsOf(app.uuid)).map((o) => o.workflow_type)).toEqual(['appLifecycle']);
  });

  it('APP-08 basic auth needs both credentials; the password is sealed, never stored plain', async () => {
    const p = await refusal(owner, (tx) =>
      createApp(tx, owner, {
        ...appDefaults,
        name: 'guarded',
        resource_id: ws.resourceUuid,
        basic_auth_enabled: true,
        basic_auth_username: 'u',
      }),
    );
    expect(p.status).toBe(422);
    const app = await run(owner, (tx) =>
      createApp(tx, owner, {
        ...appDefaults,
        name: 'guarded',
        resource_id: ws.resourceUuid,
        basic_auth_enabled: true,
        basic_auth_username: 'u',
        basic_auth_password: 'Pa55word-plain',
      }),
    );
    expect(app.basic_auth_password_sealed).not.toContain('Pa55word-plain');
    expect(deps.secretBox.open(app.basic_auth_password_sealed!)).toBe('Pa55word-plain');
  });

  it('refuses a resource of another workspace (422)', async () => {
    const other = await seedWorkspace(ds);
    const p = await refusal(owner, (tx) =>
      createApp(tx, owner, { ...appDefaults, name: 'elsewhere', resource_id: other.resourceUuid }),
    );
    expect(paths(p)).toEqual(['body.resource_id']);
  });

  it("refuses a container_registry app with the driver's reason when images do not run there (422); runs it where they do", async () => {
    const credential = randomUUID();
    await ds.query(
      `INSERT INTO container_registry_credentials (uuid, workspace_uuid, name, registry, username, token_sealed) VALUES ($1, $2, 'reg', 'generic', 'bot', $3)`,
      [credential, ws.uuid, deps.secretBox.seal('reg-token')],
    );
    const body = {
      ...appDefaults,
      name: 'imaged',
      resource_id: ws.resourceUuid,
      deployment_method: 'container_registry' as const,
      deployment_config: { image: '127.0.0.1:5000/acme/web:1', credential_id: credential },
    };
    const reason = "this machine lacks Debian's podman package";
    deps.capabilities = { ...deps.capabilities!, images: reason };
    try {
      const p = await refusal(owner, (tx) => createApp(tx, owner, body));
      expect([p.status, p.detail]).toEqual([422, reason]);
      expect(paths(p)).toEqual(['body.deployment_method']);
    } finally {
      deps.capabilities = { ...deps.capabilities!, images: null };
    }
    const app = await run(owner, (tx) => createApp(tx, owner, body));
    expect(app.deployment_method).toBe('container_registry');
  });
});

describe('createAddon', () => {
  let appUuid: string;
  beforeAll(async () => {
    appUuid = (await insertApp(ds, ws)).uuid;
  });

  it('writes the add-on in state pending with a sealed password, one addon.create entry and the provisioning start', async () => {
    const addon = await run(owner, (tx) =>
      createAddon(tx, owner, { quota: {}, appUuid, type: 'postgres', label: 'main' }),
    );
    expect(addon).toMatchObject({
      kind: 'addon',
      app_uuid: appUuid,
      type: 'postgres',
      state: 'pending',
      label: 'main',
      backup_enabled: false,
    });
    expect(addon.password_sealed).toEqual(expect.any(String));
    const [entry, ...more] = await auditOf(addon.uuid);
    expect(more).toEqual([]);
    expect(entry).toMatchObject({
      action: 'addon.create',
      diff: { password_sealed: { to: '[redacted]' }, type: { to: 'postgres' } },
    });
    expect((await operationsOf(addon.uuid)).map((o) => o.workflow_type)).toEqual(['addonProvision']);
  });

  it('BKP-03 refuses backup_enabled on the free plan', async () => {
    const free = await createResource(ds, ws.uuid, ws.regionId, `free-${randomUUID().slice(0, 6)}`, {
      plan_type: 'free',
    } as never);
    const onFree = (await insertApp(ds, ws, { resourceUuid: free })).uuid;
    const p = await refusal(owner, (tx) =>
      createAddon(tx, owner, { quota: {}, appUuid: onFree, type: 'postgres', backup_enabled: true }),
    );
    expect(p.status).toBe(422);
    expect(paths(p)).toEqual(['body.backup_enabled']);
  });

  it('refuses backups for an engine without them and public access for storage', async () => {
    expect(
      paths(
        await refusal(owner, (tx) =>
          createAddon(tx, owner, { quota: {}, appUuid, type: 'valkey', backup_enabled: true }),
        ),
      ),
    ).toEqual(['body.backup_enabled']);
    expect(
      paths(
        await refusal(owner, (tx) =>
          createAddon(tx, owner, { quota: {}, appUuid, type: 'storage', public_access: true }),
        ),
      ),
    ).toEqual(['body.public_access']);
  });

  it('ADD-09 / ADD-10 refuses a sub_path with .. and one on exclusive access', async () => {
    expect(
      paths(
        await refusal(owner, (tx) =>
          createAddon(tx, owner, { quota: {}, appUuid, type: 'storage', sub_path: 'a/../b' }),
        ),
      ),
    ).toEqual(['body.sub_path']);
    expect(
      paths(
        await refusal(owner, (tx) =>
          createAddon(tx, owner, { quota: {}, appUuid, type: 'storage', sub_path: 'data', access_mode: 'exclusive' }),
        ),
      ),
    ).toEqual(['body.access_mode']);
  });

  it('refuses an engine the data plane cannot run', async () => {
    unsupported.add('mysql');
    try {
      expect(
        paths(await refusal(owner, (tx) => createAddon(tx, owner, { quota: {}, appUuid, type: 'mysql' }))),
      ).toEqual(['body.type']);
    } finally {
      unsupported.delete('mysql');
    }
  });

  it('PRJ-04 hides an app in a project closed to the caller (404)', async () => {
    const member = await memberWith(ds, ws.uuid, 'developer');
    const caller = await callerOfToken(ds, member.token, null);
    const hidden = (await insertApp(ds, ws, { projectId: await project('closed-addon', ws.ownerUserUuid) })).uuid;
    expect(
      (await refusal(caller, (tx) => createAddon(tx, caller, { quota: {}, appUuid: hidden, type: 'valkey' }))).status,
    ).toBe(404);
  });
});

describe('updateWebhook', () => {
  const url = 'https://93.184.216.34/hooks';
  async function made(): Promise<{ uuid: string; sealed: string }> {
    const { webhook } = await run(owner, (tx) => createWebhook(tx, owner, { url }));
    return { uuid: webhook.uuid, sealed: webhook.secret_sealed };
  }

  it('WH-19 refuses a destination into loopback or private space, and a non-http URL, by body.url', async () => {
    const { uuid } = await made();
    for (const bad of [
      'http://127.0.0.1/x',
      'https://10.1.2.3/x',
      'http://169.254.169.254/latest',
      'https://localhost/x',
      'ftp://93.184.216.34/x',
    ]) {
      const p = await refusal(owner, (tx) => updateWebhook(tx, owner, { uuid, url: bad }));
      expect([p.status, paths(p)]).toEqual([422, ['body.url']]);
    }
    const [row] = await ds.query(`SELECT url FROM webhooks WHERE uuid = $1`, [uuid]);
    expect(row.url).toBe(url);
  });

  it('WH-10 keeps the secret unchanged; the entry shows the fields changed and never the secret', async () => {
    const { uuid, sealed } = await made();
    const updated = await run(owner, (tx) =>
      updateWebhook(tx, owner, { uuid, description: 'moved', url: 'https://93.184.216.35/hooks' }),
    );
    expect(updated).toMatchObject({ description: 'moved', url: 'https://93.184.216.35/hooks', secret_sealed: sealed });
    const [{ secret_sealed }] = await ds.query(`SELECT secret_sealed FROM webhooks WHERE uuid = $1`, [uuid]);
    expect(secret_sealed).toBe(sealed);
    const entries = (await auditOf(uuid)).filter((e) => e.action === 'webhook.update');
    expect(entries).toHaveLength(1);
    expect(entries[0]!.diff).toEqual({
      description: { from: '', to: 'moved' },
      url: { from: url, to: 'https://93.184.216.35/hooks' },
    });
  });

  it('WH-14 disabling stamps disabled_at; re-enabling resets the failure count', async () => {
    const { uuid } = await made();
    await ds.query(`UPDATE webhooks SET consecutive_failures = 2 WHERE uuid = $1`, [uuid]);
    const off = await run(owner, (tx) => updateWebhook(tx, owner, { uuid, enabled: false }));
    expect(off).toMatchObject({ enabled: false, consecutive_failures: 2 });
    expect(off.disabled_at).toBeInstanceOf(Date);
    const on = await run(owner, (tx) => updateWebhook(tx, owner, { uuid, enabled: true }));
    expect(on).toMatchObject({
      enabled: true,
      consecutive_failures: 0,
      disabled_at: null,
      disable_notice_pending: false,
    });
  });

  it('WH-18 refuses ping as a subscription; WH-03 refuses apps of another workspace', async () => {
    const { uuid } = await made();
    expect(paths(await refusal(owner, (tx) => updateWebhook(tx, owner, { uuid, events: ['ping'] as never })))).toEqual([
      'body.events',
    ]);
    expect(paths(await refusal(owner, (tx) => updateWebhook(tx, owner, { uuid, app_uuids: [randomUUID()] })))).toEqual([
      'body.app_uuids',
    ]);
  });

  it('answers 404 for a webhook of another workspace', async () => {
    const { uuid } = await made();
    const other = await seedWorkspace(ds);
    const stranger = await callerOfToken(ds, other.ownerToken, null);
    expect((await refusal(stranger, (tx) => updateWebhook(tx, stranger, { uuid, description: 'x' }))).status).toBe(404);
  });
});

describe('auditedWrite', () => {
  /** The deps with an outbox whose dispatch is recorded (and whose enqueue writes the row as usual). */
  function recording(): { deps: ApiDeps; events: string[] } {
    const events: string[] = [];
    const outbox = Object.create(deps.outbox) as ApiDeps['outbox'];
    outbox.dispatch = async (...ops: unknown[]) => {
      events.push(`dispatch ${ops.length}`);
    };
    return { deps: { ...deps, outbox }, events };
  }

  it('commits the command, then starts what it enqueued, then runs its after-commit steps', async () => {
    const { deps: d, events } = recording();
    const app = await auditedWrite(d, callerOrigin(owner), async (tx) => {
      const made = await createApp(tx, owner, { ...appDefaults, name: 'sequenced', resource_id: ws.resourceUuid });
      tx.afterCommit(async () => {
        const [row] = await ds.query(`SELECT state FROM apps WHERE uuid = $1`, [made.uuid]);
        events.push(`after ${row?.state}`);
      });
      return made;
    });
    expect(events).toEqual(['dispatch 1', 'after pending']);
    expect((await auditOf(app.uuid)).map((e) => e.action)).toEqual(['app.create']);
  });

  it('a refusal rolls back the write, its audit entry and its starts; nothing is dispatched or run after', async () => {
    const { deps: d, events } = recording();
    const before = await counts();
    await expect(
      auditedWrite(d, callerOrigin(owner), async (tx) => {
        await createApp(tx, owner, { ...appDefaults, name: 'rolled-back', resource_id: ws.resourceUuid });
        tx.afterCommit(async () => {
          events.push('after');
        });
        throw new Problem(409, 'refused after the write');
      }),
    ).rejects.toThrow('refused after the write');
    expect(events).toEqual([]);
    expect(await counts()).toEqual(before);
  });
});
