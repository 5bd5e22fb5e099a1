import { randomUUID } from 'node:crypto';
import { createResource, seedWorkspace } from '../../support/fixtures';
import { eventually } from '../../support/stack';
import type { ReplayScenario } from './types';

export const quotaAlertScenarios: ReplayScenario[] = [
  {
    // An app reserving 0.85 of a 1-cpu resource: one quota_alert (cpu, 80%).
    name: 'quota-alert',
    async record(stack) {
      const ws = await seedWorkspace(stack.ds);
      const [{ region_id }] = await stack.ds.query(`SELECT region_id FROM compute_resources WHERE uuid = $1`, [
        ws.resourceUuid,
      ]);
      const resource = await createResource(stack.ds, ws.uuid, region_id, `quota-${randomUUID().slice(0, 6)}`, {
        cpu_size: 1,
      });
      await stack.http
        .post('/api/v1/apps')
        .set('Authorization', `Bearer ${ws.ownerToken}`)
        .send({ name: 'quota', resource_id: resource, quota: { cpu_size: 0.85, ram_size: 2 ** 28, disk_size: 0 } })
        .expect(201);
      const { workflow_id: id } = await eventually(
        async () =>
          (
            await stack.ds.query(
              `SELECT workflow_id FROM operations WHERE operation = 'quota-alert' AND resource_uuid = $1`,
              [resource],
            )
          )[0],
        { what: 'quota-alert queued' },
      );
      const handle = stack.temporal.workflow.getHandle(id);
      await handle.result();
      return handle.fetchHistory();
    },
  },
];
