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

/**
 * Attachable workloads by attachable_type: one entry per type. Service and Addon have no
 * tables yet (the data-services area builds them); until their entries are added here,
 * attaching one answers 422 "unknown Service" / "unknown Addon". An Addon entry reports
 * `cronJob: true` for add-ons of type cronjob.
 */
export const ATTACHABLES: Record<AttachableType, AttachableKind | null> = {
  App: {
    async find(db, workspaceUuid, uuid) {
      const row = await one<{ uuid: string; name: string; project_id: string | null; region_id: number; region_code: string }>(db,
        `SELECT a.uuid, a.name, a.project_id, c.region_id, g.code AS region_code
           FROM apps a JOIN compute_resources c ON c.uuid = a.resource_uuid JOIN regions g ON g.id = c.region_id
          WHERE a.uuid = $1 AND a.workspace_uuid = $2`, [uuid, workspaceUuid]);
      return row ? { uuid: row.uuid, name: row.name, projectUuid: row.project_id, regionId: row.region_id, regionCode: row.region_code, cronJob: false } : null;
    },
  },
  Service: null,
  Addon: null,
};
