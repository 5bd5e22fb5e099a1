import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { DataSource } from 'typeorm';
import { isUuid } from '../domain/ids';
import { hashToken } from '../domain/tokens';
import { createDataSource } from '../entities/data-source';
import { one, rows } from '../entities/sql';
import type { Config } from '../platform/config';
import { addMember, issueToken } from './bootstrap';
import { startEmbeddedPostgres } from './embedded-postgres';

/**
 * Opens the database the stack uses: DATABASE_URL, or the embedded cluster under the data
 * directory (reached while `npm start` runs, started for the duration otherwise).
 */
export async function withDatabase<T>(config: Config, fn: (ds: DataSource) => Promise<T>): Promise<T> {
  let url = config.databaseUrl;
  let stop: (() => Promise<void>) | undefined;
  if (!url) {
    const dir = path.join(config.dataDir, 'postgres');
    if (!existsSync(path.join(dir, 'password')))
      throw new Error(`no embedded database under ${dir}; run \`npm start\` once first or set DATABASE_URL`);
    const password = readFileSync(path.join(dir, 'password'), 'utf8').trim();
    url = `postgres://berth:${encodeURIComponent(password)}@127.0.0.1:${config.embeddedPgPort}/berth`;
    const probe = createDataSource({ url, poolSize: 1 });
    try {
      await probe.initialize();
      await probe.destroy();
    } catch {
      const pg = await startEmbeddedPostgres({ dir, port: config.embeddedPgPort, database: 'berth' });
      url = pg.url;
      stop = pg.stop;
    }
  }
  const ds = createDataSource({ url, poolSize: 2 });
  await ds.initialize();
  try {
    return await fn(ds);
  } finally {
    await ds.destroy();
    await stop?.();
  }
}

export async function findWorkspace(ds: DataSource, ref: string): Promise<string> {
  const ws = await one<{ uuid: string }>(
    ds,
    isUuid(ref) ? `SELECT uuid FROM workspaces WHERE uuid = $1` : `SELECT uuid FROM workspaces WHERE name = $1`,
    [ref],
  );
  if (!ws) throw new Error(`no workspace "${ref}"`);
  return ws.uuid;
}

/** `berth token create|revoke|list`. The token is printed once, on stdout; nothing else is. */
export async function runToken(config: Config, argv: string[]): Promise<void> {
  const [sub, ...rest] = argv;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      workspace: { type: 'string' },
      role: { type: 'string' },
      email: { type: 'string' },
      permissions: { type: 'string' },
      name: { type: 'string' },
      'expires-in-days': { type: 'string' },
    },
  });
  const err = (msg: string) => process.stderr.write(`${msg}\n`);
  if (sub === 'create') {
    if (!values.workspace) throw new Error('--workspace <uuid or name> is required');
    if ((values.role === undefined) === (values.permissions === undefined))
      throw new Error('give exactly one of --role <name> or --permissions a,b');
    const days = values['expires-in-days'] !== undefined ? Number(values['expires-in-days']) : undefined;
    if (days !== undefined && !(days > 0)) throw new Error('--expires-in-days must be a positive number');
    const expiresAt = days ? new Date(Date.now() + days * 86_400_000) : undefined;
    await withDatabase(config, async (ds) => {
      const workspaceUuid = await findWorkspace(ds, values.workspace!);
      const issued = await ds.transaction(async (m) => {
        if (values.permissions !== undefined) {
          const permissions = values.permissions
            .split(',')
            .map((p) => p.trim())
            .filter(Boolean);
          if (permissions.length === 0) throw new Error('--permissions needs at least one permission');
          return {
            ...(await issueToken(m, { workspaceUuid, name: values.name ?? 'workspace token', permissions, expiresAt })),
            member: null,
          };
        }
        const email = values.email ?? `token-${randomBytes(4).toString('hex')}@berth.local`;
        let member = await one<{ uuid: string; role: string }>(
          m,
          `SELECT mb.uuid, r.name AS role FROM members mb JOIN users u ON u.uuid = mb.user_uuid JOIN roles r ON r.uuid = mb.role_uuid
            WHERE mb.workspace_uuid = $1 AND u.email = $2`,
          [workspaceUuid, email],
        );
        if (member && member.role !== values.role)
          throw new Error(`${email} is already a member with role ${member.role}`);
        if (!member)
          member = { uuid: (await addMember(m, workspaceUuid, email, values.role!)).memberUuid, role: values.role! };
        return {
          ...(await issueToken(m, {
            workspaceUuid,
            name: values.name ?? `${values.role} token`,
            memberUuid: member.uuid,
            expiresAt,
          })),
          member: email,
        };
      });
      err(
        `token ${issued.uuid} created${issued.member ? ` for member ${issued.member}` : ' (workspace token)'}; it is shown once:`,
      );
      process.stdout.write(`${issued.token}\n`);
    });
    return;
  }
  if (sub === 'revoke') {
    const ref = positionals[0];
    if (!ref) throw new Error('usage: berth token revoke <token uuid or the token itself>');
    await withDatabase(config, async (ds) => {
      const revoked = await rows(
        ds,
        isUuid(ref)
          ? `UPDATE api_tokens SET revoked_at = now() WHERE uuid = $1 AND revoked_at IS NULL RETURNING uuid`
          : `UPDATE api_tokens SET revoked_at = now() WHERE token_hash = $1 AND revoked_at IS NULL RETURNING uuid`,
        [isUuid(ref) ? ref : hashToken(ref)],
      );
      if (revoked.length === 0) throw new Error('no such active token');
      err(`token ${revoked[0].uuid} revoked`);
    });
    return;
  }
  if (sub === 'list') {
    if (!values.workspace) throw new Error('--workspace <uuid or name> is required');
    await withDatabase(config, async (ds) => {
      const workspaceUuid = await findWorkspace(ds, values.workspace!);
      const list = await rows(
        ds,
        `SELECT t.uuid, t.name, u.email AS member, r.name AS role, t.permissions, t.last_used_at, t.expires_at, t.revoked_at, t.created_at
           FROM api_tokens t LEFT JOIN members mb ON mb.uuid = t.member_uuid LEFT JOIN users u ON u.uuid = mb.user_uuid
           LEFT JOIN roles r ON r.uuid = mb.role_uuid WHERE t.workspace_uuid = $1 ORDER BY t.created_at`,
        [workspaceUuid],
      );
      process.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
    });
    return;
  }
  throw new Error('usage: berth token create|revoke|list …');
}
