import { randomBytes } from 'node:crypto';
import type { Isolation } from '../sandbox/isolation';
import type { ContainerReplicas } from '../apps/supervisor';
import type { PodmanConfig } from './config';
import { applyLimits, cgroupName, type SandboxOwner } from '../sandbox/isolation';
import { containerWorkload, removeContainer } from './container-run';
import { memoryPeaked } from './cgroups';

/** The label every container of an app carries (its leftovers are found by it). */
export const APP_LABEL = 'berth.app';

/**
 * The replicas of one image release: each start is a `podman run` of the pinned image under
 * a name of its own (`berth-<app>-<release>-<run>-web<n>-<start>`), with the app's variables,
 * PORT, its quota and its uid. The supervisor starts `podman run` inside the replica's own
 * network namespace (the launcher's), so the container's host network is that namespace; with
 * the workload network its resolver is the gateway's (internal names resolve in it too).
 */
export function imageReplicas(
  iso: Isolation,
  cfg: PodmanConfig,
  input: {
    appUuid: string;
    releaseId: string;
    image: string;
    env: Record<string, string>;
    memoryBytes: number;
    cpus: number;
    /** The host id the container's root is (the app's id range); null: no user namespace. */
    idBase: number | null;
    /** Storage volumes (already opened to the container's ids: volume-grants.ts). */
    mounts: { source: string; target: string }[];
    /** Told once which variables podman cannot pass (it reads them itself). */
    onDropped?: (names: string[]) => void;
  },
): ContainerReplicas {
  let starts = 0;
  // one run of the release (a rollout of the same digest boots beside the one serving): names never meet
  const run = randomBytes(3).toString('hex');
  let told = false;
  const owner: SandboxOwner = { kind: 'app', id: input.appUuid };
  return {
    outOfMemory: () => memoryPeaked(iso, owner),
    replica(index) {
      const name = `berth-${input.appUuid}-${input.releaseId}-${run}-web${index}-${++starts}`;
      // the app's cgroup with its quota (as for process replicas): the containers are made below it
      applyLimits(iso, owner, { memoryBytes: input.memoryBytes, cpus: input.cpus });
      const { workload, dropped } = containerWorkload(
        cfg,
        {
          name,
          image: input.image,
          memoryBytes: input.memoryBytes,
          cpus: input.cpus,
          idBase: input.idBase,
          mounts: input.mounts,
          dns: iso.network?.gateway,
          cgroupParent: iso.cgroups ? `/berth/${cgroupName(owner)}` : null,
          labels: { [APP_LABEL]: input.appUuid },
        },
        input.env,
      );
      if (dropped.length > 0 && !told) {
        told = true;
        input.onDropped?.(dropped);
      }
      return { workload, remove: () => void removeContainer(iso, cfg, name).catch(() => {}) };
    },
  };
}
