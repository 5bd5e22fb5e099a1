import { ApplicationFailure } from '@temporalio/common';
import { one } from '../../../entities/sql';
import type { PreviewDriver } from '../previews';
import type { SimulatedCore } from './core';

/**
 * SIMULATED preview workloads: a row per preview app in sim_previews. Faults are injected
 * per operation (`previews.provision`, `previews.deploy`, `previews.destroy`).
 */
export function simulatedPreviews(core: SimulatedCore): PreviewDriver {
  return {
    async provision(req) {
      await core.maybeFail('previews.provision');
      await core.db.query(
        `INSERT INTO sim_previews (app_uuid, parent_app_uuid, resource_uuid, image) VALUES ($1, $2, $3, $4)
         ON CONFLICT (app_uuid) DO NOTHING`,
        [req.appUuid, req.parentAppUuid, req.resourceUuid, req.useParentImage ? `parent:${req.parentAppUuid}` : '']);
    },
    async deploy(req) {
      await core.maybeFail('previews.deploy');
      const row = await one<{ image: string }>(core.db,
        `UPDATE sim_previews SET commit_sha = $2, deploys = deploys + 1, updated_at = now(),
                image = CASE WHEN image LIKE 'parent:%' THEN image ELSE 'build:' || $2 END
          WHERE app_uuid = $1 RETURNING image`, [req.appUuid, req.commitSha]);
      if (!row) throw ApplicationFailure.nonRetryable(`no preview workload for app ${req.appUuid}`, 'SimulatedMissingWorkload');
      return { image: row.image };
    },
    async destroy(appUuid) {
      await core.maybeFail('previews.destroy');
      await core.db.query(`DELETE FROM sim_previews WHERE app_uuid = $1`, [appUuid]);
    },
  };
}
