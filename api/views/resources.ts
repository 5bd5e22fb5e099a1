import type { EntityManager } from 'typeorm';
import * as yup from 'yup';
import { columnsOf, hydrated } from '../../entities/columns';
import { ComputeResource } from '../../entities/compute-resource';
import { arr, bool, num, obj, str, timestamp, uuid } from '../schemas/common';
import { isoRequired } from './common';

export const regionSchema = obj({
  id: yup.number().strict().integer().required(),
  name: str().required(),
  code: str().required(),
});

export const resourceSchema = obj({
  uuid: uuid().required(),
  name: str().required(),
  state: str().required(),
  labels: arr(str().required()).required(),
  total_disk_size: num().required(),
  total_ram_size: num().required(),
  total_cpu_size: num().required(),
  total_used_disk_size: num().required(),
  total_used_ram_size: num().required(),
  total_used_cpu_size: num().required(),
  available_cpu_size: num().required(),
  available_disk_size: num().required(),
  available_ram_size: num().required(),
  assigned: bool().required(),
  project_ids: arr(uuid().required()).required(),
  region: regionSchema.required(),
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
  plan: obj({
    name: str().required(),
    code_name: str().required(),
    description: str().required(),
    plan_type: str().required(),
    ram_size: num().required(),
    disk_size: num().required(),
    cpu_size: num().required(),
    unit_price: num().required(),
  }).required(),
  components: arr(
    obj({ name: str().required(), code_name: str().required(), unit_price: num().required() }),
  ).required(),
});

export type ResourceView = yup.InferType<typeof resourceSchema>;

/** A compute resource with its region, its used capacity (sums over allocations) and its projects. */
export type ResourceRow = Pick<
  ComputeResource,
  | 'uuid'
  | 'name'
  | 'state'
  | 'labels'
  | 'total_cpu_size'
  | 'total_ram_size'
  | 'total_disk_size'
  | 'plan'
  | 'components'
  | 'created_at'
  | 'updated_at'
  | 'region_id'
> & {
  region_name: string;
  region_code: string;
  used_cpu: number | null;
  used_ram: string | null;
  used_disk: string | null;
  project_ids: string[];
};

/**
 * Loads compute resources as the contract's `platform` object, with used capacity summed
 * from allocations and the projects they are assigned to, in one query for any number.
 */
export async function loadResources(
  db: EntityManager,
  workspaceUuid: string,
  uuids?: readonly string[],
): Promise<ResourceView[]> {
  // Raw: the used capacity and the projects are LATERAL aggregates, which the query builder cannot join.
  const rows: ResourceRow[] = hydrated(
    ComputeResource,
    await db.query(
      `SELECT ${columnsOf(ComputeResource, 'c')}, g.name AS region_name, g.code AS region_code,
            COALESCE(a.cpu, 0) AS used_cpu, COALESCE(a.ram, 0) AS used_ram, COALESCE(a.disk, 0) AS used_disk,
            COALESCE(pr.ids, '{}') AS project_ids
       FROM compute_resources c
       JOIN regions g ON g.id = c.region_id
       LEFT JOIN LATERAL (SELECT sum(cpu_size) AS cpu, sum(ram_size) AS ram, sum(disk_size) AS disk
                            FROM resource_allocations WHERE resource_uuid = c.uuid) a ON true
       LEFT JOIN LATERAL (SELECT array_agg(project_uuid::text ORDER BY created_at) AS ids
                            FROM project_resources WHERE resource_uuid = c.uuid) pr ON true
      WHERE c.workspace_uuid = $1 AND ($2::uuid[] IS NULL OR c.uuid = ANY($2::uuid[]))
      ORDER BY c.created_at, c.uuid`,
      [workspaceUuid, uuids ?? null],
    ),
  );
  return rows.map(resourceView);
}

/** A compute resource row (with its used capacity and projects) as the contract's `platform` object. */
export function resourceView(r: ResourceRow): ResourceView {
  const usedRam = Number(r.used_ram ?? 0);
  const usedDisk = Number(r.used_disk ?? 0);
  const usedCpu = Number(r.used_cpu ?? 0);
  return {
    uuid: r.uuid,
    name: r.name,
    state: r.state,
    labels: r.labels,
    total_disk_size: Number(r.total_disk_size),
    total_ram_size: Number(r.total_ram_size),
    total_cpu_size: Number(r.total_cpu_size),
    total_used_disk_size: usedDisk,
    total_used_ram_size: usedRam,
    total_used_cpu_size: usedCpu,
    available_cpu_size: Math.max(0, Number(r.total_cpu_size) - usedCpu),
    available_disk_size: Math.max(0, Number(r.total_disk_size) - usedDisk),
    available_ram_size: Math.max(0, Number(r.total_ram_size) - usedRam),
    assigned: r.project_ids.length > 0,
    project_ids: r.project_ids,
    region: { id: r.region_id, name: r.region_name, code: r.region_code },
    created_at: isoRequired(r.created_at),
    updated_at: isoRequired(r.updated_at),
    plan: r.plan,
    components: r.components,
  };
}
