import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { eventually, type TestStack } from './stack';
import type { Workspace } from './fixtures';

export const auth = (token: string) => ({ Authorization: `Bearer ${token}` });

/** Creates a VPC through the API and waits (real worker) until it is active. */
export async function activeVpc(stack: TestStack, ws: Workspace, body: Record<string, unknown> = {}): Promise<any> {
  const res = await stack.http
    .post('/api/v1/vpcs')
    .set(auth(ws.ownerToken))
    .send({ region_id: ws.regionId, ...body });
  if (res.status !== 201) throw new Error(`VPC create failed: ${res.status} ${res.text}`);
  return eventually(
    async () => {
      const got = await stack.http.get(`/api/v1/vpcs/${res.body.uuid}`).set(auth(ws.ownerToken));
      return got.body.status === 'active' ? got.body : null;
    },
    { what: `VPC ${res.body.uuid} active` },
  );
}

/** An app row (the apps area owns the routes; the attachment code reads the table). */
export async function insertApp(
  ds: DataSource,
  ws: Workspace,
  options: { resourceUuid?: string; name?: string; projectId?: string } = {},
): Promise<{ uuid: string; name: string }> {
  const uuid = randomUUID();
  const name = options.name ?? `app-${uuid.slice(0, 6)}`;
  await ds.query(
    `INSERT INTO apps (uuid, workspace_uuid, project_uuid, resource_uuid, name, service_name, label, state) VALUES ($1, $2, $3, $4, $5, $5, $5, 'running')`,
    [uuid, ws.uuid, options.projectId ?? null, options.resourceUuid ?? ws.resourceUuid, name],
  );
  return { uuid, name };
}

export async function restartsOf(
  ds: DataSource,
  workloadUuid: string,
): Promise<Array<{ request_id: string; reason: string }>> {
  return ds.query(`SELECT request_id, reason FROM sim_network_restarts WHERE workload_uuid = $1 ORDER BY created_at`, [
    workloadUuid,
  ]);
}
