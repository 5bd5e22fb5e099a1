import { existsSync, readFileSync } from 'node:fs';
import { Client as TemporalClient, Connection } from '@temporalio/client';
import { Client as PgClient } from 'pg';
import request from 'supertest';
import { UNHEALTHY_STATES } from '../../domain/data';
import { startBerthDev, type BerthDev } from '../../test/e2e/support/berth-dev';
import { appFixture, localRepo } from '../../test/support/git';
import { postmasterPid } from '../../test/support/local-data';
import { eventually } from '../../test/support/stack';
import { check, type Outcome } from '../common';

/** The pids (on this machine) of the app's node server processes, read from its memory cgroup. */
function appServerPids(appUuid: string): number[] {
  const group = `/sys/fs/cgroup/memory/berth/app-${appUuid}/cgroup.procs`;
  const pids = existsSync(group) ? readFileSync(group, 'utf8').split('\n').filter(Boolean).map(Number) : [];
  return pids.filter((p) => {
    try {
      return /server\.js/.test(readFileSync(`/proc/${p}/cmdline`, 'utf8'));
    } catch {
      return false;
    }
  });
}

/** `berth dev` on the local driver, with an API client and a Temporal client on its server. */
export interface LocalPlane {
  berth: BerthDev;
  api: ReturnType<typeof request>;
  auth: { Authorization: string };
  /** The standard-plan resource every app of the scenario goes on (free-plan apps sleep). */
  resource: string;
  temporal: TemporalClient;
  close(): Promise<void>;
}

export async function startLocalPlane(): Promise<LocalPlane> {
  const berth = await startBerthDev();
  try {
    const api = request(berth.apiUrl);
    const auth = { Authorization: `Bearer ${berth.token}` };
    const resources = (await api.get('/api/v1/resources').set(auth).expect(200)).body as { uuid: string }[];
    const connection = await Connection.connect({ address: `127.0.0.1:${berth.env.BERTH_TEMPORAL_PORT}` });
    return {
      berth,
      api,
      auth,
      resource: resources[0]!.uuid,
      temporal: new TemporalClient({ connection }),
      async close() {
        await connection.close();
        await berth.stop();
      },
    };
  } catch (err) {
    await berth.stop();
    throw err;
  }
}

const seconds = (ms: number) => (ms / 1000).toFixed(1);

/** GET through the ingress with the app's public host name. */
function viaIngress(plane: LocalPlane, app: { public_url: string }, pathname: string) {
  return plane.berth.viaPublicUrl(app.public_url, pathname).timeout(5000);
}

/**
 * An app pushed with git (the e2e-web fixture) serving through the ingress; its server
 * process (found in the app's cgroup) is SIGKILLed. The supervisor starts it again: the
 * ingress answers 200 from a new process, the app is running, and the app log says it restarted.
 */
export async function appProcessKilled(plane: LocalPlane): Promise<string> {
  const { api, auth } = plane;
  const created = (
    await api
      .post('/api/v1/apps')
      .set(auth)
      .send({ name: 'chaos-web', resource_id: plane.resource, deployment_method: 'git_push' })
      .expect(201)
  ).body;
  const source = localRepo(appFixture('e2e-web'));
  try {
    const pushed = plane.berth.push(source.dir, created.git_url);
    check(/deployed: /.test(pushed), `git push did not deploy: ${pushed.slice(-500)}`);
  } finally {
    source.dispose();
  }
  const app = (await api.get(`/api/v1/apps/${created.uuid}`).set(auth).expect(200)).body;
  // which process answers (its pid is its sandbox's own), and its pid on this machine (from the app's cgroup)
  const bootOf = async () => {
    const r = await viaIngress(plane, app, '/boot').catch(() => null);
    return r?.status === 200 ? r.text.trim() : null;
  };
  const boot = await eventually(bootOf, { what: 'the app answering through the ingress', timeoutMs: 60_000 });
  const [pid] = appServerPids(app.uuid);
  check(pid !== undefined, "the app's server process is not in its cgroup");

  const killedAt = Date.now();
  process.kill(pid!, 'SIGKILL');
  let failedAnswers = 0;
  await eventually(
    async () => {
      const b = await bootOf();
      if (b === null) failedAnswers++;
      return b !== null && b !== boot ? b : undefined;
    },
    { what: 'the ingress answering 200 from a new process', intervalMs: 100, timeoutMs: 60_000 },
  );
  const recoveredMs = Date.now() - killedAt;

  await eventually(
    async () => (await api.get(`/api/v1/apps/${app.uuid}`).set(auth).expect(200)).body.state === 'running',
    { what: 'the app running', timeoutMs: 30_000 },
  );
  const log = (await api.get(`/api/v1/apps/${app.uuid}/logs`).query({ tail: 200 }).set(auth).expect(200)).body as {
    source: string;
    message: string;
  }[];
  const restart = log.find(
    (l) =>
      l.source === 'berth' && /^web\.1 (was killed by SIGKILL|exited with code 137), restarting in /.test(l.message),
  );
  check(
    restart !== undefined,
    `no restart in the app log: ${log
      .filter((l) => l.source === 'berth')
      .map((l) => l.message)
      .join(' | ')}`,
  );
  check(
    log.some((l) => l.source === 'berth' && l.message.startsWith(`web.1 started (pid `)),
    'no new start in the app log',
  );
  return `app pid ${pid} SIGKILLed: ingress 200 again after ${seconds(recoveredMs)} s from a new process (${failedAnswers} non-200 answers meanwhile), app running, "${restart!.message}" in its log`;
}

/**
 * A PostgreSQL add-on (a real server) with a row; its postmaster is SIGKILLed. The health
 * sweep (the Temporal Schedule, triggered here rather than awaited each minute) records it
 * unhealthy, the local driver starts the server again, and the next sweep records it
 * healthy; the row is still there.
 */
export async function addonServerKilled(plane: LocalPlane): Promise<string> {
  const { api, auth } = plane;
  const app = (
    await api
      .post('/api/v1/apps')
      .set(auth)
      .send({ name: 'chaos-db-owner', resource_id: plane.resource, deployment_method: 'git_push' })
      .expect(201)
  ).body;
  const created = (
    await api.post(`/api/v1/apps/${app.uuid}/addons`).set(auth).send({ type: 'postgres', label: 'chaos' }).expect(201)
  ).body;
  const addonState = async () =>
    (await api.get(`/api/v1/apps/${app.uuid}/addons/${created.uuid}`).set(auth).expect(200)).body;
  const addon = await eventually(
    async () => {
      const a = await addonState();
      return a.state === 'healthy' ? a : undefined;
    },
    { what: 'the add-on healthy', timeoutMs: 120_000 },
  );
  const url = addon.connection_details.internal.connection_url as string;

  const client = new PgClient({ connectionString: url });
  await client.connect();
  client.on('error', () => undefined); // its backend goes with the server
  await client.query('CREATE TABLE chaos (v int)');
  await client.query('INSERT INTO chaos VALUES (42)');
  const pid = await postmasterPid(client);

  const schedule = await healthSchedule(plane.temporal);
  const killedAt = Date.now();
  process.kill(pid, 'SIGKILL');
  await client.end().catch(() => undefined);
  // The states the sweeps moved the add-on to since the kill, from its audit entries (every
  // move is recorded): on a loaded machine one poll can miss a `failing` that the next sweep
  // already turned back into `healthy`.
  const movedToSinceKill = async (): Promise<string[]> => {
    const entries = (
      await api.get(`/api/v1/audit_events?resource_uuid=${created.uuid}&per_page=100`).set(auth).expect(200)
    ).body as { created_at: string; diff: { state?: { to?: string } } | null }[];
    return entries
      .filter((e) => Date.parse(e.created_at) >= killedAt && e.diff?.state?.to)
      .reverse()
      .map((e) => e.diff!.state!.to!);
  };
  const sweepUntil = (states: readonly string[], what: string) =>
    eventually(
      async () => {
        const seen = (await movedToSinceKill()).find((state) => states.includes(state));
        if (seen) return seen;
        if ((await schedule.describe()).info.runningActions.length === 0) await schedule.trigger();
        return undefined;
      },
      { what, intervalMs: 500, timeoutMs: 90_000 },
    );
  const unhealthy = await sweepUntil(UNHEALTHY_STATES, 'the add-on unhealthy');
  const unhealthyMs = Date.now() - killedAt;
  await sweepUntil(['healthy'], 'the add-on healthy again');
  const healthyMs = Date.now() - killedAt;

  const again = new PgClient({ connectionString: url });
  await again.connect();
  try {
    const rows = (await again.query('SELECT v FROM chaos')).rows.map((r) => r.v as number);
    check(rows.length === 1 && rows[0] === 42, `the add-on's rows after the restart: ${JSON.stringify(rows)}`);
    const newPid = await postmasterPid(again);
    check(newPid !== pid, 'the same postmaster serves after the kill');
    return `add-on postgres pid ${pid} SIGKILLed: ${unhealthy} after ${seconds(unhealthyMs)} s, healthy after ${seconds(healthyMs)} s (new pid ${newPid}, its row kept; health sweep triggered)`;
  } finally {
    await again.end();
  }
}

/** The add-on health sweep's schedule on this server (`addon-health/<task queue>`, made by the first provisioning). */
async function healthSchedule(temporal: TemporalClient) {
  for await (const s of temporal.schedule.list()) {
    if (s.scheduleId.startsWith('addon-health/')) return temporal.schedule.getHandle(s.scheduleId);
  }
  throw new Error('no add-on health schedule on the Temporal server');
}

/**
 * The local data plane (issue 16): `berth dev` on the local driver, as a user runs it.
 * Kill an app's process: it is restarted and the ingress recovers; kill an add-on's
 * server: the add-on goes unhealthy, then healthy again.
 */
export async function localDataPlane(): Promise<Outcome> {
  const plane = await startLocalPlane();
  try {
    const app = await appProcessKilled(plane);
    const addon = await addonServerKilled(plane);
    return { figure: `${app}; ${addon}` };
  } finally {
    await plane.close();
  }
}
