import { createReadStream } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { contentType } from '../../../../domain/static-sites';
import { sendText } from './pages';

/** The path part of a request URL, percent-decoded; null when it cannot be decoded or holds a NUL. */
export function requestPath(url: string | undefined): string | null {
  const raw = (url ?? '/').split('?')[0]!.split('#')[0]!;
  try {
    const decoded = decodeURIComponent(raw);
    return decoded.includes('\0') ? null : decoded;
  } catch {
    return null;
  }
}

/**
 * The file a request path names inside `root` (index.html for a folder), or null when it is
 * missing or lies outside the root once `..` and symbolic links are resolved (a release's
 * content is the app's own: a link to /etc must not be followed out).
 */
export async function resolveStaticFile(
  root: string,
  urlPath: string,
): Promise<{ file: string; size: number; mtime: Date } | null> {
  const base = await realpath(root).catch(() => null);
  if (!base) return null;
  const wanted = path.join(base, path.posix.normalize(`/${urlPath}`));
  const real = await realpath(wanted).catch(() => null);
  if (!real || (real !== base && !real.startsWith(base + path.sep))) return null;
  const info = await stat(real).catch(() => null);
  if (!info) return null;
  if (info.isDirectory())
    return urlPath.endsWith('/') || urlPath === '' ? resolveStaticFile(root, `${urlPath}/index.html`) : null;
  return info.isFile() ? { file: real, size: info.size, mtime: info.mtime } : null;
}

/** Serves GET/HEAD from a folder: index.html for folders, content types by extension, 404 for anything else. */
export async function serveStatic(root: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD')
    return sendText(res, 405, 'method not allowed', { allow: 'GET, HEAD' });
  const urlPath = requestPath(req.url);
  if (urlPath === null) return sendText(res, 400, 'bad request path');
  const found = await resolveStaticFile(root, urlPath);
  if (!found && !urlPath.endsWith('/')) {
    // a folder asked for without its slash: redirect so relative links inside it resolve
    const folder = await resolveStaticFile(root, `${urlPath}/`);
    if (folder) return sendText(res, 301, 'moved', { location: `${encodeURI(path.posix.normalize(`/${urlPath}`))}/` });
  }
  if (!found) return sendText(res, 404, 'not found');
  res.writeHead(200, {
    'content-type': contentType(found.file),
    'content-length': String(found.size),
    'last-modified': found.mtime.toUTCString(),
    'x-content-type-options': 'nosniff',
  });
  if (req.method === 'HEAD') return void res.end();
  await new Promise<void>((resolve) => {
    const stream = createReadStream(found.file);
    stream.on('error', () => {
      res.destroy();
      resolve();
    });
    stream.on('end', resolve);
    stream.pipe(res);
  });
}
