import { randomBytes, randomUUID } from 'node:crypto';
import { Addon } from '../../entities/addon';
import { insertReturning, updateWhereReturning } from '../../entities/sql';
import { workflowIdOf } from '../../domain/search-attributes';
import type { Caller } from '../context';
import { restoreChoice } from '../data-service-backups';
import { checkSettings, LIVE_STATES } from '../data-service-rules';
import { conflict, unprocessable } from '../problem';
import type { AddonUpdateBody, RestoreBody } from '../schemas/addons';
import { markNeedsRedeploy } from '../variables';
import type { AddonRow } from '../views/addons';
import { snapshotOf, type Tx } from './audited-write';

/** Commands of add-ons (/apps/{uuid}/addons), services (/services) and their cron jobs' shared parts. */

/** `service` or `addon`: the first part of a data service's operations. */
const operationArea = (row: Pick<AddonRow, 'kind'>) => (row.kind === 'service' ? 'service' : 'addon');

/** Enqueues the workflow that applies the settings of `generation` to the cluster (one per generation). */
function enqueueSync(tx: Tx, caller: Caller, uuid: string, area: 'service' | 'addon', generation: number) {
  return tx.enqueue({
    operation: `${area}-sync`,
    workflow: 'addonSync',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: uuid,
    subId: String(generation),
    args: [{ addonUuid: uuid }],
  });
}

/**
 * Applies an accepted update of an add-on or service: backup_enabled changes now (BKP-01); a
 * workflow brings backup_active in line (BKP-02). Records `action` (also for a no-op).
 */
export async function updateDataService(
  tx: Tx,
  caller: Caller,
  row: AddonRow,
  b: AddonUpdateBody,
  verb: 'update' | 'public_access' = 'update',
): Promise<void> {
  if (row.replica_of && (b.backup_enabled !== undefined || b.public_access !== undefined)) {
    throw unprocessable("a read replica follows its primary's backups and public access", [
      { path: 'body', message: 'change the primary instead' },
    ]);
  }
  checkSettings(row.type, row.plan_type, b);
  const settingsChange =
    (b.backup_enabled !== undefined && b.backup_enabled !== row.backup_enabled) ||
    (b.public_access !== undefined && b.public_access !== row.public_access);
  const before = await tx.m.findOneBy(Addon, { uuid: row.uuid });
  const [after] = await updateWhereReturning(
    tx.m,
    Addon,
    {
      label: b.label,
      quota: b.quota ? { ...row.quota, ...b.quota } : row.quota,
      settings: b.s3_enabled !== undefined ? { ...row.settings, s3_enabled: b.s3_enabled } : row.settings,
      public_access: b.public_access,
      backup_enabled: b.backup_enabled,
      settings_generation: settingsChange ? () => 'settings_generation + 1' : undefined,
      project_uuid: b.project_id,
    },
    'uuid = :uuid',
    { uuid: row.uuid },
  );
  await tx.audit({
    action: `${operationArea(row)}.${verb}`,
    resourceUuid: row.uuid,
    before: snapshotOf(before),
    after: snapshotOf(after),
  });
  if (!settingsChange || !LIVE_STATES.includes(row.state)) return; // provisioning applies the settings itself
  await enqueueSync(tx, caller, row.uuid, operationArea(row), after.settings_generation);
}

/**
 * ADD-11: moves the add-on or service to resetting / deleting (guarded: from a live state, or
 * for a delete also from the provisioning ones) and enqueues the destructive workflow. A
 * deleted database takes its read replicas with it, and its connection variables leave the
 * app's environment.
 */
export async function destroyDataService(
  tx: Tx,
  caller: Caller,
  row: AddonRow,
  mode: 'reset' | 'delete',
): Promise<void> {
  const area = operationArea(row);
  const from =
    mode === 'reset' ? LIVE_STATES : [...LIVE_STATES, 'pending', 'processing', 'creating', 'stopped', 'restoring'];
  const before = await tx.m.findOneBy(Addon, { uuid: row.uuid });
  const [after] = await updateWhereReturning(
    tx.m,
    Addon,
    { state: mode === 'reset' ? 'resetting' : 'deleting' },
    'uuid = :uuid AND state IN (:...from)',
    { uuid: row.uuid, from },
  );
  if (!after)
    throw conflict(`the ${area === 'service' ? 'service' : 'add-on'} is ${row.state}; try again once it is running`);
  if (mode === 'delete') {
    await tx.m.update(Addon, { replica_of: row.uuid }, { state: 'deleting' });
    if (row.app_uuid && row.type !== 'cronjob' && !row.replica_of)
      await markNeedsRedeploy(tx.m, { kind: 'app', uuid: row.app_uuid });
  }
  await tx.audit({
    action: `${area}.${mode === 'reset' ? 'reset_database' : 'delete'}`,
    resourceUuid: row.uuid,
    before: snapshotOf(before),
    after: snapshotOf(after),
  });
  await tx.enqueue({
    operation: `${area}-${mode}`,
    workflow: 'addonDestroy',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: row.uuid,
    args: [{ addonUuid: row.uuid, mode }],
  });
}

/** ADD-06/07: a read replica of a postgres add-on (it shares the primary's credentials and public access). */
export async function createReplica(
  tx: Tx,
  caller: Caller,
  primary: AddonRow,
  b: { cpu_size: number; ram_size: number },
): Promise<Addon> {
  if (primary.type !== 'postgres')
    throw unprocessable(`read replicas exist for postgres only, not ${primary.type}`, [
      { path: 'path.id', message: 'not postgres' },
    ]);
  if (primary.replica_of)
    throw unprocessable('a read replica cannot have replicas of its own', [
      { path: 'path.id', message: 'is a read replica' },
    ]);
  const uuid = randomUUID();
  const replica = (await insertReturning(tx.m, Addon, {
    uuid,
    workspace_uuid: primary.workspace_uuid,
    kind: primary.kind,
    app_uuid: primary.app_uuid,
    project_uuid: primary.project_uuid,
    resource_uuid: primary.resource_uuid,
    type: 'postgres',
    name: `${primary.name.slice(0, 30)}-replica-${randomBytes(2).toString('hex')}`,
    label: `${primary.label} (replica)`,
    state: 'pending',
    quota: { ...primary.quota, cpu_size: b.cpu_size, ram_size: b.ram_size },
    settings: {},
    replica_of: primary.uuid,
    cluster_id: `c-${uuid}`,
  }))!;
  await tx.audit({ action: 'addon.create_replica', resourceUuid: uuid, before: null, after: snapshotOf(replica) });
  await tx.enqueue({
    operation: 'addon-replica',
    workflow: 'addonProvision',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: uuid,
    args: [{ addonUuid: uuid }],
  });
  return replica;
}

/** Stops (data kept, state `stopped`) or starts (state `creating`, then the live status) an add-on or service. */
export async function changeDataServiceState(
  tx: Tx,
  caller: Caller,
  row: AddonRow,
  action: 'start' | 'stop',
): Promise<void> {
  const stop = action === 'stop';
  const before = await tx.m.findOneBy(Addon, { uuid: row.uuid });
  const [after] = await updateWhereReturning(
    tx.m,
    Addon,
    { state: stop ? 'stopped' : 'creating', settings_generation: () => 'settings_generation + 1' },
    'uuid = :uuid AND state IN (:...from)',
    { uuid: row.uuid, from: stop ? LIVE_STATES : ['stopped'] },
  );
  if (!after)
    throw conflict(
      stop
        ? `cannot stop: the ${row.kind === 'service' ? 'service' : 'add-on'} is ${row.state}`
        : `cannot start: it is ${row.state}, not stopped`,
    );
  await tx.audit({
    action: `${operationArea(row)}.change_state`,
    resourceUuid: row.uuid,
    before: snapshotOf(before),
    after: snapshotOf(after),
  });
  await enqueueSync(tx, caller, row.uuid, operationArea(row), after.settings_generation);
}

/**
 * Restores a postgres add-on or service (BKP-04..08): its audit entry (what was asked; the
 * workflow changes the rows) and the addonRestore start (`<area>-restore/<uuid>`) in this
 * transaction. One restore per database at a time: with the row locked, a restore still in
 * the outbox or running is a 409.
 */
export async function restoreDataService(
  tx: Tx,
  caller: Caller,
  row: AddonRow,
  b: RestoreBody,
): Promise<{ message: string }> {
  const from = await restoreChoice(tx.m, row, b);
  const locked = await tx.m.findOne(Addon, { where: { uuid: row.uuid }, lock: { mode: 'pessimistic_write' } });
  const state = locked?.state ?? 'deleting';
  if (!LIVE_STATES.includes(state)) throw conflict(`the database is ${state}; restore once it is running`);
  const area = operationArea(row);
  const operation = `${area}-restore`;
  if (await tx.deps.outbox.inFlight(tx.m, workflowIdOf(operation, row.uuid)))
    throw conflict('a restore of this database is already running');
  const toNewCluster = b.to_new_cluster ?? false;
  await tx.audit({
    action: `${area}.restore`,
    resourceUuid: row.uuid,
    before: null,
    after: {
      restore_from:
        'backupName' in from
          ? { backup_name: from.backupName }
          : 'targetTime' in from
            ? { target_time: from.targetTime }
            : 'latest',
      to_new_cluster: toNewCluster,
    },
  });
  await tx.enqueue({
    operation,
    workflow: 'addonRestore',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: row.uuid,
    args: [{ addonUuid: row.uuid, from, toNewCluster }],
  });
  const what =
    'backupName' in from
      ? `backup ${from.backupName}`
      : 'targetTime' in from
        ? `the state at ${from.targetTime}`
        : 'the latest backup';
  return {
    message: toNewCluster
      ? `Restoring ${what} into a new cluster beside ${row.name}; the current database is not touched.`
      : `Restoring ${what} in place: the current data of ${row.name} is replaced.`,
  };
}
