import { randomBytes, randomUUID } from 'node:crypto';
import { cronProblem, DEFAULT_INTERVAL_MINUTES } from '../../domain/data';
import { Addon } from '../../entities/addon';
import { insertReturning, updateWhereReturning } from '../../entities/sql';
import type { Caller } from '../context';
import { conflict, unprocessable } from '../problem';
import type { AddonRow } from '../views/addons';
import { appForChange, ruleScope } from './apps';
import { snapshotOf, type Tx } from './audited-write';

/** What a create or an update of a cron job may send. */
export interface CronjobInput {
  label?: string;
  command?: string;
  schedule_type?: 'cron' | 'interval';
  cron?: string;
  interval?: number;
}

/** The schedule settings after a create or update; a refusal is a 422 naming the field. */
export function schedule(current: Record<string, unknown>, b: CronjobInput): Record<string, unknown> {
  const type = b.schedule_type ?? (current.schedule_type as string | undefined) ?? 'interval';
  if (type === 'cron') {
    const cron = b.cron ?? (current.cron as string | undefined);
    if (!cron)
      throw unprocessable('cron is required when schedule_type is cron', [
        { path: 'body.cron', message: 'required when schedule_type is cron' },
      ]);
    const problem = cronProblem(cron);
    if (problem) throw unprocessable(problem, [{ path: 'body.cron', message: problem }]);
    if (b.interval !== undefined)
      throw unprocessable('interval is for schedule_type interval', [
        { path: 'body.interval', message: 'only for schedule_type interval' },
      ]);
    return { schedule_type: 'cron', cron: cron.trim().split(/\s+/).join(' '), command: b.command ?? current.command };
  }
  if (b.cron !== undefined)
    throw unprocessable('cron is for schedule_type cron', [
      { path: 'body.cron', message: 'only for schedule_type cron' },
    ]);
  const interval = b.interval ?? (current.interval as number | undefined) ?? DEFAULT_INTERVAL_MINUTES;
  return { schedule_type: 'interval', interval, command: b.command ?? current.command };
}

/** Enqueues the sync of the cron job's Temporal Schedule to its settings of `generation`. */
async function enqueueSync(tx: Tx, caller: Caller, uuid: string, generation: number) {
  await tx.enqueue({
    operation: 'cronjob-sync',
    workflow: 'cronjobSync',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: uuid,
    subId: String(generation),
    args: [{ cronjobUuid: uuid }],
  });
}

/** POST /apps/{uuid}/cronjobs: a cron job (an add-on of type cronjob, pending) of an app the caller can see; its schedule is synced. */
export async function createCronjob(
  tx: Tx,
  caller: Caller,
  input: CronjobInput & { appUuid: string; label: string },
): Promise<Addon> {
  const settings = schedule({}, input);
  const app = await appForChange(tx, ruleScope(tx, caller), input.appUuid, false);
  const job = (await insertReturning(tx.m, Addon, {
    uuid: randomUUID(),
    workspace_uuid: caller.workspaceUuid,
    kind: 'addon',
    app_uuid: app.uuid,
    project_uuid: app.project_uuid,
    resource_uuid: app.resource_uuid,
    type: 'cronjob',
    name: `cronjob-${randomBytes(4).toString('hex')}`,
    label: input.label,
    state: 'pending',
    settings,
  }))!;
  await tx.audit({ action: 'cronjob.create', resourceUuid: job.uuid, after: snapshotOf(job) });
  await enqueueSync(tx, caller, job.uuid, 0);
  return job;
}

/** Moves the cron job on a generation with `changes` (none when `guard` refuses it), records `action` and syncs its schedule. */
async function changeCronjob(
  tx: Tx,
  caller: Caller,
  row: AddonRow,
  action: string,
  changes: Partial<Addon>,
  guard: string,
): Promise<Addon | undefined> {
  const before = await tx.m.findOneBy(Addon, { uuid: row.uuid });
  const [after] = await updateWhereReturning(
    tx.m,
    Addon,
    { ...changes, settings_generation: () => 'settings_generation + 1' },
    `uuid = :uuid${guard}`,
    { uuid: row.uuid },
  );
  if (!after) return undefined;
  await tx.audit({ action, resourceUuid: row.uuid, before: snapshotOf(before), after: snapshotOf(after) });
  await enqueueSync(tx, caller, row.uuid, after.settings_generation);
  return after;
}

/** PUT /apps/{uuid}/cronjobs/{id}: label, command or schedule (its Temporal Schedule follows); not while it is being deleted. */
export async function updateCronjob(tx: Tx, caller: Caller, row: AddonRow, b: CronjobInput): Promise<void> {
  const settings = schedule(row.settings, b);
  const changed = await changeCronjob(
    tx,
    caller,
    row,
    'cronjob.update',
    { label: b.label, settings },
    ` AND state <> 'deleting'`,
  );
  if (!changed) throw conflict('the cron job is being deleted');
}

/** DELETE /apps/{uuid}/cronjobs/{id}: the cron job moves to deleting; the sync removes its Temporal Schedule. */
export async function deleteCronjob(tx: Tx, caller: Caller, row: AddonRow): Promise<void> {
  await changeCronjob(tx, caller, row, 'cronjob.delete', { state: 'deleting' }, '');
}
