import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ClusterSpec } from '../../../../platform/drivers/data';
import { listenAddresses, logTail, pidAlive, secretsOf, serverLog, type Engine, type EngineContext } from './engine';
import { launch, PLATFORM_CLIENT_HOST, serverAddress } from '../sandbox/launcher';
import { asCluster, clusterOwner, clusterUid, DEFAULT_SEARCH_PATH, findBinary, giveTo, run } from './commands';
import type { ClusterRow } from './store';

const q = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
const id = (s: string) => `\`${s.replace(/`/g, '``')}\``;

/**
 * MariaDB (or MySQL) servers: `mariadb-install-db` creates the data directory, then
 * `mariadbd --no-defaults` runs with its options on the command line (port, bind address,
 * socket, pid file and log in the cluster's folder). root gets the cluster's sealed admin
 * password; the generated user owns the generated database. Administration goes through
 * the `mariadb` (or `mysql`) client over loopback.
 */
export class MysqlEngine implements Engine {
  private readonly client: string;
  private readonly installDb: string | null;

  constructor(
    private readonly ctx: EngineContext,
    private readonly bin: string,
  ) {
    const dir = path.dirname(bin);
    const near = `${dir}:${dir.replace(/sbin$/, 'bin')}:${DEFAULT_SEARCH_PATH}`;
    this.client = findBinary(['mariadb', 'mysql'], undefined, near) ?? 'mysql';
    this.installDb = findBinary(['mariadb-install-db', 'mysql_install_db'], undefined, near);
  }

  private paths(rowId: string) {
    const dir = this.ctx.dir(rowId);
    return {
      dir,
      data: path.join(dir, 'data'),
      pid: path.join(dir, 'mysqld.pid'),
      socket: path.join(dir, 'mysqld.sock'),
    };
  }

  async init(row: ClusterRow): Promise<void> {
    const p = this.paths(row.id);
    if (existsSync(path.join(p.dir, 'initialized'))) return;
    if (!this.installDb)
      throw new Error('mariadb-install-db (or mysql_install_db) is missing beside the server binary');
    await mkdir(p.dir, { recursive: true, mode: 0o700 });
    await giveTo(this.ctx.iso, p.dir, clusterUid(row.id));
    await run(
      asCluster(this.ctx.iso, row, [
        this.installDb,
        '--no-defaults',
        `--datadir=${p.data}`,
        '--auth-root-authentication-method=normal',
        '--skip-test-db',
      ]),
    );
    await writeFile(path.join(p.dir, 'initialized'), '');
    if (this.ctx.iso.uidSwitch) await chown(p.dir, clusterUid(row.id), clusterUid(row.id));
    await chmod(p.dir, 0o700);
  }

  async configure(): Promise<void> {
    // options are given on the command line at each start
  }

  alive(row: ClusterRow): boolean {
    return pidAlive(this.paths(row.id).pid) !== null;
  }

  async start(row: ClusterRow): Promise<void> {
    if (this.alive(row)) return;
    const p = this.paths(row.id);
    const bind = listenAddresses(row.id, row.public_access, this.ctx.host, this.ctx.iso.network?.gateway);
    const server = asCluster(this.ctx.iso, row, [
      this.bin,
      '--no-defaults',
      `--datadir=${p.data}`,
      `--port=${row.port}`,
      `--bind-address=${bind.join(',')}`, // MariaDB takes several, comma-separated
      `--socket=${p.socket}`,
      `--pid-file=${p.pid}`,
      `--log-error=${serverLog(this.ctx, row.id)}`,
      '--innodb-buffer-pool-size=64M',
    ]);
    // mariadbd stays in the foreground: run it detached, its output in the server log
    (await launch(server.iso, { ...server.workload, output: 'ignore' })).child.unref();
    for (let i = 0; i < 300; i++) {
      if (await this.ping(row, false)) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`mysql ${row.id} did not start: ${logTail(serverLog(this.ctx, row.id))}`);
  }

  async stop(row: ClusterRow): Promise<void> {
    const pid = pidAlive(this.paths(row.id).pid);
    if (!pid) return;
    process.kill(pid, 'SIGTERM');
    for (let i = 0; i < 300 && this.alive(row); i++) await new Promise((r) => setTimeout(r, 100));
  }

  /** Runs SQL as root over loopback (the sealed admin password, or none before setup set it). */
  private async sql(row: ClusterRow, statements: string, withPassword = true): Promise<string> {
    const env = { PATH: DEFAULT_SEARCH_PATH, MYSQL_PWD: withPassword ? secretsOf(this.ctx, row).admin : '' };
    return run(
      [
        this.client,
        '--no-defaults',
        '-h',
        serverAddress(clusterOwner(row.id), row.port).host,
        '-P',
        String(row.port),
        '-u',
        'root',
        '-N',
        '-B',
        '-e',
        statements,
      ],
      { env },
    );
  }

  private async ping(row: ClusterRow, withPassword = true): Promise<boolean> {
    try {
      return (await this.sql(row, 'SELECT 1', withPassword)).trim() === '1';
    } catch {
      return withPassword ? false : this.ping(row, true);
    }
  }

  async check(row: ClusterRow): Promise<boolean> {
    return this.ping(row);
  }

  async setup(row: ClusterRow, spec: ClusterSpec): Promise<void> {
    const user = row.username ?? 'app';
    const db = row.database ?? user;
    const admin = secretsOf(this.ctx, row).admin;
    const fresh = await this.sql(row, 'SELECT 1', false).then(
      () => true,
      () => false,
    );
    const statements = [
      ...(fresh
        ? [
            `ALTER USER 'root'@'localhost' IDENTIFIED BY ${q(admin)}`,
            `DROP USER IF EXISTS 'root'@'${PLATFORM_CLIENT_HOST}'`,
            `CREATE USER 'root'@'${PLATFORM_CLIENT_HOST}' IDENTIFIED BY ${q(admin)}`,
            `GRANT ALL ON *.* TO 'root'@'${PLATFORM_CLIENT_HOST}' WITH GRANT OPTION`,
          ]
        : []),
      `CREATE USER IF NOT EXISTS ${q(user)}@'%' IDENTIFIED BY ${q(spec.password ?? '')}`,
      `ALTER USER ${q(user)}@'%' IDENTIFIED BY ${q(spec.password ?? '')}`,
      `CREATE DATABASE IF NOT EXISTS ${id(db)}`,
      `GRANT ALL ON ${id(db)}.* TO ${q(user)}@'%'`,
      'FLUSH PRIVILEGES',
    ];
    await this.sql(row, statements.join('; '), !fresh);
  }

  async reset(row: ClusterRow): Promise<void> {
    const db = row.database ?? row.username ?? 'app';
    await this.sql(
      row,
      `DROP DATABASE IF EXISTS ${id(db)}; CREATE DATABASE ${id(db)}; GRANT ALL ON ${id(db)}.* TO ${q(row.username ?? 'app')}@'%'`,
    );
  }
}
