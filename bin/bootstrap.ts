import { randomUUID } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import { BUILTIN_ROLES, isPermission } from '../domain/permissions';
import { generateToken, hashToken } from '../domain/tokens';
import { one } from '../entities/sql';

export const DEFAULT_REGION = { name: 'Local', code: 'local', domain: 'local.berth.localhost' };
export const DEFAULT_PLAN = {
  name: 'Standard 2x4',
  code_name: 'standard-2x4',
  description: 'Embedded default: 2 cores, 4 GiB memory, 40 GiB disk',
  plan_type: 'standard',
  cpu_size: 2,
  ram_size: 4 * 2 ** 30,
  disk_size: 40 * 2 ** 30,
  unit_price: 24,
};

export interface Seeded {
  workspaceUuid: string;
  /** Set only when this call created the owner's token. */
  ownerToken?: string;
}

/** A compute resource whose capacity is its plan's (cpu in cores, ram and disk in bytes). */
export async function insertComputeResource(
  m: Pick<EntityManager, 'query'>,
  r: {
    workspaceUuid: string;
    regionId: number;
    name: string;
    labels: string[];
    plan: typeof DEFAULT_PLAN;
    createdBy: string | null;
  },
): Promise<string> {
  const uuid = randomUUID();
  await m.query(
    `INSERT INTO compute_resources (uuid, workspace_uuid, region_id, name, labels, total_cpu_size, total_ram_size, total_disk_size, plan, components, created_by_member_uuid)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
    [
      uuid,
      r.workspaceUuid,
      r.regionId,
      r.name,
      r.labels,
      r.plan.cpu_size,
      r.plan.ram_size,
      r.plan.disk_size,
      JSON.stringify(r.plan),
      JSON.stringify([{ name: 'Load balancer', code_name: 'load-balancer', unit_price: 10 }]),
      r.createdBy,
    ],
  );
  return uuid;
}

/** Creates a workspace with its built-in roles. */
export async function createWorkspace(m: EntityManager, name: string): Promise<string> {
  const uuid = randomUUID();
  await m.query(`INSERT INTO workspaces (uuid, name) VALUES ($1, $2)`, [uuid, name]);
  for (const role of BUILTIN_ROLES) {
    await m.query(`INSERT INTO roles (uuid, workspace_uuid, name, builtin) VALUES ($1, $2, $3, true)`, [
      randomUUID(),
      uuid,
      role,
    ]);
  }
  return uuid;
}

/** Adds a member (creating the user if needed) with the named role of the workspace. */
export async function addMember(
  m: EntityManager,
  workspaceUuid: string,
  email: string,
  roleName: string,
): Promise<{ memberUuid: string; userUuid: string }> {
  const role = await one<{ uuid: string }>(m, `SELECT uuid FROM roles WHERE workspace_uuid = $1 AND name = $2`, [
    workspaceUuid,
    roleName,
  ]);
  if (!role) throw new Error(`no role "${roleName}" in the workspace`);
  const user = await one<{ uuid: string }>(
    m,
    `INSERT INTO users (uuid, email, name) VALUES ($1, $2, $3) ON CONFLICT (email) DO UPDATE SET email = EXCLUDED.email RETURNING uuid`,
    [randomUUID(), email, email.split('@')[0]],
  );
  const memberUuid = randomUUID();
  await m.query(`INSERT INTO members (uuid, workspace_uuid, user_uuid, role_uuid) VALUES ($1, $2, $3, $4)`, [
    memberUuid,
    workspaceUuid,
    user!.uuid,
    role.uuid,
  ]);
  return { memberUuid, userUuid: user!.uuid };
}

/** Creates a custom role; permissions must be known ones. */
export async function createRole(
  m: EntityManager,
  workspaceUuid: string,
  name: string,
  permissions: string[],
): Promise<string> {
  const unknown = permissions.filter((p) => !isPermission(p));
  if (unknown.length > 0) throw new Error(`unknown permission(s): ${unknown.join(', ')}`);
  const uuid = randomUUID();
  await m.query(`INSERT INTO roles (uuid, workspace_uuid, name, builtin, permissions) VALUES ($1, $2, $3, false, $4)`, [
    uuid,
    workspaceUuid,
    name,
    permissions,
  ]);
  return uuid;
}

/** Issues a token for a member (role permissions) or, without member, a workspace token with explicit permissions. */
export async function issueToken(
  m: EntityManager,
  options: {
    workspaceUuid: string;
    name: string;
    memberUuid?: string;
    permissions?: string[];
    token?: string;
    expiresAt?: Date;
  },
): Promise<{ uuid: string; token: string }> {
  if ((options.memberUuid === undefined) === (options.permissions === undefined)) {
    throw new Error('a token belongs to a member or carries explicit permissions, not both');
  }
  const unknown = (options.permissions ?? []).filter((p) => !isPermission(p));
  if (unknown.length > 0) throw new Error(`unknown permission(s): ${unknown.join(', ')}`);
  const token = options.token ?? generateToken();
  const uuid = randomUUID();
  await m.query(
    `INSERT INTO api_tokens (uuid, workspace_uuid, member_uuid, name, token_hash, permissions, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [
      uuid,
      options.workspaceUuid,
      options.memberUuid ?? null,
      options.name,
      hashToken(token),
      options.permissions ?? null,
      options.expiresAt ?? null,
    ],
  );
  return { uuid, token };
}

/**
 * First start: the default workspace with its owner and an owner token
 * (BERTH_BOOTSTRAP_TOKEN when given), one region and one compute resource with a plan.
 * Later starts change nothing.
 */
export async function seedDefaults(ds: DataSource, options: { bootstrapToken?: string }): Promise<Seeded> {
  return ds.transaction(async (m) => {
    await m.query(`SELECT pg_advisory_xact_lock(7233001)`);
    const existing = await one<{ uuid: string }>(m, `SELECT uuid FROM workspaces ORDER BY created_at LIMIT 1`);
    if (existing) return { workspaceUuid: existing.uuid };
    if (options.bootstrapToken !== undefined && options.bootstrapToken.length < 16) {
      throw new Error('BERTH_BOOTSTRAP_TOKEN must be at least 16 characters');
    }
    const workspaceUuid = await createWorkspace(m, 'default');
    const { memberUuid } = await addMember(m, workspaceUuid, 'owner@localhost', 'owner');
    const { token } = await issueToken(m, {
      workspaceUuid,
      memberUuid,
      name: 'bootstrap owner token',
      token: options.bootstrapToken,
    });
    const region = await one<{ id: number }>(
      m,
      `INSERT INTO regions (name, code, domain) VALUES ($1, $2, $3) ON CONFLICT (code) DO UPDATE SET code = EXCLUDED.code RETURNING id`,
      [DEFAULT_REGION.name, DEFAULT_REGION.code, DEFAULT_REGION.domain],
    );
    await insertComputeResource(m, {
      workspaceUuid,
      regionId: region!.id,
      name: 'local-1',
      labels: ['embedded'],
      plan: DEFAULT_PLAN,
      createdBy: memberUuid,
    });
    return { workspaceUuid, ownerToken: token };
  });
}

/** The label that says which data-plane driver runs a compute resource (GET /resources, event labels). */
export const DRIVER_LABEL_PREFIX = 'berth.driver=';

/**
 * Labels every compute resource with the driver this installation runs (`berth.driver=local`),
 * replacing a label a start with another BERTH_PROVIDER left: one Berth drives all its
 * resources with one driver. Called at each start of a process that runs the data plane.
 */
export async function labelResourcesWithDriver(ds: DataSource, driver: string): Promise<void> {
  await ds.query(
    `UPDATE compute_resources
        SET labels = array_append(ARRAY(SELECT l FROM unnest(labels) l WHERE l NOT LIKE $1 || '%'), $1 || $2), updated_at = now()
      WHERE NOT ($1 || $2 = ANY(labels))`,
    [DRIVER_LABEL_PREFIX, driver],
  );
}
