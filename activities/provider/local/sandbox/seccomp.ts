import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';

/**
 * The system calls app code may not make (they fail with EPERM), after the container
 * runtimes' default profile (Docker's and Podman's): kernel modules and keyrings, mounting
 * and namespaces (no new user namespace to regain capabilities in), clocks, swap, reboot,
 * BPF and perf events, raw I/O ports, NUMA policy, userfaultfd, file handles. ptrace and
 * process_vm_* stay allowed, as they do there on current kernels: the PID namespace limits
 * them to the workload's own processes.
 */
export const DENIED_SYSCALLS = [
  'acct',
  'add_key',
  'bpf',
  'clock_adjtime',
  'clock_settime',
  'create_module',
  'delete_module',
  'finit_module',
  'fsconfig',
  'fsmount',
  'fsopen',
  'fspick',
  'get_kernel_syms',
  'get_mempolicy',
  'init_module',
  'ioperm',
  'iopl',
  'kcmp',
  'kexec_file_load',
  'kexec_load',
  'keyctl',
  'lookup_dcookie',
  'mbind',
  'mount',
  'mount_setattr',
  'move_mount',
  'move_pages',
  'name_to_handle_at',
  'nfsservctl',
  'open_by_handle_at',
  'open_tree',
  'perf_event_open',
  'pivot_root',
  'query_module',
  'quotactl',
  'reboot',
  'request_key',
  'set_mempolicy',
  'setns',
  'settimeofday',
  'stime',
  'swapoff',
  'swapon',
  'sysfs',
  '_sysctl',
  'syslog',
  'umount',
  'umount2',
  'unshare',
  'uselib',
  'userfaultfd',
  'ustat',
  'vm86',
  'vm86old',
];

/** Where Debian's python3-seccomp (libseccomp's bindings) is, for the system's Python. */
const SYSTEM_PYTHON = '/usr/bin/python3';

/**
 * Compiles the filter with libseccomp (Debian's python3-seccomp: the library every container
 * runtime uses, not BPF written by hand): default allow, DENIED_SYSCALLS fail with EPERM, for
 * the native ABI and the 32-bit ones (x86, x32) a process could switch to.
 */
const COMPILE = `
import errno, sys, seccomp
f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
for arch in (seccomp.Arch.X86, seccomp.Arch.X32):
    try:
        f.add_arch(arch)
    except Exception:
        pass
for name in sys.argv[2:]:
    try:
        f.add_rule(seccomp.ERRNO(errno.EPERM), name)
    except Exception:
        pass  # not a system call of these ABIs
with open(sys.argv[1], 'wb') as out:
    f.export_bpf(out)
`;

const compiled = new Map<string, string | null>();

/**
 * The compiled filter (bubblewrap's `--seccomp` reads it), or null when libseccomp's bindings
 * are missing. Compiled once per process; written beside and renamed into place, so a
 * sandbox starting in another process (another Berth on this machine) never reads half a file.
 */
export function compileSeccompFilter(dir = '/run/berth'): string | null {
  const known = compiled.get(dir);
  if (known !== undefined) return known;
  let result: string | null = null;
  if (existsSync(SYSTEM_PYTHON)) {
    const file = path.join(dir, 'seccomp.bpf');
    const partial = `${file}.${process.pid}`;
    try {
      mkdirSync(dir, { recursive: true, mode: 0o755 });
      execFileSync(SYSTEM_PYTHON, ['-c', COMPILE, partial, ...DENIED_SYSCALLS], { stdio: 'ignore', timeout: 10_000 });
      renameSync(partial, file);
      result = file;
    } catch {
      rmSync(partial, { force: true });
    }
  }
  compiled.set(dir, result);
  return result;
}
