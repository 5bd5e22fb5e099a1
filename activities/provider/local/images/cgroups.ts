import { readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { cgroupName, type Isolation, type SandboxOwner } from '../sandbox/isolation';

/**
 * Whether the owner's memory use reached its limit since last asked (the peak is then reset).
 * On cgroup v1 the kernel counts an OOM kill (`oom_kill` of memory.oom_control) only in the
 * victim's own cgroup: a container's, which podman removes as it exits; the parent's counter
 * stays (measured). A container killed (137) while its app's group peaked at the limit ran
 * out of memory.
 */
export function memoryPeaked(iso: Isolation, owner: SandboxOwner): boolean {
  if (!iso.cgroups) return false;
  const dir = path.join(iso.cgroupRoot, 'memory', 'berth', cgroupName(owner));
  try {
    const peak = Number(readFileSync(path.join(dir, 'memory.max_usage_in_bytes'), 'utf8'));
    const limit = Number(readFileSync(path.join(dir, 'memory.limit_in_bytes'), 'utf8'));
    writeFileSync(path.join(dir, 'memory.max_usage_in_bytes'), '0');
    return peak >= limit - 2 ** 20;
  } catch {
    return false;
  }
}

/**
 * Removes the owner's group from the controllers podman made it in for its containers
 * (pids, blkio, devices...: the cgroupfs manager makes the parent in each), leaving memory
 * and cpu to removeLimits; a busy or absent one stays as it is.
 */
export function removeContainerParents(iso: Isolation, owner: SandboxOwner): void {
  if (!iso.cgroups) return;
  let controllers: string[];
  try {
    controllers = readdirSync(iso.cgroupRoot);
  } catch {
    return;
  }
  for (const c of controllers) {
    if (c === 'memory' || c === 'cpu') continue;
    try {
      rmdirSync(path.join(iso.cgroupRoot, c, 'berth', cgroupName(owner)));
    } catch {
      // busy, absent, or not a controller
    }
  }
}
