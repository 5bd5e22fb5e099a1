import type { Isolation } from '../sandbox/isolation';
import { launch, SYSTEM_PATH } from '../sandbox/launcher';
import type { PodmanConfig } from './config';
import { PODMAN } from './runtime';

export interface PodmanResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment of every podman command: the system's PATH and Berth's two configuration files. */
export function podmanEnv(cfg: PodmanConfig): Record<string, string> {
  return { PATH: SYSTEM_PATH, ...cfg.env };
}

/**
 * Runs one podman command to its end through the launcher, as Berth (podman runs as root:
 * it drops the container's own privileges itself). Each output line goes to `onLine` as it
 * comes (a build log); stdout and stderr are answered whole.
 */
export async function runPodman(
  iso: Isolation,
  cfg: PodmanConfig,
  args: string[],
  options: { onLine?: (line: string) => void; timeoutMs?: number } = {},
): Promise<PodmanResult> {
  const launched = await launch(iso, { sandbox: null, command: [PODMAN, ...args], env: podmanEnv(cfg) });
  const { child } = launched;
  const out = { stdout: '', stderr: '' };
  for (const name of ['stdout', 'stderr'] as const) {
    let partial = '';
    child[name]!.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      out[name] += text;
      if (!options.onLine) return;
      const lines = (partial + text).split('\n');
      partial = lines.pop()!;
      for (const line of lines) if (line.trim()) options.onLine(line);
    });
    child[name]!.on('end', () => {
      if (partial.trim()) options.onLine?.(partial);
    });
  }
  const timer = options.timeoutMs ? setTimeout(() => launched.kill('SIGKILL'), options.timeoutMs) : null;
  const code = await new Promise<number | null>((resolve) => {
    child.once('error', (err) => {
      out.stderr += err.message;
      resolve(127);
    });
    child.once('close', (c) => resolve(c));
  });
  if (timer) clearTimeout(timer);
  return { code, ...out };
}

/** podman's own reason from its output: the last `Error: ...` line, without the prefix. */
export function podmanReason(result: PodmanResult): string {
  const lines = result.stderr
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const error = [...lines].reverse().find((l) => l.startsWith('Error: '));
  return (error ?? lines.at(-1) ?? `podman exited with code ${result.code}`).replace(/^Error: /, '');
}
