import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestStack } from './stack';

export const auth = (token: string) => ({ Authorization: `Bearer ${token}` });

/** Creates an app through the API (201) and returns its body. */
export async function createApp(stack: TestStack, token: string, body: Record<string, unknown>): Promise<any> {
  const res = await stack.http.post('/api/v1/apps').set(auth(token)).send(body);
  if (res.status !== 201) throw new Error(`POST /apps answered ${res.status}: ${res.text}`);
  return res.body;
}

/** A real git repository in a temp dir (file:// URL) with one commit per message on `branch`. */
export function gitRepository(messages: string[], branch = 'main'): { url: string; dir: string; head: string; commit(message: string): string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'berth-repo-'));
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.test', ...args], { cwd: dir, encoding: 'utf8' }).trim();
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
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem'),
    '-days', '30', '-subj', `/CN=${cn}`, '-addext', `subjectAltName=DNS:${cn},DNS:www.${cn}`], { stdio: 'ignore' });
  const { readFileSync } = require('node:fs') as typeof import('node:fs');
  return { certificate: readFileSync(path.join(dir, 'cert.pem'), 'utf8'), privateKey: readFileSync(path.join(dir, 'key.pem'), 'utf8') };
}

/** A plan roomy enough for the many apps a test file creates. */
export const BIG_PLAN = { cpu_size: 64, ram_size: 256 * 2 ** 30, disk_size: 4096 * 2 ** 30 };
