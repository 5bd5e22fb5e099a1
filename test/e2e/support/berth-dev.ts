import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { systemAppsDir } from '../../../platform/local-layout';
import { ROOT, testEnv } from '../../support/env';
import { freePort } from '../../support/ports';

export { freePort };

export interface BerthDev {
  proc: ChildProcess;
  dataDir: string;
  apiUrl: string;
  ingressUrl: string;
  ingressPort: number;
  /** The ingress's HTTPS port, and the root certificate of the local CA it serves `*.localhost` names with. */
  ingressTlsPort: number;
  localCaFile: string;
  /**
   * GET of an app's public URL as a browser makes it: HTTPS to the URL's port on loopback
   * (`*.localhost` names are loopback), SNI and Host the URL's, the local CA trusted.
   */
  viaPublicUrl(publicUrl: string, pathname?: string): request.Test;
  token: string;
  env: NodeJS.ProcessEnv;
  /** Everything the process printed (stdout and stderr). */
  output(): string;
  /** Runs `berth <args>` (the operator CLI) against this stack's data. */
  cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }>;
  /** `git push` of the working copy's HEAD to an app's git_url (main), the token as the password; answers what the pusher's terminal shows. */
  push(dir: string, gitUrl: string): string;
  stop(): Promise<void>;
}

/**
 * `berth dev` (what `npm start` runs) as a user runs it, in a data directory of its own and
 * on free ports, with the given extra environment. Resolves once the start banner is out.
 */
export async function startBerthDev(extraEnv: NodeJS.ProcessEnv = {}): Promise<BerthDev> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'berth-dev-'));
  const [api, pg, temporal, ui, s3, ingress, ingressTls] = await Promise.all([
    freePort(),
    freePort(),
    freePort(),
    freePort(),
    freePort(),
    freePort(),
    freePort(),
  ]);
  const token = `brt_${randomBytes(32).toString('base64url')}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    BERTH_DATA_DIR: dataDir,
    PORT: String(api),
    BERTH_PG_PORT: String(pg),
    BERTH_TEMPORAL_PORT: String(temporal),
    BERTH_TEMPORAL_UI_PORT: String(ui),
    BERTH_S3_PORT: String(s3),
    BERTH_INGRESS_PORT: String(ingress),
    BERTH_INGRESS_TLS_PORT: String(ingressTls),
    BERTH_BOOTSTRAP_TOKEN: token,
    TEMPORAL_CLI: testEnv('cli'),
    LOG_LEVEL: 'warn',
    ...extraEnv,
  };
  delete env.DATABASE_URL;
  delete env.TEMPORAL_ADDRESS;
  const proc = spawn(process.execPath, [path.join(ROOT, 'bin', 'berth.js'), 'dev'], {
    env,
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  proc.stderr!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`berth dev did not start in 180 s:\n${out.slice(-3000)}`)),
      180_000,
    );
    const check = () => {
      if (out.includes('Ctrl-C stops everything')) {
        clearTimeout(timer);
        resolve();
      }
    };
    proc.stdout!.on('data', check);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`berth dev exited (${code}) before it started:\n${out.slice(-3000)}`));
    });
  });
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise((resolve) => proc.once('exit', resolve));
      proc.kill('SIGINT');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(systemAppsDir(dataDir), { recursive: true, force: true });
  };
  return {
    proc,
    dataDir,
    token,
    env,
    apiUrl: `http://127.0.0.1:${api}`,
    ingressUrl: `http://127.0.0.1:${ingress}`,
    ingressPort: ingress,
    ingressTlsPort: ingressTls,
    localCaFile: path.join(dataDir, 'tls', 'local-ca.crt'),
    viaPublicUrl(publicUrl, pathname = '/') {
      const url = new URL(publicUrl);
      return request(`https://127.0.0.1:${url.port || 443}`)
        .get(pathname)
        .set('Host', url.host)
        .ca(readFileSync(path.join(dataDir, 'tls', 'local-ca.crt')));
    },
    output: () => out,
    cli: (args) =>
      new Promise((resolve) => {
        const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'berth.js'), ...args], { env, cwd: ROOT });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => {
          stdout += d.toString();
        });
        child.stderr.on('data', (d: Buffer) => {
          stderr += d.toString();
        });
        child.on('exit', (code) => resolve({ code, stdout, stderr }));
      }),
    push(dir, gitUrl) {
      const url = new URL(gitUrl);
      url.username = 'dev';
      url.password = token;
      // git writes its progress and the remote's lines to stderr
      const run = spawnSync('git', ['-C', dir, 'push', '--progress', url.toString(), 'HEAD:main'], {
        env: { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1', HOME: dir },
        encoding: 'utf8',
        timeout: 600_000,
      });
      return `${run.stdout ?? ''}${run.stderr ?? ''}`;
    },
    stop,
  };
}
