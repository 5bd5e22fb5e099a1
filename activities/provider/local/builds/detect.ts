import { DOCKERFILE_NAMES } from '../images/dockerfile';
import { lstatSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { ReleaseManifest } from '../contracts';

/** One install or build step, run as the app's uid in the release directory. */
export interface BuildStep {
  argv: string[];
}

/** What detection decided: the steps to run and the manifest's run fields. */
export interface BuildPlan {
  stack: ReleaseManifest['stack'];
  kind: ReleaseManifest['kind'];
  web: string | null;
  staticRoot: string | null;
  path: string[];
  steps: BuildStep[];
}

export type Detection = { plan: BuildPlan; notes: string[] } | { reason: string; notes: string[] };

export const NOTHING_DETECTED =
  'nothing to build: Berth looks for a Procfile with a web: line, a package.json (Node), ' +
  'a requirements.txt or pyproject.toml (Python), or an index.html at the root or in public/ (a static site)';

/**
 * A regular file of the checked-out tree, no symbolic link on the way: the builder runs as
 * Berth, so a link to a file of the machine must never be read (nor served as a static site).
 */
function plain(dir: string, relative: string): boolean {
  const parts = relative.split('/');
  let at = dir;
  for (const [i, part] of parts.entries()) {
    at = path.join(at, part);
    try {
      const st = lstatSync(at);
      if (st.isSymbolicLink()) return false;
      if (i === parts.length - 1) return st.isFile();
      if (!st.isDirectory()) return false;
    } catch {
      return false;
    }
  }
  return false;
}

const read = (dir: string, relative: string) => readFileSync(path.join(dir, relative), 'utf8');

interface Language {
  steps: BuildStep[];
  path: string[];
  /** The web command this language's convention gives, or why there is none. */
  web: { command: string } | { missing: string };
}

/** The `web:` command of a Procfile (`<process type>: <command>` lines), if any. */
export function procfileWeb(content: string): string | null {
  for (const line of content.split(/\r?\n/)) {
    const m = /^\s*web\s*:\s*(.+?)\s*$/.exec(line);
    if (m) return m[1]!;
  }
  return null;
}

function node(dir: string, notes: string[]): Language | { reason: string } {
  let pkg: { scripts?: Record<string, unknown> };
  try {
    pkg = JSON.parse(read(dir, 'package.json')) as typeof pkg;
  } catch (err) {
    return { reason: `package.json is not valid JSON: ${(err as Error).message}` };
  }
  const scripts = pkg.scripts && typeof pkg.scripts === 'object' ? pkg.scripts : {};
  const lock = ['package-lock.json', 'npm-shrinkwrap.json'].find((f) => plain(dir, f));
  const steps: BuildStep[] = [{ argv: lock ? ['npm', 'ci'] : ['npm', 'install'] }];
  notes.push(lock ? `Node: ${lock} found: npm ci` : 'Node: no package-lock.json: npm install');
  if (typeof scripts.build === 'string') {
    steps.push({ argv: ['npm', 'run', 'build'] });
    notes.push('Node: a build script: npm run build');
  }
  const web =
    typeof scripts.start === 'string' || plain(dir, 'server.js')
      ? { command: 'npm start' }
      : {
          missing:
            'package.json has no start script (and there is no server.js): add a start script or a Procfile with a web: line',
        };
  return { steps, path: ['node_modules/.bin'], web };
}

function python(dir: string, notes: string[]): Language {
  const steps: BuildStep[] = [{ argv: ['python3', '-m', 'venv', '.venv'] }];
  const pip = ['.venv/bin/python', '-m', 'pip', 'install', '--disable-pip-version-check', '--no-input'];
  if (plain(dir, 'requirements.txt')) {
    steps.push({ argv: [...pip, '-r', 'requirements.txt'] });
    notes.push('Python: requirements.txt: a virtualenv in .venv, pip install -r requirements.txt');
  } else {
    steps.push({ argv: [...pip, '.'] });
    notes.push('Python: pyproject.toml: a virtualenv in .venv, pip install .');
  }
  const entry = ['app.py', 'main.py'].find((f) => plain(dir, f));
  const web = entry
    ? { command: `python ${entry}` }
    : {
        missing:
          'a Python app needs a Procfile with a web: line (e.g. `web: gunicorn app:app --bind 0.0.0.0:$PORT`), or an app.py or main.py to run',
      };
  return { steps, path: ['.venv/bin'], web };
}

/**
 * Buildpack-style detection in a checked-out release: a Procfile's `web:` line wins for the
 * command, the language's install steps run all the same (Node: package.json; Python:
 * requirements.txt or pyproject.toml); otherwise a folder with an index.html (root, or
 * public/) is a static site the ingress serves. `notes` says what was decided, for the log.
 */
export function detect(dir: string): Detection {
  const notes: string[] = [];
  const has = (f: string) => plain(dir, f);
  let web: string | null = null;
  if (has('Procfile')) {
    web = procfileWeb(read(dir, 'Procfile'));
    notes.push(web ? `Procfile: web: ${web}` : 'Procfile has no web: line: ignored');
  }
  const languages: Array<{ stack: 'node' | 'python'; lang: Language }> = [];
  if (has('package.json')) {
    const n = node(dir, notes);
    if ('reason' in n) return { reason: n.reason, notes };
    languages.push({ stack: 'node', lang: n });
  }
  if (has('requirements.txt') || has('pyproject.toml')) languages.push({ stack: 'python', lang: python(dir, notes) });
  const steps = languages.flatMap((l) => l.lang.steps);
  const paths = languages.flatMap((l) => l.lang.path);
  if (web) return { plan: { stack: 'procfile', kind: 'process', web, staticRoot: null, path: paths, steps }, notes };
  const first = languages[0];
  if (first) {
    const found = languages.find((l) => 'command' in l.lang.web);
    if (!found) return { reason: (first.lang.web as { missing: string }).missing, notes };
    const command = (found.lang.web as { command: string }).command;
    notes.push(`web command: ${command}`);
    return { plan: { stack: found.stack, kind: 'process', web: command, staticRoot: null, path: paths, steps }, notes };
  }
  const staticRoot = has('index.html') ? '.' : has('public/index.html') ? 'public' : null;
  if (staticRoot) {
    notes.push(`static site: index.html in ${staticRoot === '.' ? 'the root folder' : 'public/'}, served as is`);
    return { plan: { stack: 'static', kind: 'static', web: null, staticRoot, path: [], steps: [] }, notes };
  }
  return { reason: NOTHING_DETECTED, notes };
}

/** Whether the tree has a Dockerfile or Containerfile at its root (a plain file). */
export const hasDockerfile = (dir: string): boolean => DOCKERFILE_NAMES.some((name) => plain(dir, name));

/**
 * The Dockerfile of a Dockerfile build, relative to the context: the one named (a plain file
 * of the tree: no link, nothing outside), else `Dockerfile` or `Containerfile` at the root.
 */
export function findDockerfile(dir: string, named: string): { file: string } | { reason: string } {
  if (named) {
    const rel = path.posix.normalize(named);
    if (path.posix.isAbsolute(rel) || rel.split('/').includes('..'))
      return { reason: `the Dockerfile "${named}" is outside the build context` };
    return plain(dir, rel) ? { file: rel } : { reason: `the Dockerfile "${named}" is not a file of the commit` };
  }
  const file = DOCKERFILE_NAMES.find((name) => plain(dir, name));
  return file
    ? { file }
    : { reason: `no ${DOCKERFILE_NAMES.join(' or ')} at the root of the commit (builder dockerfile)` };
}
