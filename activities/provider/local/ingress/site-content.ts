import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { contentType } from '../../../../domain/static-sites';
import type { ObjectContent, StorageDriver } from '../../../../platform/drivers/storage';
import { sendText } from './pages';
import { requestPath } from './static-files';

/** What the ingress needs of the storage driver to serve static sites. */
export type SiteStorage = Pick<StorageDriver, 'siteRoute' | 'readObject'>;

/**
 * Serves GET/HEAD of a static site from its bucket prefix in the object store: index.html
 * for `/` and folders, the content type stored with the object (else by extension), 404
 * for a missing object. The path is normalised first, so `..` cannot reach keys outside
 * the site's prefix.
 */
export async function serveSiteObject(
  storage: SiteStorage,
  route: { bucket: string; prefix: string },
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD')
    return sendText(res, 405, 'method not allowed', { allow: 'GET, HEAD' });
  const urlPath = requestPath(req.url);
  if (urlPath === null) return sendText(res, 400, 'bad request path');
  const clean = path.posix.normalize(`/${urlPath}`);
  const rel = clean.endsWith('/') ? `${clean.slice(1)}index.html` : clean.slice(1);
  const object = await storage.readObject(route.bucket, `${route.prefix}${rel}`);
  if (!object) {
    const folder = clean.endsWith('/')
      ? null
      : await storage.readObject(route.bucket, `${route.prefix}${rel}/index.html`);
    if (folder) {
      folder.body.destroy();
      return sendText(res, 301, 'moved', { location: `${encodeURI(clean)}/` });
    }
    return sendText(res, 404, 'not found');
  }
  return send(object, rel, req, res);
}

async function send(object: ObjectContent, rel: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const headers: Record<string, string> = {
    'content-type': object.contentType ?? contentType(rel),
    'content-length': String(object.size),
    'x-content-type-options': 'nosniff',
  };
  if (object.etag) headers.etag = object.etag;
  if (object.lastModified) headers['last-modified'] = object.lastModified.toUTCString();
  res.writeHead(200, headers);
  if (req.method === 'HEAD') {
    object.body.destroy();
    return void res.end();
  }
  await new Promise<void>((resolve) => {
    object.body.on('error', () => {
      res.destroy();
      resolve();
    });
    object.body.on('end', resolve);
    object.body.pipe(res);
  });
}
