import { randomBytes, randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import type { SimulatedData } from '../../activities/provider/simulated';
import type { TestStack } from './stack';
import type { Workspace } from './fixtures';

/** An app row inserted directly (the apps routes live in another area). */
export async function insertApp(
  ds: DataSource,
  ws: Workspace,
  options: { projectId?: string | null; resourceUuid?: string } = {},
): Promise<string> {
  const uuid = randomUUID();
  const name = `app-${randomBytes(4).toString('hex')}`;
  await ds.query(
    `INSERT INTO apps (uuid, workspace_uuid, project_uuid, resource_uuid, name, service_name, label, state) VALUES ($1, $2, $3, $4, $5, $6, $7, 'running')`,
    [uuid, ws.uuid, options.projectId ?? null, options.resourceUuid ?? ws.resourceUuid, name, name.slice(0, 8), name],
  );
  return uuid;
}

/** The simulated data driver of the stack (tests act as a database client through it). */
export function simData(stack: TestStack): SimulatedData {
  return stack.activityDeps.provider.data as SimulatedData;
}

export async function clusterOf(ds: DataSource, addonUuid: string): Promise<string> {
  const [row] = await ds.query(`SELECT cluster_id FROM addons WHERE uuid = $1`, [addonUuid]);
  return row.cluster_id;
}
