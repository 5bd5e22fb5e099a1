import { randomBytes, randomUUID } from 'node:crypto';
import * as yup from 'yup';
import { cronProblem, DEFAULT_INTERVAL_MINUTES, MAX_INTERVAL_MINUTES } from '../../domain/data';
import { one } from '../../entities/sql';
import { recordAudit, snapshot } from '../audit';
import { write, type Tx } from '../commands/audited-write';
import { findAddon, findApp, viewOf } from '../data-services';
import { conflict, unprocessable } from '../problem';
import { route, type AnyRouteContext } from '../route';
import { int, obj, oneOf, str } from '../schemas/common';
import { addonSchema, cronjobRunSchema, loadAppAddons, messageSchema, type AddonRow } from '../views/addons';
import { iso } from '../views/common';

const TAG = 'cron jobs';
type AppParams = { uuid: string };
type JobParams = { uuid: string; id: string };
type Ctx = AnyRouteContext;

const scheduleFields = {
  label: str().trim().min(1).max(100),
  command: str().trim().min(1).max(4000),
  schedule_type: oneOf(['cron', 'interval'] as const),
  cron: str().max(200),
  interval: int().min(1).max(MAX_INTERVAL_MINUTES),
};
const createBody = obj({
  ...scheduleFields,
  label: scheduleFields.label.required('label is required'),
  command: scheduleFields.command.required('command is required'),
  cron: scheduleFields.cron.when('schedule_type', {
    is: 'cron',
    then: (s) => s.required('cron is required when schedule_type is cron'),
  }),
  /** CRN-04: accepted and discarded (the name is server-assigned). */
  name: str().max(200),
});
const updateBody = obj(scheduleFields);
type CreateBody = yup.InferType<typeof createBody>;
type UpdateBody = yup.InferType<typeof updateBody>;

/** The schedule settings after a create or update; a refusal is a 422 naming the field. */
function schedule(current: Record<string, unknown>, b: UpdateBody): Record<string, unknown> {
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

async function enqueueSync(ctx: Ctx, tx: Tx, uuid: string, generation: number) {
  await tx.enqueue({
    operation: 'cronjob-sync',
    workflow: 'cronjobSync',
    workspaceUuid: ctx.caller.workspaceUuid,
    resourceUuid: uuid,
    subId: String(generation),
    args: [{ cronjobUuid: uuid }],
  });
}

export const cronjobRoutes = [
  route<AppParams>({
    method: 'get',
    path: '/apps/{uuid}/cronjobs',
    requires: 'cronjobs.read',
    tag: TAG,
    summary: "List an app's cron jobs (add-on shaped, type cronjob), newest first",
    response: yup.array(addonSchema),
    async handler(ctx) {
      const app = await findApp(ctx, ctx.params.uuid);
      return (await loadAppAddons(ctx.deps.dataSource.manager, ctx.deps.secretBox, [app.uuid])).get(app.uuid)!.cronjobs;
    },
  }),
  route<AppParams, {}, CreateBody>({
    method: 'post',
    path: '/apps/{uuid}/cronjobs',
    requires: 'cronjobs.write',
    tag: TAG,
    status: 201,
    body: createBody,
    audit: 'cronjob.create',
    summary:
      'Create a cron job: label and command required; schedule_type interval (every `interval` minutes, default 60) or cron (5-field `cron`); a sent name is discarded',
    response: addonSchema,
    async handler(ctx) {
      const settings = schedule({}, ctx.body);
      return write(ctx, async (tx) => {
        const m = tx.m;
        const app = await findApp(ctx, ctx.params.uuid, m);
        const id = randomUUID();
        await m.query(
          `INSERT INTO addons (uuid, workspace_uuid, kind, app_uuid, project_id, resource_uuid, type, name, label, state, settings)
           VALUES ($1, $2, 'addon', $3, $4, $5, 'cronjob', $6, $7, 'pending', $8)`,
          [
            id,
            ctx.caller.workspaceUuid,
            app.uuid,
            app.project_id,
            app.resource_uuid,
            `cronjob-${randomBytes(4).toString('hex')}`,
            ctx.body.label,
            JSON.stringify(settings),
          ],
        );
        await recordAudit(m, ctx, { resourceUuid: id, after: await snapshot(m, 'addons', id) });
        await enqueueSync(ctx, tx, id, 0);
        ctx.koa.set('Location', `/api/v1/apps/${ctx.params.uuid}/cronjobs/${id}`);
        return viewOf(ctx, id, m);
      });
    },
  }),
  route<JobParams>({
    method: 'get',
    path: '/apps/{uuid}/cronjobs/{id}',
    requires: 'cronjobs.read',
    tag: TAG,
    summary: 'Show a cron job',
    response: addonSchema,
    async handler(ctx) {
      await findApp(ctx, ctx.params.uuid);
      return viewOf(ctx, (await findAddon(ctx, { appUuid: ctx.params.uuid, cronjob: true }, ctx.params.id)).uuid);
    },
  }),
  route<JobParams, {}, UpdateBody>({
    method: 'put',
    path: '/apps/{uuid}/cronjobs/{id}',
    requires: 'cronjobs.write',
    tag: TAG,
    body: updateBody,
    audit: 'cronjob.update',
    summary: "Update a cron job's label, command or schedule (its Temporal Schedule follows)",
    response: addonSchema,
    async handler(ctx) {
      return write(ctx, async (tx) => {
        const m = tx.m;
        await findApp(ctx, ctx.params.uuid, m);
        const row: AddonRow = await findAddon(ctx, { appUuid: ctx.params.uuid, cronjob: true }, ctx.params.id, m);
        const settings = schedule(row.settings, ctx.body);
        const before = await snapshot(m, 'addons', row.uuid);
        const updated = await one<{ g: number }>(
          m,
          `UPDATE addons SET label = COALESCE($2, label), settings = $3, settings_generation = settings_generation + 1, updated_at = now()
            WHERE uuid = $1 AND state <> 'deleting' RETURNING settings_generation AS g`,
          [row.uuid, ctx.body.label ?? null, JSON.stringify(settings)],
        );
        if (!updated) throw conflict('the cron job is being deleted');
        await recordAudit(m, ctx, { resourceUuid: row.uuid, before, after: await snapshot(m, 'addons', row.uuid) });
        await enqueueSync(ctx, tx, row.uuid, updated.g);
        return viewOf(ctx, row.uuid, m);
      });
    },
  }),
  route<JobParams>({
    method: 'delete',
    path: '/apps/{uuid}/cronjobs/{id}',
    requires: 'cronjobs.write',
    tag: TAG,
    status: 202,
    audit: 'cronjob.delete',
    summary: 'Delete a cron job and its Temporal Schedule',
    response: messageSchema,
    async handler(ctx) {
      return write(ctx, async (tx) => {
        const m = tx.m;
        await findApp(ctx, ctx.params.uuid, m);
        const row = await findAddon(ctx, { appUuid: ctx.params.uuid, cronjob: true }, ctx.params.id, m);
        const before = await snapshot(m, 'addons', row.uuid);
        const updated = await one<{ g: number }>(
          m,
          `UPDATE addons SET state = 'deleting', settings_generation = settings_generation + 1, updated_at = now() WHERE uuid = $1
            RETURNING settings_generation AS g`,
          [row.uuid],
        );
        await recordAudit(m, ctx, { resourceUuid: row.uuid, before, after: await snapshot(m, 'addons', row.uuid) });
        await enqueueSync(ctx, tx, row.uuid, updated!.g);
        return { message: `Deleting cron job ${row.label} and its schedule.` };
      });
    },
  }),
  route<JobParams>({
    method: 'get',
    path: '/apps/{uuid}/cronjobs/{id}/logs',
    requires: 'cronjobs.read',
    tag: TAG,
    summary: "The cron job's log stream: its last 50 runs, newest first, each with its log",
    response: yup.array(cronjobRunSchema),
    async handler(ctx) {
      await findApp(ctx, ctx.params.uuid);
      const job = await findAddon(ctx, { appUuid: ctx.params.uuid, cronjob: true }, ctx.params.id);
      const runs: Array<{
        uuid: string;
        started_at: Date;
        finished_at: Date | null;
        exit_code: number | null;
        log: string;
      }> = await ctx.deps.dataSource.query(
        `SELECT uuid, started_at, finished_at, exit_code, log FROM cronjob_runs WHERE cronjob_uuid = $1 ORDER BY started_at DESC LIMIT 50`,
        [job.uuid],
      );
      return runs.map((r) => ({
        uuid: r.uuid,
        started_at: iso(r.started_at)!,
        finished_at: iso(r.finished_at),
        exit_code: r.exit_code,
        log: r.log,
      }));
    },
  }),
];
