import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { HTPASSWD, REGISTRY_BINARY } from '../activities/provider/local/images/registry';
import { IMAGE_RUNTIME_PACKAGES } from '../activities/provider/local/images/runtime';
import { VPC_FABRIC_PACKAGES } from '../activities/provider/local/vpcs';

/** A Debian package the local driver uses, found by one of its binaries. */
export interface MachinePackage {
  /** Debian's package name. */
  pkg: string;
  /** Its binary (or a file it installs), by absolute path: present means installed. */
  binary: string;
  /** For a package without a fixed path (a Python module): whether it is installed. */
  installed?: () => boolean;
  /** What it gives, for the line that says it is being installed. */
  why: string;
}

/** What the local driver needs of the machine: tenant isolation, and the runtime of container images. */
export const LOCAL_DRIVER_PACKAGES: MachinePackage[] = [
  { pkg: 'bubblewrap', binary: '/usr/bin/bwrap', why: "each app's own view of processes and files" },
  { pkg: 'nftables', binary: '/usr/sbin/nft', why: "the workload network's policy, enforced by the kernel" },
  { pkg: 'iproute2', binary: '/usr/sbin/ip', why: 'a network namespace for every workload' },
  {
    pkg: 'python3-seccomp',
    binary: '/usr/lib/python3/dist-packages',
    installed: () => pythonModule('seccomp'),
    why: "libseccomp, which compiles app code's seccomp filter",
  },
  ...IMAGE_RUNTIME_PACKAGES.map((p) => ({ ...p, why: 'container images (container_registry apps)' })),
  { pkg: 'docker-registry', binary: REGISTRY_BINARY, why: "the platform's image registry (BERTH_REGISTRY)" },
  { pkg: 'apache2-utils', binary: HTPASSWD, why: "the platform registry's login (htpasswd)" },
  ...VPC_FABRIC_PACKAGES.map((p) => ({ ...p, why: "VPCs' resolvers" })),
];

/** Whether the system's Python has a module (Debian's python3-* packages put them in dist-packages). */
function pythonModule(name: string): boolean {
  try {
    return readdirSync('/usr/lib/python3/dist-packages').some((f) => f === name || f.startsWith(`${name}.`));
  } catch {
    return false;
  }
}

const present = (p: MachinePackage) => (p.installed ? p.installed() : existsSync(p.binary));

/**
 * Installs the missing packages with apt-get (one `apt-get update` first), saying so, when
 * Berth runs as root on a machine with apt-get; elsewhere it only says what is missing (the
 * start banner then says which isolation is off). Answers the packages still missing.
 */
export function ensureMachinePackages(wanted: MachinePackage[], say: (line: string) => void): MachinePackage[] {
  const missing = wanted.filter((p) => !present(p));
  if (missing.length === 0) return [];
  const names = missing.map((p) => p.pkg).join(' ');
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) {
    say(`berth: ${names} missing (${missing.map((p) => p.why).join('; ')}); install it as root to turn that on`);
    return missing;
  }
  say(`berth: installing ${names} from Debian's packages (${missing.map((p) => p.why).join('; ')})`);
  const apt = (args: string[]) =>
    spawnSync('/usr/bin/apt-get', args, {
      stdio: 'ignore',
      timeout: 10 * 60_000,
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', DEBIAN_FRONTEND: 'noninteractive' },
    });
  apt(['update', '-q']);
  apt(['install', '-y', '-q', ...missing.map((p) => p.pkg)]);
  const still = missing.filter((p) => !present(p));
  if (still.length > 0) say(`berth: could not install ${still.map((p) => p.pkg).join(' ')} (apt-get failed)`);
  return still;
}
