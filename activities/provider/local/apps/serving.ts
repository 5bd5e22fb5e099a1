import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import type { AppRunSpec } from '../../../../platform/drivers/apps';
import type { AppsContext } from './context';
import { releaseRun } from './release-run';
import type { AppStateRow } from './state';
import { ReleaseSupervisor, type ReleaseRun, type SupervisorHooks } from './supervisor';

/** What a supervisor reports, passed on to the app's workflow and the ingress while it serves the app. */
export function hooksFor(ctx: AppsContext, appUuid: string, sup: ReleaseSupervisor): SupervisorHooks {
  const report = (what: string, fn: () => Promise<void>) => {
    fn().catch((err) =>
      ctx.logger.warn({ appUuid, err: (err as Error).message }, `local apps driver: could not report ${what}`),
    );
  };
  const serving = () => ctx.runtime(appUuid).serving === sup;
  return {
    backendsChanged: () => {
      if (serving()) ctx.ingress.setBackends(appUuid, sup.backends());
    },
    crashLoop: (detail) =>
      report('a crash loop', async () => {
        await ctx.events.health(appUuid, 'app_crash_loop', detail);
        await ctx.events.liveStatus(appUuid, 'failed');
      }),
    unhealthy: (detail) =>
      report('an unhealthy replica', async () => {
        await ctx.events.health(appUuid, 'app_unhealthy', detail);
        await ctx.events.liveStatus(appUuid, 'problem');
      }),
    recovered: () => report('a recovery', () => ctx.events.liveStatus(appUuid, 'running')),
    gaveUp: (detail) =>
      report('giving up', async () => {
        if (serving()) ctx.ingress.setBackends(appUuid, []);
        await ctx.store.update(appUuid, { gave_up_at: 'now' });
        await ctx.events.health(appUuid, 'app_stopped', detail);
      }),
  };
}

/** A supervisor of the release that serves (crashes restarted and reported) or of a rollout's (fail fast). */
export function superviseRelease(ctx: AppsContext, run: ReleaseRun, failFast: boolean): ReleaseSupervisor {
  return new ReleaseSupervisor(run, { isolation: ctx.isolation, log: ctx.log, timing: ctx.timing, failFast });
}

/**
 * Starts the app's current release with `spec` (not a rollout: crashes are restarted and
 * reported). A static release is handed to the ingress.
 */
export async function startServing(ctx: AppsContext, appUuid: string, row: AppStateRow, spec: AppRunSpec) {
  const rt = ctx.runtime(appUuid);
  if (!row.release_id) return;
  const manifest = await ctx.builder.manifest(appUuid, row.release_id);
  if (!manifest)
    throw ApplicationFailure.nonRetryable(
      `release ${row.release_id} of app ${appUuid} is missing`,
      'LocalReleaseMissing',
    );
  if (manifest.kind === 'static') {
    rt.staticRoot = path.join(ctx.layout.releaseDir(appUuid, row.release_id), manifest.staticRoot ?? '.');
    ctx.ingress.setBackends(appUuid, [{ kind: 'static', root: rt.staticRoot }]);
    return;
  }
  const sup = superviseRelease(ctx, await releaseRun(ctx, appUuid, row.release_id, manifest, spec), false);
  sup.hooks = hooksFor(ctx, appUuid, sup);
  rt.serving = sup;
  await sup.start();
}
