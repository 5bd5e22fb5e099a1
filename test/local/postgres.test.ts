import { readFileSync } from 'node:fs';
import { Client } from 'pg';
import { eventually } from '../support/stack';
import { localDataHarness, postmasterPid, specFor, type LocalDataHarness } from '../support/local-data';
import type { ClusterSpec } from '../../platform/drivers/data';
import { processAlive } from '../../activities/provider/local/data/engine';
import { clusterOwner } from '../../activities/provider/local/data/commands';
import { detectIsolation, oomKills } from '../../activities/provider/local/sandbox/isolation';

/** A `pg` client on the endpoint the driver reports, with the spec's generated credentials. */
async function connect(h: LocalDataHarness, spec: ClusterSpec, id = spec.id): Promise<Client> {
  const { endpoint } = await h.driver.status(id);
  const c = new Client({
    host: endpoint!.host,
    port: endpoint!.port,
    user: spec.username!,
    password: spec.password!,
    database: spec.database!,
  });
  await c.connect();
  return c;
}

async function values(c: Client): Promise<number[]> {
  return (await c.query('SELECT v FROM t ORDER BY v')).rows.map((r) => r.v as number);
}

describe('local driver: PostgreSQL clusters', () => {
  let h: LocalDataHarness;
  beforeAll(async () => {
    h = await localDataHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it('ADD-03 a postgres add-on is a real cluster: its connection details work with pg; public access and stop/start move the server', async () => {
    const spec = specFor('postgres');
    await h.driver.provision(spec);
    expect(await h.driver.status(spec.id)).toMatchObject({
      status: 'healthy',
      ready: true,
      endpoint: { host: '127.0.0.1' },
    });
    const c = await connect(h, spec);
    await c.query('CREATE TABLE t (v int)');
    await c.query('INSERT INTO t VALUES (1), (2)');
    expect(await values(c)).toEqual([1, 2]);
    expect((await c.query('SELECT current_user AS u')).rows[0].u).toBe(spec.username);
    expect((await c.query('SELECT rolsuper FROM pg_roles WHERE rolname = current_user')).rows[0].rolsuper).toBe(false);
    if (process.getuid?.() === 0) {
      // the server runs as an unprivileged uid of its own, not as root
      const pid = (await c.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
      expect(uid).toBeGreaterThanOrEqual(200_000);
    }
    await c.end();
    const bad = new Client({
      ...(await h.driver.status(spec.id)).endpoint,
      user: spec.username!,
      password: 'wrong-password',
      database: spec.database!,
    });
    await expect(bad.connect()).rejects.toThrow(/password authentication failed/);

    // public access: also listens on the configured host (127.0.0.2), and no longer once off
    const onPublic = async () => {
      const ep = (await h.driver.status(spec.id)).endpoint!;
      const pc = new Client({
        host: ep.public_host,
        port: ep.port,
        user: spec.username!,
        password: spec.password!,
        database: spec.database!,
      });
      await pc.connect();
      await pc.end();
    };
    await expect(onPublic()).rejects.toThrow(/ECONNREFUSED/);
    await h.driver.setPublicAccess(spec.id, true);
    await onPublic();
    await h.driver.setPublicAccess(spec.id, false);
    await expect(onPublic()).rejects.toThrow(/ECONNREFUSED/);

    await h.driver.setRunning(spec.id, false);
    expect(await h.driver.status(spec.id)).toMatchObject({ status: 'stopped' });
    await expect(connect(h, spec)).rejects.toThrow();
    await h.driver.setRunning(spec.id, true);
    const again = await connect(h, spec);
    expect(await values(again)).toEqual([1, 2]);
    await again.end();

    // Berth stops: its servers stop; a new driver on the same state starts them again
    const ep = (await h.driver.status(spec.id)).endpoint!;
    const direct = () =>
      new Client({
        host: ep.host,
        port: ep.port,
        user: spec.username!,
        password: spec.password!,
        database: spec.database!,
      });
    await h.driver.close();
    await expect(direct().connect()).rejects.toThrow(/ECONNREFUSED/);
    const next = h.reopen();
    await next.resume();
    const back = direct();
    await back.connect();
    expect(await values(back)).toEqual([1, 2]);
    await back.end();
    await next.close();
  });

  it('ADD-04 a killed server: the next check reports it failing and starts it again, the one after finds it healthy with its data', async () => {
    const spec = specFor('postgres');
    await h.driver.provision(spec);
    const c = await connect(h, spec);
    await c.query('CREATE TABLE t (v int)');
    await c.query('INSERT INTO t VALUES (1)');
    const pid = await postmasterPid(c);
    c.on('error', () => undefined); // its backend goes with the server
    process.kill(pid, 'SIGKILL');
    await c.end().catch(() => undefined);
    await eventually(async () => !processAlive(pid), { timeoutMs: 10_000, what: 'the server dead' });
    expect(await h.driver.status(spec.id)).toMatchObject({ status: 'failing', ready: true });
    expect(h.logLines.join('\n')).toMatch(/local database server died: starting it again/);
    // a first start may have found the old server's backends still attached to its shared
    // memory: a later check starts it then
    await eventually(async () => (await h.driver.status(spec.id)).status === 'healthy', {
      timeoutMs: 30_000,
      what: 'healthy again',
    });
    const again = await connect(h, spec);
    expect(await values(again)).toEqual([1]);
    expect(await postmasterPid(again)).not.toBe(pid);
    await again.end();
    await h.driver.delete(spec.id);
  });

  it('ADD-06 a read replica streams from its primary (a row within 10 s) and refuses writes', async () => {
    const spec = specFor('postgres');
    await h.driver.provision(spec);
    const p = await connect(h, spec);
    await p.query('CREATE TABLE t (v int)');
    await p.query('INSERT INTO t VALUES (1)');
    const replica = { ...spec, id: `${spec.id}-r` };
    await h.driver.createReplica({ ...replica, primaryId: spec.id });
    expect(await h.driver.status(replica.id)).toMatchObject({ status: 'healthy', ready: true });
    const r = await connect(h, spec, replica.id);
    expect(await values(r)).toEqual([1]);
    await p.query('INSERT INTO t VALUES (2)');
    const started = Date.now();
    await eventually(async () => (await values(r)).includes(2), { timeoutMs: 10_000, what: 'the row on the replica' });
    expect(Date.now() - started).toBeLessThan(10_000);
    await expect(r.query('INSERT INTO t VALUES (3)')).rejects.toThrow(/read-only transaction/);
    await r.end();
    await p.end();
    await h.driver.delete(spec.id);
    await expect(h.driver.status(replica.id)).rejects.toThrow(/no such cluster/);
  });

  // Only where the ram quota is a cgroup limit (root, cgroup v1): elsewhere nothing can kill the server.
  (detectIsolation().cgroups ? it : it.skip)(
    'ADD-06 a read replica whose ram_size is below what PostgreSQL needs (ram_size 512, meant as MB) still starts in its cgroup: healthy, the primary rows, read-only',
    async () => {
      const spec = specFor('postgres');
      await h.driver.provision(spec);
      const p = await connect(h, spec);
      await p.query('CREATE TABLE t (v int)');
      await p.query('INSERT INTO t VALUES (1), (2)');
      const replica = { ...spec, id: `${spec.id}-r`, ramSize: 512 };
      // before the fix: the kernel killed the server in its 4 MiB cgroup before it logged a
      // line (pg_ctl: could not start server, an empty server.log), at every try
      await h.driver.createReplica({ ...replica, primaryId: spec.id });
      expect(await h.driver.status(replica.id)).toMatchObject({ status: 'healthy', ready: true });
      const r = await connect(h, spec, replica.id);
      expect(await values(r)).toEqual([1, 2]);
      await p.query('INSERT INTO t VALUES (3)');
      await eventually(async () => (await values(r)).includes(3), {
        timeoutMs: 10_000,
        what: 'the row on the replica',
      });
      await expect(r.query('INSERT INTO t VALUES (4)')).rejects.toThrow(/read-only transaction/);
      expect(oomKills(detectIsolation(), clusterOwner(replica.id))).toBe(0);
      await r.end();
      await p.end();
      await h.driver.delete(spec.id);
    },
  );

  it('BKP-04..07 backups: point-in-time restore into a new cluster, the latest in place, a backup by name; reset drops data and backups', async () => {
    const spec = specFor('postgres', { backups: true });
    await h.driver.provision(spec);
    const first = (await h.driver.listBackups(spec.id))[0]!;
    expect(first).toBeDefined();
    let c = await connect(h, spec);
    await c.query('CREATE TABLE t (v int)');
    const empty = await h.driver.backupNow(spec.id); // holds the empty table
    await c.query('INSERT INTO t VALUES (1)');
    await c.query('INSERT INTO t VALUES (2)');
    await new Promise((r) => setTimeout(r, 1100));
    const T = new Date();
    await new Promise((r) => setTimeout(r, 1100));
    await c.query('INSERT INTO t VALUES (3)');
    await c.end();
    const window = await h.driver.recoveryWindow(spec.id);
    expect(window!.earliest.getTime()).toBeLessThan(T.getTime());

    const copy = specFor('postgres', { username: spec.username, database: spec.database });
    const res = await h.driver.restore({
      sourceId: spec.id,
      targetId: copy.id,
      from: { targetTime: T },
      targetSpec: copy,
    });
    expect(res.restored).toBe(T.toISOString());
    const n = await connect(h, copy);
    expect(await values(n)).toEqual([1, 2]);
    await n.end();

    await h.driver.restore({ sourceId: spec.id, targetId: spec.id, from: { latest: true } });
    c = await connect(h, spec);
    expect(await values(c)).toEqual([1, 2, 3]);
    await c.end();

    await h.driver.restore({ sourceId: spec.id, targetId: spec.id, from: { backupName: empty.name } });
    c = await connect(h, spec);
    expect(await values(c)).toEqual([]);
    await c.end();

    await h.driver.reset(spec.id);
    c = await connect(h, spec);
    await expect(c.query('SELECT * FROM t')).rejects.toThrow(/relation "t" does not exist/);
    await c.end();
    expect(await h.driver.listBackups(spec.id)).toEqual([]);
    expect(await h.driver.recoveryWindow(spec.id)).toBeNull();
  });
});
