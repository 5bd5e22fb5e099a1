import type { EntityManager } from 'typeorm';
import type { AttachableType } from '../domain/vpc';
import { one } from '../entities/sql';

/** A workload that can be attached to a VPC subnet, as the attach routes need it. */
export interface Attachable {
  uuid: string;
  name: string;
  /** Project of the workload (a hidden project makes it unknown to the caller). */
  projectUuid: string | null;
  /** Region of the compute resource it runs on. */
  regionId: number;
  regionCode: string;
  /** Cron jobs run no long-lived pod: their attachment gets no fqdn. */
  cronJob: boolean;
}

export interface AttachableKind {
  find(db: Pick<EntityManager, 'query'>, workspaceUuid: string, uuid: string): Promise<Attachable | null>;
}

/** What each kind's query answers: the workload, its project and its compute resource's region. */
interface WorkloadRow {
  uuid: string;
  name: string;
  project_uuid: string | null;
  region_id: number;
  region_code: string;
}

function attachable(row: WorkloadRow | undefined, cronJob: boolean): Attachable | null {
  return row
    ? {
        uuid: row.uuid,
        name: row.name,
        projectUuid: row.project_uuid,
        regionId: row.region_id,
        regionCode: row.region_code,
        cronJob,
      }
    : null;
}

/** Standalone services and app add-ons live in one table, told apart by `kind`. */
function dataWorkload(kind: 'service' | 'addon'): AttachableKind {
  return {
    async find(db, workspaceUuid, uuid) {
      const row = await one<WorkloadRow & { type: string }>(
        db,
        `SELECT a.uuid, a.name, a.type, COALESCE(a.project_uuid, ap.project_uuid) AS project_uuid, c.region_id, g.code AS region_code
           FROM addons a JOIN compute_resources c ON c.uuid = a.resource_uuid JOIN regions g ON g.id = c.region_id
           LEFT JOIN apps ap ON ap.uuid = a.app_uuid
          WHERE a.uuid = $1 AND a.workspace_uuid = $2 AND a.kind = $3 AND a.state <> 'deleting'`,
        [uuid, workspaceUuid, kind],
      );
      return attachable(row, row?.type === 'cronjob');
    },
  };
}

/**
 * Attachable workloads by attachable_type: one entry per type. An Addon of type cronjob
 * reports `cronJob: true` (its attachment gets no fqdn).
 */
export const ATTACHABLES: Record<AttachableType, AttachableKind | null> = {
  App: {
    async find(db, workspaceUuid, uuid) {
      const row = await one<WorkloadRow>(
        db,
        `SELECT a.uuid, a.name, a.project_uuid, c.region_id, g.code AS region_code
           FROM apps a JOIN compute_resources c ON c.uuid = a.resource_uuid JOIN regions g ON g.id = c.region_id
          WHERE a.uuid = $1 AND a.workspace_uuid = $2`,
        [uuid, workspaceUuid],
      );
      return attachable(row, false);
    },
  },
  Service: dataWorkload('service'),
  Addon: dataWorkload('addon'),
};
