import { seedWorkspace } from '../../support/fixtures';
import { eventually } from '../../support/stack';
import type { ReplayScenario } from './types';

export const projectScenarios: ReplayScenario[] = [
  {
    name: 'project-delete',
    async record(stack) {
      const ws = await seedWorkspace(stack.ds);
      const auth = { Authorization: `Bearer ${ws.ownerToken}` };
      const created = await stack.http
        .post('/api/v1/projects')
        .set(auth)
        .send({ name: 'replayed', resource_ids: [ws.resourceUuid] });
      await stack.http.delete(`/api/v1/projects/${created.body.uuid}`).set(auth).expect(202);
      const handle = stack.temporal.workflow.getHandle(`project-delete/${created.body.uuid}`);
      await eventually(async () => (await handle.describe()).status.name === 'COMPLETED', {
        what: 'project-delete completed',
      });
      return handle.fetchHistory();
    },
  },
];
