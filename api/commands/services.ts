import { randomUUID } from 'node:crypto';
import { Addon, ServiceMount } from '../../entities/addon';
import { insertReturning, updateWhereReturning } from '../../entities/sql';
import type { Caller } from '../context';
import { unprocessable } from '../problem';
import { markNeedsRedeploy } from '../variables';
import { snapshotOf, type Tx } from './audited-write';

/**
 * POST /services/{id}/mount_app: the mount (one per app and mount path; the unique index
 * decides), a redeploy the app waits for, and the sync that creates the sub_path.
 */
export async function mountService(
  tx: Tx,
  caller: Caller,
  input: { serviceUuid: string; appUuid: string; mountPath: string; subPath: string | null },
): Promise<ServiceMount> {
  // ON CONFLICT DO NOTHING: the uuid is fresh, so the one conflict possible is the mount path
  const mount = await insertReturning(
    tx.m,
    ServiceMount,
    {
      uuid: randomUUID(),
      service_uuid: input.serviceUuid,
      app_uuid: input.appUuid,
      mount_path: input.mountPath,
      sub_path: input.subPath,
    },
    { ignoreConflict: true },
  );
  if (!mount)
    throw unprocessable(`the app already has a mount at ${input.mountPath}`, [
      { path: 'body.mount_path', message: 'already mounted' },
    ]);
  // a mount reaches the app's processes when they start: like a variable change, it waits for a redeploy
  await markNeedsRedeploy(tx.m, { kind: 'app', uuid: input.appUuid });
  const [service] = await updateWhereReturning(
    tx.m,
    Addon,
    // a new generation for the sync; the service's settings are unchanged, and so is updated_at
    { settings_generation: () => 'settings_generation + 1', updated_at: () => 'updated_at' },
    'uuid = :uuid',
    { uuid: input.serviceUuid },
  );
  await tx.enqueue({
    operation: 'service-mount',
    workflow: 'addonSync',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: input.serviceUuid,
    subId: String(service!.settings_generation),
    args: [{ addonUuid: input.serviceUuid, subPaths: true }],
  });
  await tx.audit({ action: 'service.mount_app', resourceUuid: input.serviceUuid, after: snapshotOf(mount) });
  return mount;
}
