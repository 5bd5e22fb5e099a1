import { randomBytes, randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import type { Workspace } from './fixtures';

export interface AppRow {
  uuid: string;
  name: string;
  resourceUuid: string;
}

/**
 * An app row written directly (the apps area's routes are not needed by domain and
 * preview tests): its name carries a random suffix like the server-assigned names do.
 */
export async function insertApp(
  ds: DataSource,
  ws: Workspace,
  options: { label?: string; projectId?: string | null; resourceUuid?: string; state?: string } = {},
): Promise<AppRow> {
  const uuid = randomUUID();
  const label = options.label ?? 'web';
  const name = `${label}-${randomBytes(3).toString('hex')}`;
  const resourceUuid = options.resourceUuid ?? ws.resourceUuid;
  await ds.query(
    `INSERT INTO apps (uuid, workspace_uuid, project_uuid, resource_uuid, name, service_name, label, state)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [uuid, ws.uuid, options.projectId ?? null, resourceUuid, name, label, label, options.state ?? 'running'],
  );
  return { uuid, name, resourceUuid };
}
