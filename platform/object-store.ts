import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { AccessRegistry, ObjectStoreOptions } from './drivers/storage';
import { createObjectStoreGateway } from './object-store/gateway';
import { OPERATOR_KEY, StoreGrants } from './object-store/grants';

interface S3rverApp {
  callback(): Parameters<typeof createServer>[1];
  logger?: { close(): void; exceptions?: { unhandle(): void } };
}

// s3rver ships no type declarations.
const S3rver = require('s3rver') as new (options: Record<string, unknown>) => S3rverApp;

export interface EmbeddedObjectStore extends ObjectStoreOptions {
  directory: string;
  close(): Promise<void>;
}

/** Listens on a Unix socket (a path) or on a TCP port and host. */
function listen(server: Server, where: { path: string } | { port: number; host: string }): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(where, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

const closeServer = (server: Server) =>
  new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });

/**
 * The embedded object store: a real S3-compatible server (s3rver) with its objects under
 * `directory`, behind a gateway (object-store/gateway.ts) that is the only way in: it
 * listens on `host:port` and accepts a request only with a valid AWS SigV4 signature of
 * the operator's key or of the addressed bucket's own key, or an anonymous GET/HEAD of an
 * object of a public bucket; everything else is `AccessDenied`. s3rver itself listens on a
 * Unix socket in `directory` (mode 0600). Used by `berth dev` when BERTH_S3_ENDPOINT is
 * unset, and by the tests. Grants (bucket keys, public buckets) are kept in `grants.json`
 * (mode 0600) beside the objects, so they survive a restart.
 */
export async function startEmbeddedObjectStore(options: {
  directory: string;
  host?: string;
  port?: number;
  region?: string;
}): Promise<EmbeddedObjectStore> {
  const directory = path.resolve(options.directory);
  const objects = path.join(directory, 'objects');
  mkdirSync(objects, { recursive: true });
  const region = options.region ?? 'us-east-1';
  const grants = StoreGrants.load(path.join(directory, 'grants.json'), path.join(directory, 'accounts.json'));

  const s3rver = new S3rver({ directory: objects, silent: true, vhostBuckets: false });
  const socket = path.join(directory, 's3rver.sock');
  rmSync(socket, { force: true });
  const inner = createServer(s3rver.callback());
  await listen(inner, { path: socket });
  chmodSync(socket, 0o600);

  const gateway = createObjectStoreGateway({ grants, region, upstreamSocket: socket });
  try {
    await listen(gateway, { port: options.port ?? 0, host: options.host ?? '127.0.0.1' });
  } catch (err) {
    await closeServer(inner);
    throw err;
  }
  const address = gateway.address() as AddressInfo;
  const access: AccessRegistry = {
    async grant(bucket, accessKey, secretKey) {
      grants.grant(bucket, accessKey, secretKey);
    },
    async revoke(accessKey) {
      grants.revoke(accessKey);
    },
    async setPublicRead(bucket, publicRead) {
      grants.setPublicRead(bucket, publicRead);
    },
  };
  return {
    directory,
    endpoint: `http://${address.address}:${address.port}`,
    region,
    accessKeyId: OPERATOR_KEY,
    secretAccessKey: grants.operatorSecret,
    access,
    async close() {
      await closeServer(gateway);
      await closeServer(inner);
      rmSync(socket, { force: true });
      s3rver.logger?.exceptions?.unhandle();
      s3rver.logger?.close();
    },
  };
}
