import { randomInt, randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { EXTERNAL_PORT_POOL } from '../../domain/apps';
import { AppPort } from '../../entities/app';
import { insertReturning, one } from '../../entities/sql';
import type { Caller } from '../context';
import { conflict, notFound, unprocessable } from '../problem';
import { assertChangeable } from '../routes/app-support';
import { appForChange, ruleScope } from './apps';
import { enqueueAppCommand } from './app-state';
import type { Tx } from './audited-write';

type PortFields = Pick<AppPort, 'id' | 'internal_port' | 'protocol' | 'public' | 'external_port'>;

/**
 * A port for an audit diff, under `port` (ports have numeric ids, so their entries name the
 * app as the resource and the port here); null once it is gone.
 */
function portRecord(p: PortFields | null | undefined): Record<string, unknown> | null {
  return p
    ? {
        port: {
          id: p.id,
          internal_port: p.internal_port,
          protocol: p.protocol,
          public: p.public,
          external_port: p.external_port,
        },
      }
    : null;
}

/** The app of a port change: one the caller can see, neither being deleted nor cloned (not locked: the ports' indexes order the changes). */
async function portsApp(tx: Tx, caller: Caller, appUuid: string) {
  const app = await appForChange(tx, ruleScope(tx, caller), appUuid, false);
  assertChangeable(app);
  return app;
}

/** Records the port change under `action`, naming the app as the resource. */
function auditPort(tx: Tx, action: string, appUuid: string, before: PortFields | null, after: PortFields | null) {
  return tx.audit({
    action,
    resourceType: 'app',
    resourceUuid: appUuid,
    before: portRecord(before),
    after: portRecord(after),
  });
}

/** Tells the app's workflow to apply its ports (one coalesced command while one is in flight). */
async function syncPorts(tx: Tx, caller: Caller, appUuid: string): Promise<void> {
  await enqueueAppCommand(tx, caller.workspaceUuid, appUuid, 'sync_ports', 'sync-ports');
}

/**
 * The resource's public endpoint (its load balancer), made on its first public port. The
 * embedded platform has no public addresses: they come from the documentation ranges
 * (198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32).
 */
async function ensureEndpoint(m: EntityManager, resourceUuid: string): Promise<void> {
  // raw: an INSERT .. SELECT computing the row from a sequence value, inet arithmetic and the region (no builder form)
  await m.query(
    `INSERT INTO resource_endpoints (resource_uuid, endpoint_id, seq, hostname, ipv4_primary, ipv4_secondary, ipv6_primary, ipv6_secondary)
     SELECT $1, $2, s.n, 'lb-' || s.n || '.' || g.domain, '198.51.100.0'::inet + (1 + s.n % 254), '203.0.113.0'::inet + (1 + s.n % 254),
            '2001:db8::'::inet + (s.n * 2), '2001:db8::'::inet + (s.n * 2 + 1)
       FROM (SELECT nextval(pg_get_serial_sequence('resource_endpoints', 'seq')) AS n) s,
            compute_resources c JOIN regions g ON g.id = c.region_id
      WHERE c.uuid = $1
     ON CONFLICT (resource_uuid) DO NOTHING`,
    [resourceUuid, randomUUID()],
  );
}

/**
 * Makes the port public with an external port from the resource's pool: the first free one
 * from a random place in the pool, never the port's internal number. The unique index on
 * (resource, external port) decides races; a clash retries from another place.
 */
async function allocateExternalPort(m: EntityManager, port: AppPort): Promise<AppPort> {
  const size = EXTERNAL_PORT_POOL.high - EXTERNAL_PORT_POOL.low + 1;
  for (let attempt = 0; attempt < 20; attempt++) {
    const start = EXTERNAL_PORT_POOL.low + randomInt(0, size);
    // raw: a free number of a generated series in a rotated order (no builder form)
    const candidate = await one<{ p: number }>(
      m,
      `SELECT p FROM generate_series($1::int, $2::int) p
        WHERE p <> $3 AND NOT EXISTS (SELECT 1 FROM app_ports WHERE resource_uuid = $4 AND external_port = p)
        ORDER BY (p - $5 + $6) % $6 LIMIT 1`,
      [EXTERNAL_PORT_POOL.low, EXTERNAL_PORT_POOL.high, port.internal_port, port.resource_uuid, start, size],
    );
    if (!candidate) throw unprocessable('no external port is left in the pool of this compute resource');
    await m.query(`SAVEPOINT external_port`);
    try {
      await m.update(AppPort, { id: port.id }, { public: true, external_port: candidate.p });
      await m.query(`RELEASE SAVEPOINT external_port`);
      return { ...port, public: true, external_port: candidate.p };
    } catch (err) {
      await m.query(`ROLLBACK TO SAVEPOINT external_port`);
      if ((err as { driverError?: { code?: string } }).driverError?.code !== '23505') throw err;
    }
  }
  throw conflict('the external port pool is busy; try again');
}

/** POST /apps/{uuid}/ports: a port (one per number and protocol); a public one gets an external port and the resource's endpoint. */
export async function createPort(
  tx: Tx,
  caller: Caller,
  input: { appUuid: string; port: number; protocol?: 'tcp' | 'udp'; public?: boolean },
): Promise<AppPort> {
  const app = await portsApp(tx, caller, input.appUuid);
  const protocol = input.protocol ?? 'tcp';
  // ON CONFLICT DO NOTHING: the unique index on (app, number, protocol) decides
  let port = await insertReturning(
    tx.m,
    AppPort,
    { app_uuid: app.uuid, resource_uuid: app.resource_uuid, internal_port: input.port, protocol },
    { ignoreConflict: true },
  );
  if (!port) throw conflict(`the app already has ${protocol} port ${input.port}`);
  if (input.public) {
    await ensureEndpoint(tx.m, app.resource_uuid);
    port = await allocateExternalPort(tx.m, port);
  }
  await auditPort(tx, 'port.create', app.uuid, null, port);
  await syncPorts(tx, caller, app.uuid);
  return port;
}

/** DELETE /apps/{uuid}/ports/{port_id}: the port is removed (its external port returns to the pool). */
export async function deletePort(tx: Tx, caller: Caller, input: { appUuid: string; portId: number }): Promise<void> {
  const app = await portsApp(tx, caller, input.appUuid);
  const deleted = await tx.m
    .createQueryBuilder()
    .delete()
    .from(AppPort)
    .where('app_uuid = :app AND id = :id', { app: app.uuid, id: input.portId })
    .returning(['id', 'internal_port', 'protocol', 'public', 'external_port'])
    .execute();
  const port = (deleted.raw as PortFields[])[0];
  if (!port) throw notFound('port');
  await auditPort(tx, 'port.delete', app.uuid, port, null);
  await syncPorts(tx, caller, app.uuid);
}

/** PATCH .../expose_publicly: a private port gets an external port and the resource's endpoint; a public one stays as it is. */
export async function exposePort(tx: Tx, caller: Caller, input: { appUuid: string; portId: number }): Promise<void> {
  const app = await portsApp(tx, caller, input.appUuid);
  const port = await tx.m.findOne(AppPort, {
    where: { app_uuid: app.uuid, id: input.portId },
    lock: { mode: 'pessimistic_write' },
  });
  if (!port) throw notFound('port');
  let after = port;
  if (!port.public) {
    await ensureEndpoint(tx.m, app.resource_uuid);
    after = await allocateExternalPort(tx.m, port);
  }
  await auditPort(tx, 'port.expose', app.uuid, port, after);
  if (!port.public) await syncPorts(tx, caller, app.uuid);
}

/** PATCH .../make_private: a public port gives its external port back to the pool; a private one stays as it is. */
export async function makePortPrivate(
  tx: Tx,
  caller: Caller,
  input: { appUuid: string; portId: number },
): Promise<void> {
  const app = await portsApp(tx, caller, input.appUuid);
  const before = await tx.m.findOne(AppPort, { where: { app_uuid: app.uuid, id: input.portId } });
  if (!before) throw notFound('port');
  // guarded: only a public port changes
  const changed = await tx.m
    .createQueryBuilder()
    .update(AppPort)
    .set({ public: false, external_port: null })
    .where('app_uuid = :app AND id = :id AND public', { app: app.uuid, id: input.portId })
    .execute();
  const after = changed.affected ? { ...before, public: false, external_port: null } : before;
  await auditPort(tx, 'port.make_private', app.uuid, before, after);
  if (changed.affected) await syncPorts(tx, caller, app.uuid);
}
