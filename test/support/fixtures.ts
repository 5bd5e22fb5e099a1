import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { addMember, createRole, createWorkspace, DEFAULT_PLAN, DEFAULT_REGION, issueToken } from '../../bin/bootstrap';
import type { Permission } from '../../domain/permissions';
import { one } from '../../entities/sql';

export interface Workspace {
  uuid: string;
  name: string;
  ownerToken: string;
  ownerUserUuid: string;
  regionId: number;
  resourceUuid: string;
}

let counter = 0;

/** A workspace with its owner (and token), a region and one compute resource. */
export async function seedWorkspace(
  ds: DataSource,
  options: { name?: string; plan?: Partial<typeof DEFAULT_PLAN>; regionCode?: string } = {},
): Promise<Workspace> {
  counter += 1;
  const name = options.name ?? `ws-${counter}-${randomUUID().slice(0, 8)}`;
  return ds.transaction(async (m) => {
    const uuid = await createWorkspace(m, name);
    const owner = await addMember(m, uuid, `owner-${name}@example.test`, 'owner');
    const { token } = await issueToken(m, { workspaceUuid: uuid, memberUuid: owner.memberUuid, name: 'owner' });
    const code = options.regionCode ?? DEFAULT_REGION.code;
    const region = await one<{ id: number }>(
      m,
      `INSERT INTO regions (name, code, domain) VALUES ($1, $2, $3)
       ON CONFLICT (code) DO UPDATE SET code = EXCLUDED.code RETURNING id`,
      [code === DEFAULT_REGION.code ? DEFAULT_REGION.name : code, code, `${code}.berth.localhost`],
    );
    const resourceUuid = await createResource(m, uuid, region!.id, `res-${counter}`, options.plan, owner.memberUuid);
    return { uuid, name, ownerToken: token, ownerUserUuid: owner.userUuid, regionId: region!.id, resourceUuid };
  });
}

export async function createResource(
  m: Pick<DataSource, 'query'>,
  workspaceUuid: string,
  regionId: number,
  name: string,
  plan: Partial<typeof DEFAULT_PLAN> = {},
  createdBy: string | null = null,
): Promise<string> {
  const uuid = randomUUID();
  const p = { ...DEFAULT_PLAN, ...plan };
  await m.query(
    `INSERT INTO compute_resources (uuid, workspace_uuid, region_id, name, labels, total_cpu_size, total_ram_size, total_disk_size, plan, components, created_by_member_uuid)
     VALUES ($1, $2, $3, $4, '{test}', $5, $6, $7, $8, '[]', $9)`,
    [uuid, workspaceUuid, regionId, name, p.cpu_size, p.ram_size, p.disk_size, JSON.stringify(p), createdBy],
  );
  return uuid;
}

/** A workspace token carrying exactly these permissions. */
export async function tokenWith(
  ds: DataSource,
  workspaceUuid: string,
  permissions: readonly Permission[],
): Promise<string> {
  return (
    await issueToken(ds.manager, {
      workspaceUuid,
      name: `perm ${permissions.join(',')}`,
      permissions: [...permissions],
    })
  ).token;
}

/** A member with a role (built-in, or custom with these permissions) and a token. */
export async function memberWith(
  ds: DataSource,
  workspaceUuid: string,
  role: string,
  permissions: readonly Permission[] = [],
): Promise<{ token: string; userUuid: string; memberUuid: string }> {
  return ds.transaction(async (m) => {
    const exists = await one(m, `SELECT 1 FROM roles WHERE workspace_uuid = $1 AND name = $2`, [workspaceUuid, role]);
    if (!exists) await createRole(m, workspaceUuid, role, [...permissions]);
    counter += 1;
    const member = await addMember(
      m,
      workspaceUuid,
      `${role}-${counter}-${randomUUID().slice(0, 6)}@example.test`,
      role,
    );
    const { token } = await issueToken(m, { workspaceUuid, memberUuid: member.memberUuid, name: role });
    return { token, ...member };
  });
}
