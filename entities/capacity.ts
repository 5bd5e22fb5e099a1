import type { ResourceUsage } from '../domain/quota-alerts';
import type { AppQuota } from './app';
import { one, type Db } from './sql';

export type Shortage = 'cpu' | 'ram' | 'disk';

/**
 * Holds an app's capacity on a compute resource (its quota times its replicas; disk once),
 * with the resource row locked so concurrent holds cannot overcommit it. Answers what is
 * short, and holds nothing then. Holding again for the same app replaces its hold.
 */
export async function holdAppCapacity(
  m: Db,
  appUuid: string,
  resourceUuid: string,
  quota: AppQuota,
): Promise<Shortage[]> {
  const free = await one<{ cpu: number; ram: string; disk: string }>(
    m,
    `SELECT c.total_cpu_size - COALESCE(sum(a.cpu_size), 0) AS cpu, c.total_ram_size - COALESCE(sum(a.ram_size), 0) AS ram,
            c.total_disk_size - COALESCE(sum(a.disk_size), 0) AS disk
       FROM (SELECT * FROM compute_resources WHERE uuid = $1 FOR UPDATE) c
       LEFT JOIN resource_allocations a ON a.resource_uuid = c.uuid AND a.owner_uuid <> $2
      GROUP BY c.total_cpu_size, c.total_ram_size, c.total_disk_size`,
    [resourceUuid, appUuid],
  );
  const replicas = quota.replicas ?? 1;
  const short = (
    [
      quota.cpu_size * replicas > Number(free!.cpu) ? 'cpu' : null,
      quota.ram_size * replicas > Number(free!.ram) ? 'ram' : null,
      quota.disk_size > Number(free!.disk) ? 'disk' : null,
    ] as Array<Shortage | null>
  ).filter((s): s is Shortage => s !== null);
  if (short.length > 0) return short;
  await m.query(
    `INSERT INTO resource_allocations (owner_uuid, owner_type, resource_uuid, cpu_size, ram_size, disk_size) VALUES ($1, 'app', $2, $3, $4, $5)
     ON CONFLICT (owner_uuid) DO UPDATE SET resource_uuid = EXCLUDED.resource_uuid, cpu_size = EXCLUDED.cpu_size, ram_size = EXCLUDED.ram_size, disk_size = EXCLUDED.disk_size`,
    [appUuid, resourceUuid, quota.cpu_size * replicas, quota.ram_size * replicas, quota.disk_size],
  );
  return [];
}

/**
 * What the allocations on a compute resource hold of its capacity, with the resource row
 * locked (the caller's transaction then owns every allocation change on it until commit).
 */
export async function resourceUsage(m: Db, resourceUuid: string): Promise<ResourceUsage & { name: string }> {
  const r = await one<{
    name: string;
    cpu: number;
    ram: string;
    disk: string;
    total_cpu: number;
    total_ram: string;
    total_disk: string;
  }>(
    m,
    `SELECT c.name, c.total_cpu_size AS total_cpu, c.total_ram_size AS total_ram, c.total_disk_size AS total_disk,
            COALESCE(sum(a.cpu_size), 0) AS cpu, COALESCE(sum(a.ram_size), 0) AS ram, COALESCE(sum(a.disk_size), 0) AS disk
       FROM (SELECT * FROM compute_resources WHERE uuid = $1 FOR UPDATE) c
       LEFT JOIN resource_allocations a ON a.resource_uuid = c.uuid
      GROUP BY c.name, c.total_cpu_size, c.total_ram_size, c.total_disk_size`,
    [resourceUuid],
  );
  if (!r) throw new Error(`compute resource ${resourceUuid} not found`);
  return {
    name: r.name,
    cpu: { allocated: Number(r.cpu), total: Number(r.total_cpu) },
    ram: { allocated: Number(r.ram), total: Number(r.total_ram) },
    disk: { allocated: Number(r.disk), total: Number(r.total_disk) },
  };
}
