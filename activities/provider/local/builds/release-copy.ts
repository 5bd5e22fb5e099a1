import { execFile } from 'node:child_process';
import { lstat, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * Copies a release folder (`cp -a`) for another app and makes it that app's: owned by its
 * uid (when given) and closed to others. A Python virtualenv names its folder in its
 * scripts' `#!` lines and activate files: those are rewritten to the new place.
 */
export async function copyReleaseTo(from: string, to: string, uid: number | null): Promise<void> {
  await run('cp', ['-a', '--', from, to], { timeout: 10 * 60_000 });
  await repointVenv(from, to);
  if (uid !== null) await run('chown', ['-R', `${uid}:${uid}`, '--', to], { timeout: 10 * 60_000 });
  await run('chmod', ['-R', 'go-rwx', '--', to], { timeout: 10 * 60_000 });
}

async function repointVenv(from: string, to: string): Promise<void> {
  const bin = path.join(to, '.venv', 'bin');
  let names: string[];
  try {
    names = await readdir(bin);
  } catch {
    return;
  }
  const oldVenv = path.join(from, '.venv');
  const newVenv = path.join(to, '.venv');
  for (const name of names) {
    const file = path.join(bin, name);
    if (!(await lstat(file)).isFile()) continue; // the interpreter's symlinks
    const text = await readFile(file, 'utf8');
    if (text.includes(oldVenv)) await writeFile(file, text.split(oldVenv).join(newVenv));
  }
  const cfg = path.join(to, '.venv', 'pyvenv.cfg');
  const text = await readFile(cfg, 'utf8').catch(() => null);
  if (text?.includes(oldVenv)) await writeFile(cfg, text.split(oldVenv).join(newVenv));
}
