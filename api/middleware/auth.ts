import type Koa from 'koa';
import type { DataSource } from 'typeorm';
import { isUuid } from '../../domain/ids';
import { isPermission, type BuiltinRole, type Permission } from '../../domain/permissions';
import { hashToken } from '../../domain/tokens';
import { preparedRows } from '../../entities/sql';
import type { Caller } from '../context';
import { badRequest, forbidden, unauthorized } from '../problem';
import { bearerTokenHash } from './bearer';
import type { TokenCache } from './token-cache';

export const WORKSPACE_HEADER = 'X-Workspace-Id';

export interface TokenRow {
  token_uuid: string;
  token_workspace: string;
  token_member: string | null;
  token_permissions: string[] | null;
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
  member_uuid: string | null;
  user_uuid: string | null;
  role_name: string | null;
  builtin: boolean | null;
  role_permissions: string[] | null;
}

/**
 * Bearer authentication and workspace selection. The workspace is the X-Workspace-Id
 * header, or the token's own workspace when absent. A member's token reaches every
 * workspace the member's user belongs to (with that membership's role); a workspace
 * token reaches only its own workspace.
 */
export function authenticate(ds: DataSource, cache?: TokenCache<TokenRow>): Koa.Middleware {
  return async (ctx, next) => {
    const header = ctx.get('authorization');
    if (!header) throw unauthorized('missing Authorization header; send "Authorization: Bearer <token>"');
    const hash = bearerTokenHash(ctx);
    if (!hash) throw unauthorized('the Authorization header must read "Bearer <token>"');
    ctx.state.caller = await callerOfTokenHash(ds, hash, ctx.get(WORKSPACE_HEADER) || null, cache);
    await next();
  };
}

/**
 * The caller a token stands for in the selected workspace (null: the token's own), or a
 * 401 (unknown, revoked, expired) / 403 (a workspace the token does not reach) problem.
 * Marks the token used. Shared by bearer authentication and the git endpoint (api/git-http.ts).
 * With a cache the row may come from it (never older than a second, dropped at once when a
 * token, a membership or a role changes: api/middleware/token-cache.ts); every check below
 * runs on it all the same.
 */
export async function callerOfToken(
  ds: DataSource,
  token: string,
  selected: string | null,
  cache?: TokenCache<TokenRow>,
): Promise<Caller> {
  return callerOfTokenHash(ds, hashToken(token), selected, cache);
}

/** `callerOfToken` for a token known by its hash (`hashToken`). */
async function callerOfTokenHash(
  ds: DataSource,
  hash: string,
  selected: string | null,
  cache?: TokenCache<TokenRow>,
): Promise<Caller> {
  if (selected !== null && !isUuid(selected)) throw badRequest(`${WORKSPACE_HEADER} must be a workspace UUID`);
  const key = `${hash} ${selected ?? ''}`;
  let row = cache?.get(key);
  if (!row) {
    const generation = cache?.current ?? 0;
    row = await lookupToken(ds, hash, selected);
    // only a row that can authenticate is kept: an unknown or revoked token is looked up each time
    if (row && !row.revoked_at) cache?.set(key, row, generation);
  }
  if (!row || row.revoked_at) throw unauthorized('the bearer token is not valid');
  if (row.expires_at && row.expires_at.getTime() <= Date.now()) throw unauthorized('the bearer token has expired');

  const workspaceUuid = selected ?? row.token_workspace;
  let caller: Caller;
  if (row.token_member === null) {
    if (workspaceUuid !== row.token_workspace) throw forbidden('this workspace token belongs to another workspace');
    caller = {
      workspaceUuid,
      tokenUuid: row.token_uuid,
      memberUuid: null,
      userUuid: null,
      roleName: null,
      builtinRole: null,
      permissions: new Set((row.token_permissions ?? []).filter(isPermission)),
    };
  } else {
    if (!row.member_uuid) throw forbidden("the token's user is not a member of this workspace");
    const builtinRole = row.builtin ? (row.role_name as BuiltinRole) : null;
    caller = {
      workspaceUuid,
      tokenUuid: row.token_uuid,
      memberUuid: row.member_uuid,
      userUuid: row.user_uuid,
      roleName: row.role_name,
      builtinRole,
      permissions: new Set<Permission>((row.role_permissions ?? []).filter(isPermission)),
    };
  }
  if (!row.last_used_at || Date.now() - row.last_used_at.getTime() > 60_000) {
    row.last_used_at = new Date(); // the row may be cached: marked once a minute, not on every hit
    await ds.query(
      `UPDATE api_tokens SET last_used_at = now()
        WHERE uuid = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '60 seconds')`,
      [row.token_uuid],
    );
  }
  return caller;
}

/** The token by its hash, with its user's membership in the selected workspace (null: the token's own) and that role. */
async function lookupToken(ds: DataSource, hash: string, selected: string | null): Promise<TokenRow | undefined> {
  const rows = await preparedRows<TokenRow>(
    ds,
    'berth_token_lookup',
    `SELECT t.uuid AS token_uuid, t.workspace_uuid AS token_workspace, t.member_uuid AS token_member,
            t.permissions AS token_permissions, t.expires_at, t.revoked_at, t.last_used_at,
            m.uuid AS member_uuid, m.user_uuid, r.name AS role_name, r.builtin, r.permissions AS role_permissions
       FROM api_tokens t
       LEFT JOIN members tm ON tm.uuid = t.member_uuid
       LEFT JOIN members m ON m.user_uuid = tm.user_uuid AND m.workspace_uuid = COALESCE($2::uuid, t.workspace_uuid)
       LEFT JOIN roles r ON r.uuid = m.role_uuid
      WHERE t.token_hash = $1`,
    [hash, selected],
  );
  return rows[0];
}
