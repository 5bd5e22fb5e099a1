import { PreviewEnvironment } from '../../entities/preview';
import { updateWhereReturning } from '../../entities/sql';
import type { Caller } from '../context';
import { wakePreview } from '../preview-envs';
import { conflict, notFound } from '../problem';
import { appForChange, ruleScope } from './apps';
import { snapshotOf, type Tx } from './audited-write';

/**
 * Changes a preview environment of the app (locked while read): `changes` decides from the
 * row, the entry names the environment by its own app, and its workflow is woken after commit.
 */
async function changePreview(
  tx: Tx,
  caller: Caller,
  input: { appUuid: string; id: number },
  action: string,
  changes: (found: PreviewEnvironment) => Parameters<typeof updateWhereReturning<PreviewEnvironment>>[2],
): Promise<PreviewEnvironment> {
  const app = await appForChange(tx, ruleScope(tx, caller), input.appUuid, false);
  const found = await tx.m.findOne(PreviewEnvironment, {
    where: { id: input.id, parent_app_uuid: app.uuid },
    lock: { mode: 'pessimistic_write' },
  });
  if (!found) throw notFound('preview environment');
  const [updated] = await updateWhereReturning(tx.m, PreviewEnvironment, changes(found), 'id = :id', { id: found.id });
  await tx.audit({
    action,
    resourceUuid: updated!.app_uuid,
    before: snapshotOf(found),
    after: snapshotOf(updated),
  });
  tx.afterCommit(() => wakePreview(tx.deps, app.uuid, found.key));
  return updated!;
}

/** DELETE /apps/{uuid}/preview_environments/{id}: the environment moves to destroying; its workflow removes its app, then it. */
export function destroyPreview(tx: Tx, caller: Caller, input: { appUuid: string; id: number }) {
  return changePreview(tx, caller, input, 'preview.delete', () => ({ status: 'destroying' }));
}

/** POST .../redeploy: the head commit again (a new generation; active or failed reads updating); not while destroying. */
export function redeployPreview(tx: Tx, caller: Caller, input: { appUuid: string; id: number }) {
  return changePreview(tx, caller, input, 'preview.redeploy', (found) => {
    if (found.status === 'destroying') throw conflict('the preview environment is being destroyed');
    return {
      generation: () => 'generation + 1',
      status: () => `CASE WHEN status IN ('active', 'failed') THEN 'updating' ELSE status END`,
    };
  });
}
