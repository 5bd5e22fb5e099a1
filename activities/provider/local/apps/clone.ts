import { chmod, chown, mkdir, rename, rm } from 'node:fs/promises';
import { appUid } from '../../../../platform/local-layout';
import { run } from '../data/commands';
import type { AppsContext } from './context';

/** The app's own volume: `layout.volumeDir(<app uuid>)`, 0700 owned by the app's uid. */
export async function ensureAppVolume(ctx: Pick<AppsContext, 'layout' | 'isolation'>, appUuid: string) {
  const dir = ctx.layout.volumeDir(appUuid);
  await mkdir(dir, { recursive: true });
  if (ctx.isolation.uidSwitch) await chown(dir, appUid(appUuid), appUid(appUuid));
  await chmod(dir, 0o700);
  return dir;
}

/**
 * Copies of one app's volume into another (a clone). The copy is made in a staging folder
 * beside the target and swapped in whole once complete, so the target is never half a
 * copy. A call for a target whose copy is still under way in this process (a retry after a
 * timeout, while the first attempt still copies) joins it; only a staging folder no live
 * copy writes (left by a previous process) is removed and started over.
 */
export class VolumeCopies {
  private readonly live = new Map<string, { done: Promise<void>; stop: () => void }>();

  constructor(
    private readonly ctx: Pick<AppsContext, 'layout' | 'isolation'>,
    /** The copy program (cp; tests give a slower one). */
    private readonly copyTool = 'cp',
  ) {}

  clone(sourceAppUuid: string, targetAppUuid: string): Promise<void> {
    const running = this.live.get(targetAppUuid);
    if (running) return running.done;
    const entry = { done: Promise.resolve(), stop: () => {} };
    entry.done = this.copy(sourceAppUuid, targetAppUuid, (stop) => (entry.stop = stop)).finally(() => {
      if (this.live.get(targetAppUuid) === entry) this.live.delete(targetAppUuid);
    });
    this.live.set(targetAppUuid, entry);
    return entry.done;
  }

  /** Stops a copy into the app's volume under way (its clone is given up) and waits for it to end. */
  async abandon(appUuid: string): Promise<void> {
    const running = this.live.get(appUuid);
    if (!running) return;
    running.stop();
    await running.done.catch(() => {});
  }

  private async copy(sourceAppUuid: string, targetAppUuid: string, started: (stop: () => void) => void) {
    const { layout, isolation } = this.ctx;
    const target = layout.volumeDir(targetAppUuid);
    const staging = `${target}.copying`;
    await rm(staging, { recursive: true, force: true });
    await mkdir(staging, { recursive: true, mode: 0o700 });
    await run([this.copyTool, '-a', `${layout.volumeDir(sourceAppUuid)}/.`, staging], { started }).catch(
      (err: Error) => {
        if (!/No such file/.test(err.message)) throw err;
      },
    );
    if (isolation.uidSwitch) await run(['chown', '-R', `${appUid(targetAppUuid)}:${appUid(targetAppUuid)}`, staging]);
    await chmod(staging, 0o700);
    await rm(target, { recursive: true, force: true });
    await rename(staging, target);
  }
}
