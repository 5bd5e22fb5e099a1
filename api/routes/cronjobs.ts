import * as yup from 'yup';
import { MAX_INTERVAL_MINUTES } from '../../domain/data';
import { write } from '../commands/audited-write';
import { createCronjob, deleteCronjob, updateCronjob } from '../commands/cronjobs';
import { findApp } from './app-support';
import { appAddon, viewOf } from './data-service-support';
import { route } from '../route';
import { int, obj, oneOf, str } from '../schemas/common';
import { addonSchema, cronjobRunSchema, loadAppAddons, messageSchema } from '../views/addons';
import { iso } from '../views/common';

const TAG = 'cron jobs';
type AppParams = { uuid: string };
type JobParams = { uuid: string; id: string };

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
    handler: (ctx) =>
      write(ctx, async (tx) => {
        const job = await createCronjob(tx, ctx.caller, { ...ctx.body, appUuid: ctx.params.uuid });
        ctx.koa.set('Location', `/api/v1/apps/${ctx.params.uuid}/cronjobs/${job.uuid}`);
        return viewOf(ctx, job.uuid, tx.m);
      }),
  }),
  route<JobParams>({
    method: 'get',
    path: '/apps/{uuid}/cronjobs/{id}',
    requires: 'cronjobs.read',
    tag: TAG,
    summary: 'Show a cron job',
    response: addonSchema,
    async handler(ctx) {
      return viewOf(ctx, (await appAddon(ctx, undefined, { cronjob: true })).uuid);
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
    handler: (ctx) =>
      write(ctx, async (tx) => {
        const row = await appAddon(ctx, tx.m, { cronjob: true });
        await updateCronjob(tx, ctx.caller, row, ctx.body);
        return viewOf(ctx, row.uuid, tx.m);
      }),
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
    handler: (ctx) =>
      write(ctx, async (tx) => {
        const row = await appAddon(ctx, tx.m, { cronjob: true });
        await deleteCronjob(tx, ctx.caller, row);
        return { message: `Deleting cron job ${row.label} and its schedule.` };
      }),
  }),
  route<JobParams>({
    method: 'get',
    path: '/apps/{uuid}/cronjobs/{id}/logs',
    requires: 'cronjobs.read',
    tag: TAG,
    summary: "The cron job's log stream: its last 50 runs, newest first, each with its log",
    response: yup.array(cronjobRunSchema),
    async handler(ctx) {
      const job = await appAddon(ctx, undefined, { cronjob: true });
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
