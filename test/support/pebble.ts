import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from './ports';

/**
 * Debian's `pebble` (a small ACME server for tests, RFC 8555) and its `pebble-challtestsrv`
 * as pebble's DNS: every name resolves to 127.0.0.1 unless a test says otherwise. Pebble
 * validates HTTP-01 at `httpPort` (the ingress's plain HTTP port under test) without its
 * usual random sleeps (PEBBLE_VA_NOSLEEP) and never rejects a valid nonce on purpose.
 */
export interface Pebble {
  directoryUrl: string;
  /** Pebble's own HTTPS certificate (made here: Debian's package ships none), for BERTH_ACME_CA_FILE. */
  tlsCaFile: string;
  /** The root pebble issues under (a new one every start), PEM. */
  issuingRoot(): Promise<string>;
  /** Makes `host` resolve to `ip` (A record) in pebble's DNS, or back to the default 127.0.0.1. */
  setAddress(host: string, ip: string | null): Promise<void>;
  close(): Promise<void>;
}

/** Whether Debian's pebble is installed (`.ci/run` installs it). */
export function hasPebble(): boolean {
  try {
    execFileSync('sh', ['-c', 'command -v pebble && command -v pebble-challtestsrv'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function waitForLine(child: ChildProcess, pattern: RegExp, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${what} did not start:\n${out}`)), 20_000);
    const on = (d: Buffer) => {
      out += d.toString();
      if (pattern.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', on);
    child.stderr!.on('data', on);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code}):\n${out}`));
    });
  });
}

export async function startPebble(options: { httpPort: number }): Promise<Pebble> {
  const dir = mkdtempSync(path.join(tmpdir(), 'berth-pebble-'));
  const [acmePort, managementPort, dnsPort, challManagementPort] = await Promise.all([
    freePort(),
    freePort(),
    freePort(),
    freePort(),
  ]);
  const cert = path.join(dir, 'pebble.crt');
  const key = path.join(dir, 'pebble.key');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=pebble',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  const config = path.join(dir, 'pebble.json');
  writeFileSync(
    config,
    JSON.stringify({
      pebble: {
        listenAddress: `127.0.0.1:${acmePort}`,
        managementListenAddress: `127.0.0.1:${managementPort}`,
        certificate: cert,
        privateKey: key,
        httpPort: options.httpPort,
        tlsPort: 5001,
        ocspResponderURL: '',
        externalAccountBindingRequired: false,
      },
    }),
  );
  const dns = spawn(
    'pebble-challtestsrv',
    [
      '-defaultIPv4',
      '127.0.0.1',
      '-defaultIPv6',
      '',
      '-dns01',
      `127.0.0.1:${dnsPort}`,
      '-management',
      `127.0.0.1:${challManagementPort}`,
      '-http01',
      '',
      '-https01',
      '',
      '-tlsalpn01',
      '',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  await waitForLine(dns, /Starting management server/, 'pebble-challtestsrv');
  const pebble = spawn('pebble', ['-config', config, '-dnsserver', `127.0.0.1:${dnsPort}`], {
    env: { ...process.env, PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  await waitForLine(pebble, /Listening on/, 'pebble');
  const agent = new Agent({ ca: readFileSync(cert) });

  const management = (body: object, route: string) =>
    new Promise<void>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port: challManagementPort, path: route, method: 'POST' }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`${route}: ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end(JSON.stringify(body));
    });

  return {
    directoryUrl: `https://127.0.0.1:${acmePort}/dir`,
    tlsCaFile: cert,
    issuingRoot: () =>
      new Promise((resolve, reject) => {
        request({ host: '127.0.0.1', port: managementPort, path: '/roots/0', agent }, (res) => {
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () => resolve(body));
        })
          .on('error', reject)
          .end();
      }),
    setAddress: (host, ip) =>
      ip ? management({ host: `${host}.`, addresses: [ip] }, '/add-a') : management({ host: `${host}.` }, '/clear-a'),
    async close() {
      for (const child of [pebble, dns]) {
        if (child.exitCode === null) {
          const exited = new Promise((resolve) => child.once('exit', resolve));
          child.kill('SIGTERM');
          await exited;
        }
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
