import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { request as httpRequest } from 'node:http';
import supertest from 'supertest';
import { startSimulatedIngress } from '../../activities/provider/simulated/ingress';
import { createApp as createKoaApp } from '../../api/app';
import type { TestStack } from './stack';
import { timeSkipping } from './temporal';

export const auth = (token: string) => ({ Authorization: `Bearer ${token}` });

/** Creates an app through the API (201) and returns its body. */
export async function createApp(stack: TestStack, token: string, body: Record<string, unknown>): Promise<any> {
  const res = await stack.http.post('/api/v1/apps').set(auth(token)).send(body);
  if (res.status !== 201) throw new Error(`POST /apps answered ${res.status}: ${res.text}`);
  return res.body;
}

/** A real git repository in a temp dir (file:// URL) with one commit per message on `branch`. */
export function gitRepository(
  messages: string[],
  branch = 'main',
): { url: string; dir: string; head: string; commit(message: string): string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'berth-repo-'));
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.test', ...args], {
      cwd: dir,
      encoding: 'utf8',
    }).trim();
  git('init', '-q', '-b', branch);
  const commit = (message: string) => {
    writeFileSync(path.join(dir, 'README'), `${message}\n`, { flag: 'a' });
    git('add', 'README');
    git('commit', '-q', '-m', message);
    return git('rev-parse', 'HEAD');
  };
  let head = '';
  for (const m of messages) head = commit(m);
  return { url: `file://${dir}`, dir, head, commit };
}

/** A self-signed certificate and its key (real openssl). */
export function selfSigned(cn: string): { certificate: string; privateKey: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'berth-tls-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      path.join(dir, 'key.pem'),
      '-out',
      path.join(dir, 'cert.pem'),
      '-days',
      '30',
      '-subj',
      `/CN=${cn}`,
      '-addext',
      `subjectAltName=DNS:${cn},DNS:www.${cn}`,
    ],
    { stdio: 'ignore' },
  );
  const { readFileSync } = require('node:fs') as typeof import('node:fs');
  return {
    certificate: readFileSync(path.join(dir, 'cert.pem'), 'utf8'),
    privateKey: readFileSync(path.join(dir, 'key.pem'), 'utf8'),
  };
}

/** A plan roomy enough for the many apps a test file creates. */
export const BIG_PLAN = { cpu_size: 64, ram_size: 256 * 2 ** 30, disk_size: 4096 * 2 ** 30 };

/**
 * Apps on the time-skipping server: the API with its outbox and client pointed at the
 * test server (so routes start workflows there), the simulated ingress signalling it,
 * and a log of every app state change (a trigger), to prove sequences of states.
 */
export async function appWorkflowHarness(stack: TestStack) {
  const ts = await timeSkipping(stack.activityDeps);
  const api = supertest(createKoaApp({ ...stack.apiDeps, outbox: ts.outbox, temporal: ts.client }).callback());
  const ingress = await startSimulatedIngress({
    dataSource: stack.ds,
    temporal: ts.client,
    secretBox: stack.secretBox,
    logger: stack.logger,
    port: 0,
    trafficSignalIntervalMs: 0,
  });
  await stack.ds.query(
    `CREATE TABLE test_app_states (id serial PRIMARY KEY, app_uuid uuid, state text, at timestamptz DEFAULT clock_timestamp())`,
  );
  await stack.ds.query(`CREATE FUNCTION test_log_app_state() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.state IS DISTINCT FROM OLD.state OR TG_OP = 'INSERT' THEN INSERT INTO test_app_states (app_uuid, state) VALUES (NEW.uuid, NEW.state); END IF; RETURN NEW; END $$`);
  await stack.ds.query(
    `CREATE TRIGGER test_log_app_state AFTER INSERT OR UPDATE OF state ON apps FOR EACH ROW EXECUTE FUNCTION test_log_app_state()`,
  );
  return {
    ts,
    api,
    ingress,
    /** Every state the app has read, in order. */
    async states(appUuid: string): Promise<string[]> {
      return (await stack.ds.query(`SELECT state FROM test_app_states WHERE app_uuid = $1 ORDER BY id`, [appUuid])).map(
        (r: { state: string }) => r.state,
      );
    },
    async state(appUuid: string): Promise<string | undefined> {
      return (await stack.ds.query(`SELECT state FROM apps WHERE uuid = $1`, [appUuid]))[0]?.state;
    },
    async events(appUuid: string): Promise<Array<{ type: string; data: Record<string, any> }>> {
      return (
        await stack.ds.query(`SELECT type, payload FROM events WHERE app_uuid = $1 ORDER BY created_at, uuid`, [
          appUuid,
        ])
      ).map((r: { type: string; payload: { data: Record<string, any> } }) => ({ type: r.type, data: r.payload.data }));
    },
    /** A request to the app through the simulated ingress, by Host. */
    request(
      appName: string,
      headers: Record<string, string> = {},
    ): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
      return new Promise((resolve, reject) => {
        const req = httpRequest(
          {
            host: '127.0.0.1',
            port: ingress.port,
            path: '/',
            headers: { host: `${appName}.local.berth.localhost`, ...headers },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () =>
              resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString('utf8'), headers: res.headers }),
            );
          },
        );
        req.on('error', reject);
        req.end();
      });
    },
    /** Operator endpoint of the simulated ingress. */
    report(appUuid: string, kind: 'health' | 'status', body: Record<string, unknown>): Promise<number> {
      return new Promise((resolve, reject) => {
        const data = JSON.stringify(body);
        const req = httpRequest(
          {
            host: '127.0.0.1',
            port: ingress.port,
            method: 'POST',
            path: `/__simulated/apps/${appUuid}/${kind}`,
            headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode!));
          },
        );
        req.on('error', reject);
        req.end(data);
      });
    },
    async close() {
      await ingress.close();
      await ts.close();
    },
  };
}
