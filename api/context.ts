import type { Client } from '@temporalio/client';
import type { DriverCapabilities } from '../platform/drivers/capabilities';
import type { StorageDriver } from '../platform/drivers/storage';
import type { LocalLayout } from '../platform/local-layout';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import type { SecretBox } from '../domain/secret-box';
import type { CallerIdentity } from '../domain/projects';
import type { Config } from '../platform/config';
import type { RouteDef } from './route';
import type { Outbox } from '../platform/outbox';
import type { TokenRow } from './middleware/auth';
import type { TokenCache } from './middleware/token-cache';

/** Everything the API needs, passed in by whoever builds the app (bin/ or a test). */
export interface ApiDeps {
  dataSource: DataSource;
  temporal: Client;
  outbox: Outbox;
  secretBox: SecretBox;
  logger: Logger;
  config: Config;
  /** Object data path (upload, rename, delete, statistics, download links) of buckets. */
  storage?: StorageDriver;
  /** Where the `local` data-plane driver keeps its files (build and app logs, git repositories); absent with the simulated driver. */
  localLayout?: LocalLayout;
  /** What the data-plane driver does for real (what it cannot is refused with its reason, 422); absent: everything. */
  capabilities?: DriverCapabilities;
  /** Token lookups kept for at most a second, dropped on any token, membership or role change (absent: looked up on every request). */
  tokenCache?: TokenCache<TokenRow>;
  /** Check every response body against its route's declared schema (tests). */
  validateResponses?: boolean;
  /** Check that every accepted mutating request wrote exactly its route's audit entry (tests). */
  verifyAudit?: boolean;
  /** Told of each route whose audit entry the check saw (tests tally the routes covered). */
  onAuditVerified?: (route: RouteDef) => void;
}

/** Who is calling, in which workspace, with which grants. */
export interface Caller extends CallerIdentity {
  workspaceUuid: string;
  tokenUuid: string;
  /** null for a workspace token. */
  memberUuid: string | null;
}

declare module 'koa' {
  interface DefaultState {
    requestId: string;
    caller?: Caller;
  }
}
