import type { StacksDriver } from '../../../platform/drivers/stacks';
import type { SimulatedCore } from './core';

/**
 * Simulated stack services: nothing is built or run. Images are named after the commit,
 * services are recorded as running in sim_stack_services, and faults come from the core.
 */
export function createSimulatedStacks(core: SimulatedCore): StacksDriver {
  return {
    refusals: () => [],
    async buildImage(itemUuid, spec) {
      await core.maybeFail('stacks.build_image');
      return `registry.berth.local/${itemUuid}:${spec.commitSha.slice(0, 12)}`;
    },
    async runService(itemUuid, spec) {
      await core.maybeFail('stacks.run_service');
      await core.db.query(
        `INSERT INTO sim_stack_services (item_uuid, image, status) VALUES ($1, $2, 'running')
         ON CONFLICT (item_uuid) DO UPDATE SET image = EXCLUDED.image, status = 'running', updated_at = now()`,
        [itemUuid, spec.image],
      );
      return 'running';
    },
    async removeService(itemUuid) {
      await core.maybeFail('stacks.remove_service');
      await core.db.query(`DELETE FROM sim_stack_services WHERE item_uuid = $1`, [itemUuid]);
    },
  };
}
