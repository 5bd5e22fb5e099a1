import { execFile } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { X509Certificate } from 'node:crypto';
import { BerthOperation, BerthResource } from '../../domain/search-attributes';
import {
  acmeEnv,
  certificateUntil,
  insertVerifiedDomain,
  startAcmeIngress,
  startCertificateWorkflow,
  type AcmeIngress,
} from '../support/acme';
import { insertApp, type AppRow } from '../support/app-rows';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { freePort } from '../support/ports';
import { hasPebble, startPebble, type Pebble } from '../support/pebble';
import { startStack, type TestStack } from '../support/stack';
import { timeSkipping, type TimeSkipping } from '../support/temporal';

/**
 * The certificate workflow against Debian's pebble: HTTP-01 answered by a real local
 * ingress, the certificate served by SNI, renewal by the workflow's timer (time skipped),
 * and failures recorded on the domain and retried.
 */
const describeWithPebble = hasPebble() ? describe : describe.skip;
// real ACME orders against pebble, and a worker that drains them at each test's end: on a
// machine loaded by the rest of the suite this has gone past the default 120 s once
jest.setTimeout(240_000);

let pebble: Pebble;
let stack: TestStack;
let ts: TimeSkipping;
let ws: Workspace;
let app: AppRow;
let rig: AcmeIngress;

/** curl as a user runs it: the custom domain resolved to the ingress, pebble's root trusted. */
function curlHttps(name: string): Promise<{ status: number; body: string }> {
  const port = rig.ingress.tlsPort;
  return new Promise((resolve, reject) => {
    execFile(
      'curl',
      [
        '-sS',
        '--max-time',
        '30',
        '-w',
        '\n%{http_code}',
        '--cacert',
        rig.pebbleRootFile,
        '--resolve',
        `${name}:${port}:127.0.0.1`,
        `https://${name}:${port}/`,
      ],
      (err, stdout, stderr) => {
        if (err) return reject(new Error(stderr || err.message));
        const cut = stdout.lastIndexOf('\n');
        resolve({ status: Number(stdout.slice(cut + 1)), body: stdout.slice(0, cut) });
      },
    );
  });
}

/** Rejects after `ms` (a call that stalls on a loaded machine fails the step instead of the whole test hanging). */
const within = <T>(p: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([
    p,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms).unref()),
  ]);

/**
 * Skips the test server's clock by `ms`. Its sleep call has stalled on a loaded machine
 * (support/temporal.ts); a stalled call is given up after 30 s and the clock asked where it
 * is: the rest is skipped again, a few times at most.
 */
async function skipTime(ms: number): Promise<void> {
  const target = (await within(ts.env.currentTimeMs(), 30_000, 'the test clock')) + ms;
  for (let attempt = 0; attempt < 4; attempt++) {
    const now = await within(ts.env.currentTimeMs(), 30_000, 'the test clock');
    if (now >= target) return;
    await within(ts.env.sleep(target - now), 30_000, 'skipping time').catch(() => {});
  }
  if ((await ts.env.currentTimeMs()) < target) throw new Error(`the test clock did not reach ${target}`);
}

const until = (domainUuid: string, done: (row: Record<string, any>) => boolean, what: string) =>
  certificateUntil(stack.ds, domainUuid, done, what);
const verifiedDomain = () => insertVerifiedDomain(stack.ds, ws.uuid, app);
const startCertificate = (domainUuid: string) => startCertificateWorkflow(stack.ds, ts, ws, domainUuid);

beforeAll(async () => {
  if (!hasPebble()) return;
  const httpPort = await freePort();
  pebble = await startPebble({ httpPort });
  stack = await startStack({ env: acmeEnv(pebble) });
  ts = await timeSkipping(stack.activityDeps);
  ws = await seedWorkspace(stack.ds);
  app = await insertApp(stack.ds, ws);
  rig = await startAcmeIngress({ ds: stack.ds, deps: stack.activityDeps, pebble, httpPort, app });
}, 120_000);

afterAll(async () => {
  await ts?.close();
  await rig?.close();
  await stack?.close();
  await pebble?.close();
});

describeWithPebble('domainCertificate workflow (ACME against pebble)', () => {
  // first: the renewal test skips years of server time, after which a fresh certificate's dates lie in the server's past
  it('an ACME failure shows on the domain with the reason, the app keeps serving over HTTP, and the order is retried until it succeeds', async () => {
    const domain = await verifiedDomain();
    // pebble's validation goes where nothing answers
    await pebble.setAddress(domain.name, '127.0.0.2');
    await ts.withWorker(async () => {
      const handle = await startCertificate(domain.uuid);
      const failed = await until(domain.uuid, (r) => r.state === 'failed', 'the failure was not recorded');
      expect(failed.last_error).toMatch(/127\.0\.0\.2|connection refused|Connection refused|connect/i);
      expect(failed.attempts).toBe(1);
      const shown = await stack.http
        .get(`/api/v1/apps/${app.uuid}/domains/${domain.uuid}`)
        .set('authorization', `Bearer ${ws.ownerToken}`);
      expect(shown.body.certificate).toMatchObject({ state: 'failed', attempts: 1, last_error: failed.last_error });
      // no certificate yet: plain HTTP serves the app (no redirect to an HTTPS that cannot answer)
      const plain = await new Promise<number>((resolve, reject) =>
        httpRequest(`${rig.ingress.url}/`, { headers: { host: domain.name } }, (res) => {
          res.resume();
          resolve(res.statusCode!);
        })
          .on('error', reject)
          .end(),
      );
      expect(plain).toBe(200);
      // the reason goes away; the retry (after a minute's backoff, skipped) succeeds
      await pebble.setAddress(domain.name, null);
      await skipTime(61_000);
      const issued = await until(domain.uuid, (r) => r.state === 'issued', 'the retry did not succeed');
      expect(issued.attempts).toBe(0);
      expect(issued.last_error).toBeNull();
      await handle.terminate('test done');
    });
  });

  it('a verified custom domain gets its certificate by HTTP-01; curl --cacert <pebble root> reaches the app by that name; its timer renews it for real', async () => {
    const domain = await verifiedDomain();
    await ts.withWorker(async () => {
      const handle = await startCertificate(domain.uuid);
      const first = await until(domain.uuid, (r) => r.state === 'issued', 'no certificate was issued');
      expect(first).toMatchObject({ name: domain.name, attempts: 0, last_error: null });
      expect(first.issuer).toMatch(/Pebble/);
      expect(first.private_key_sealed).not.toContain('PRIVATE KEY');
      expect(new X509Certificate(first.certificate_pem).subjectAltName).toBe(`DNS:${domain.name}`);
      // renewal at two thirds of the lifetime
      const life = first.not_after.getTime() - first.not_before.getTime();
      expect(first.renew_at.getTime() - first.not_before.getTime()).toBeCloseTo((life * 2) / 3, -4);

      await new Promise((r) => setTimeout(r, 200)); // the ingress's certificate cache (100 ms)
      expect(await curlHttps(domain.name)).toEqual({ status: 200, body: 'served by the app' });
      expect(await handle.query('state')).toBe('waiting');
      const description = await handle.describe();
      expect(description.typedSearchAttributes.get(BerthResource)).toBe(domain.uuid);
      expect(description.typedSearchAttributes.get(BerthOperation)).toBe('domain-certificate');
      // the history holds the renewal time, never the key or the certificate
      const history = JSON.stringify(await handle.fetchHistory());
      expect(history).not.toContain('PRIVATE KEY');
      expect(history).not.toContain(first.private_key_sealed);
      expect(history).not.toContain('BEGIN CERTIFICATE');

      // the timer: skip to just past the renewal time (no further: time skipped while the real
      // order runs would time out its heartbeat); the next run renews for real
      await skipTime(first.renew_at.getTime() - (await ts.env.currentTimeMs()) + 1000);
      const renewed = await until(
        domain.uuid,
        (r) => r.state === 'issued' && r.certificate_pem !== first.certificate_pem,
        'the certificate was not renewed',
      );
      expect(new X509Certificate(renewed.certificate_pem).serialNumber).not.toBe(
        new X509Certificate(first.certificate_pem).serialNumber,
      );
      await new Promise((r) => setTimeout(r, 200));
      expect((await curlHttps(domain.name)).status).toBe(200);
      await handle.terminate('test done');
    });
  });
});
