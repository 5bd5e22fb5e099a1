import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { KeyRegistry, ObjectStoreOptions } from './drivers/storage';

interface S3rverInstance {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}
interface AwsAccount {
  createKeyPair(id: string, secret: string): void;
  revokeAccessKey(id: string): void;
}

// s3rver ships no type declarations.
const S3rver = require('s3rver') as new (options: Record<string, unknown>) => S3rverInstance;
const AWSAccount = require('s3rver/lib/models/account') as new (id: number, name: string) => AwsAccount;

export interface EmbeddedObjectStore extends ObjectStoreOptions {
  directory: string;
  close(): Promise<void>;
}

/**
 * The embedded object store: a real S3-compatible HTTP server (s3rver) on loopback, with
 * its objects under `directory`. Used by `berth dev` when BERTH_S3_ENDPOINT is unset, and
 * by the tests. Access keys the storage driver grants are registered with it and kept in
 * `accounts.json` (mode 0600) beside the objects, so they survive a restart.
 * Limits of s3rver, stated plainly: it checks that a request's access key exists and that
 * a presigned URL has not expired, but it does not verify the SigV4 signature itself, does
 * not scope keys to buckets, and serves anonymous requests.
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
  const accountsFile = path.join(directory, 'accounts.json');
  const keys: Record<string, string> = existsSync(accountsFile)
    ? (JSON.parse(readFileSync(accountsFile, 'utf8')) as Record<string, string>)
    : {};
  const save = () => {
    writeFileSync(accountsFile, JSON.stringify(keys), { mode: 0o600 });
    chmodSync(accountsFile, 0o600);
  };
  // The operator's account: the control plane manages buckets and signs download links with it.
  const operator = new AWSAccount(100000000001, 'berth-operator');
  const operatorKey = keys['berth-operator'] ?? randomBytes(24).toString('base64url');
  keys['berth-operator'] = operatorKey;
  operator.createKeyPair('berth-operator', operatorKey);
  const tenants = new AWSAccount(100000000002, 'berth-buckets');
  for (const [id, secret] of Object.entries(keys)) if (id !== 'berth-operator') tenants.createKeyPair(id, secret);
  save();

  const server = new S3rver({
    address: options.host ?? '127.0.0.1',
    port: options.port ?? 0,
    directory: objects,
    silent: true,
    vhostBuckets: false,
  });
  const address = await server.run();
  const registry: KeyRegistry = {
    async register(accessKey, secretKey) {
      keys[accessKey] = secretKey;
      tenants.createKeyPair(accessKey, secretKey);
      save();
    },
    async revoke(accessKey) {
      delete keys[accessKey];
      tenants.revokeAccessKey(accessKey);
      save();
    },
  };
  return {
    directory,
    endpoint: `http://${address.address}:${address.port}`,
    region: options.region ?? 'us-east-1',
    accessKeyId: 'berth-operator',
    secretAccessKey: operatorKey,
    keys: registry,
    close: () => server.close(),
  };
}
