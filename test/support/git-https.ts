import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface PrivateGitServer {
  /** https://127.0.0.1:<port>/<name> for a repository under projectRoot. */
  url(name: string): string;
  caFile: string;
  /** Authorization headers the server received. */
  seenAuthorizations: string[];
  close(): Promise<void>;
}

/**
 * A private Git host on loopback: HTTPS with a self-signed certificate (its CA file is
 * handed to git), HTTP Basic auth with one username and token, and the real
 * `git http-backend` (CGI) serving the bare repositories under projectRoot.
 */
export async function startPrivateGitServer(
  projectRoot: string,
  user: { username: string; token: string },
): Promise<PrivateGitServer> {
  const certDir = mkdtempSync(path.join(tmpdir(), 'berth-tls-'));
  const key = path.join(certDir, 'key.pem');
  const cert = path.join(certDir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  const execPath = execFileSync('git', ['--exec-path'], { encoding: 'utf8' }).trim();
  const expected = `Basic ${Buffer.from(`${user.username}:${user.token}`).toString('base64')}`;
  const seen: string[] = [];
  const server: Server = createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
    const authorization = req.headers.authorization ?? '';
    if (authorization) seen.push(authorization);
    if (authorization !== expected) {
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"' }).end('authentication required');
      return;
    }
    const url = new URL(req.url ?? '/', 'https://127.0.0.1');
    const cgi = spawn(path.join(execPath, 'git-http-backend'), [], {
      env: {
        PATH: process.env.PATH,
        GIT_PROJECT_ROOT: projectRoot,
        GIT_HTTP_EXPORT_ALL: '1',
        REQUEST_METHOD: req.method ?? 'GET',
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.slice(1),
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        REMOTE_USER: user.username,
        REMOTE_ADDR: '127.0.0.1',
        GIT_HTTP_MAX_REQUEST_BUFFER: '10M',
        ...(req.headers['git-protocol'] ? { GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
      },
    });
    req.pipe(cgi.stdin);
    let head = Buffer.alloc(0);
    let headersDone = false;
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (headersDone) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end === -1) return;
      headersDone = true;
      let status = 200;
      for (const line of head.subarray(0, end).toString('utf8').split('\r\n')) {
        const i = line.indexOf(':');
        const name = line.slice(0, i).trim();
        const value = line.slice(i + 1).trim();
        if (name.toLowerCase() === 'status') status = Number(value.split(' ')[0]);
        else res.setHeader(name, value);
      }
      res.writeHead(status);
      res.write(head.subarray(end + 4));
    });
    cgi.on('close', () => res.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (name) => `https://127.0.0.1:${port}/${name}`,
    caFile: cert,
    seenAuthorizations: seen,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(certDir, { recursive: true, force: true });
    },
  };
}
