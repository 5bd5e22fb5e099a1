import { createHash } from 'node:crypto';
import path from 'node:path';
import type { AppRunSpec } from '../../../../platform/drivers/apps';
import type { AppsContext } from './context';
import { releaseRun } from './release-run';
import { hooksFor, superviseRelease } from './serving';

/**
 * Rollouts of the local apps driver: the pending release boots beside the serving one;
 * once every replica is ready the ingress switches to it and the old release stops. A
 * release that exits at boot or is not ready by the deadline is stopped: the old one keeps
 * serving, the reason is kept. What is pending survives a restart of Berth (local_apps).
 */
export class Rollouts {
  constructor(private readonly ctx: AppsContext) {}

  /** Records the release and its run spec as pending and queues the rollout (a retry of the same call changes nothing). */
  async request(appUuid: string, releaseId: string, spec: AppRunSpec): Promise<void> {
    const { store } = this.ctx;
    const row = await store.get(appUuid);
    const rt = this.ctx.runtime(appUuid);
    const asked = `${releaseId}:${createHash('sha256').update(JSON.stringify(spec)).digest('hex')}`;
    if (row?.pending_release_id === releaseId && rt.rolling?.run.releaseId === releaseId && rt.lastRollout === asked)
      return;
    rt.lastRollout = asked;
    await store.update(appUuid, {
      desired: 'running',
      gave_up_at: null,
      rollout_failure: null,
      pending_release_id: releaseId,
      pending_run_sealed: store.seal(spec),
    });
    this.queue(appUuid);
  }

  /** Runs the app's pending rollout after the one under way, which it supersedes (stopped at once). */
  queue(appUuid: string): void {
    const rt = this.ctx.runtime(appUuid);
    const superseded = rt.rolling;
    rt.rolling = null;
    if (superseded) void superseded.stop();
    const gen = ++rt.rolloutGen;
    rt.rollouts = rt.rollouts.then(() => this.perform(appUuid, gen));
  }

  private async perform(appUuid: string, gen: number): Promise<void> {
    const { ctx } = this;
    const rt = ctx.runtime(appUuid);
    const superseded = () => gen !== rt.rolloutGen;
    if (superseded()) return; // a newer rollout is queued behind this one
    try {
      const row = await ctx.store.get(appUuid);
      const releaseId = row?.pending_release_id;
      const spec = ctx.store.open(row?.pending_run_sealed ?? null);
      if (!releaseId || !spec) return;
      const manifest = await ctx.builder.manifest(appUuid, releaseId);
      if (!manifest) return await this.fail(appUuid, releaseId, `release ${releaseId} is missing on this machine`);
      if (rt.rolling) {
        const booting = rt.rolling;
        rt.rolling = null;
        await booting.stop();
      }
      if (manifest.kind === 'static') {
        if (superseded()) return;
        const old = rt.serving;
        rt.serving = null;
        rt.staticRoot = path.join(ctx.layout.releaseDir(appUuid, releaseId), manifest.staticRoot ?? '.');
        ctx.ingress.setBackends(appUuid, [{ kind: 'static', root: rt.staticRoot }]);
        if (old) old.hooks = null;
        await old?.stop();
        return await this.commit(appUuid, releaseId, row.pending_run_sealed);
      }
      const sup = superviseRelease(ctx, await releaseRun(ctx, appUuid, releaseId, manifest, spec), true);
      rt.rolling = sup;
      await sup.start();
      const booted = await sup.booted;
      if (rt.rolling !== sup) return; // stopped or superseded meanwhile
      rt.rolling = null;
      if (superseded()) {
        // a newer rollout was asked for while this one read its release and booted: it takes over
        await sup.stop();
        return;
      }
      if (!booted.ok) return await this.fail(appUuid, releaseId, booted.reason);
      const old = rt.serving;
      sup.hooks = hooksFor(ctx, appUuid, sup);
      rt.serving = sup;
      rt.staticRoot = null;
      ctx.ingress.setBackends(appUuid, sup.backends());
      if (old) old.hooks = null;
      await old?.stop();
      await this.commit(appUuid, releaseId, row.pending_run_sealed);
      ctx.log.berth(appUuid, `release ${releaseId} serves the app`);
    } catch (err) {
      ctx.logger.error({ appUuid, err: (err as Error).message }, 'local apps driver: rollout failed');
      await this.fail(appUuid, null, `the rollout failed: ${(err as Error).message}`).catch(() => {});
    }
  }

  private async commit(appUuid: string, releaseId: string, runSealed: string | null): Promise<void> {
    await this.ctx.store.update(appUuid, {
      release_id: releaseId,
      run_sealed: runSealed,
      pending_release_id: null,
      pending_run_sealed: null,
      rollout_failure: null,
    });
    this.ctx.pruneImages?.(appUuid);
  }

  private async fail(appUuid: string, releaseId: string | null, reason: string): Promise<void> {
    if (releaseId) this.ctx.log.berth(appUuid, `release ${releaseId} does not serve: ${reason}`);
    await this.ctx.store.update(appUuid, {
      pending_release_id: null,
      pending_run_sealed: null,
      rollout_failure: reason,
    });
  }
}
