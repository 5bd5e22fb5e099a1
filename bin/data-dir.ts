import { chmodSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';

/**
 * Berth's data dir holds its secrets and databases (secret.key, the embedded PostgreSQL's
 * password, temporal.db, the object store's files, the local driver's private root). When
 * Berth runs as root, app code runs as other uids: the folder is made passable but not
 * listable (0711: the embedded PostgreSQL's own user may need to pass through to its data),
 * and everything in it that is Berth's alone is closed to others (files 0600, folders 0700).
 * `tools/` (the Temporal binaries) and `postgres/` (its data belongs to the postgres user,
 * its password file is 0600 already) keep their modes.
 */
export function closeDataDir(dataDir: string): void {
  mkdirSync(dataDir, { recursive: true });
  if (process.getuid?.() !== 0) return;
  chmodSync(dataDir, 0o711);
  for (const entry of readdirSync(dataDir, { withFileTypes: true })) {
    if (entry.name === 'tools' || entry.name === 'postgres') continue;
    const file = path.join(dataDir, entry.name);
    if (entry.isDirectory()) chmodSync(file, 0o700);
    else if (entry.isFile() && existsSync(file)) chmodSync(file, 0o600);
  }
}
