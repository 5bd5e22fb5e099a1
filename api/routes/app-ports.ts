import { randomInt, randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import * as yup from 'yup';
import { EXTERNAL_PORT_POOL } from '../../domain/apps';
import { one, rows } from '../../entities/sql';
import { recordAudit } from '../audit';
import { write, type Tx } from '../commands/audited-write';
import { conflict, notFound, unprocessable } from '../problem';
import { route } from '../route';
import { bool, int, obj, oneOf, str, timestamp, uuid } from '../schemas/common';
import { isoRequired } from '../views/common';
import { assertChangeable, findApp, type Ctx } from './app-support';
import { enqueueCommand } from './apps';

const TAG = 'ports';

export const portSchema = obj({
  id: int().required(),
  port: int().required(),
  protocol: oneOf(['tcp', 'udp'] as const).required(),
  public: bool().required(),
  external_port: int().nullable().defined(),
  public_endpoint: str().nullable().defined(),
  endpoint_id: uuid().nullable().defined(),
  endpoint_hostname: str().nullable().defined(),
  endpoint_ipv4_primary: str().nullable().defined(),
  endpoint_ipv4_secondary: str().nullable().defined(),
  endpoint_ipv6_primary: str().nullable().defined(),
  endpoint_ipv6_secondary: str().nullable().defined(),
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
});

const portBody = obj({
  port: int().min(1).max(65535).required(),
  protocol: oneOf(['tcp', 'udp'] as const),
  public: bool(),
});
const portParams = yup.object({
  uuid: uuid().required(),
  port_id: yup.number().integer().min(1).max(2147483647).required(),
});

interface PortRow {
  id: number;
  internal_port: number;
  protocol: 'tcp' | 'udp';
  public: boolean;
  external_port: number | null;
  created_at: Date;
  updated_at: Date;
  endpoint_id: string | null;
  hostname: string | null;
  ipv4_primary: string | null;
  ipv4_secondary: string | null;
  ipv6_primary: string | null;
  ipv6_secondary: string | null;
}

const PORT_SELECT = `SELECT p.id, p.internal_port, p.protocol, p.public, p.external_port, p.created_at, p.updated_at,
    e.endpoint_id, e.hostname, host(e.ipv4_primary) AS ipv4_primary, host(e.ipv4_secondary) AS ipv4_secondary,
    host(e.ipv6_primary) AS ipv6_primary, host(e.ipv6_secondary) AS ipv6_secondary
  FROM app_ports p LEFT JOIN resource_endpoints e ON e.resource_uuid = p.resource_uuid AND p.public`;

/** A port; a public one carries the flat endpoint fields, public_endpoint (hostname:port) and external_port. */
function portView(p: PortRow) {
  const pub = p.public && p.external_port !== null;
  return {
    id: p.id,
    port: p.internal_port,
    protocol: p.protocol,
    public: p.public,
    external_port: pub ? p.external_port : null,
    public_endpoint: pub && p.hostname ? `${p.hostname}:${p.external_port}` : null,
    endpoint_id: pub ? p.endpoint_id : null,
    endpoint_hostname: pub ? p.hostname : null,
    endpoint_ipv4_primary: pub ? p.ipv4_primary : null,
    endpoint_ipv4_secondary: pub ? p.ipv4_secondary : null,
    endpoint_ipv6_primary: pub ? p.ipv6_primary : null,
    endpoint_ipv6_secondary: pub ? p.ipv6_secondary : null,
    created_at: isoRequired(p.created_at),
    updated_at: isoRequired(p.updated_at),
  };
}

async function loadPort(m: Pick<EntityManager, 'query'>, appUuid: string, id: number) {
  const p = await one<PortRow>(m, `${PORT_SELECT} WHERE p.app_uuid = $1 AND p.id = $2`, [appUuid, id]);
  if (!p) throw notFound('port');
  return portView(p);
}

/**
 * The resource's public endpoint (its load balancer), made on its first public port. The
 * embedded platform has no public addresses: they come from the documentation ranges
 * (198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32).
 */
async function ensureEndpoint(m: Pick<EntityManager, 'query'>, resourceUuid: string): Promise<void> {
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
 * Takes an external port from the resource's pool for the port: the first free one from
 * a random place in the pool, never the port's internal number. The unique index on
 * (resource, external port) decides races; a clash retries from another place.
 */
async function allocateExternalPort(
  m: Pick<EntityManager, 'query'>,
  portId: number,
  resourceUuid: string,
  internalPort: number,
): Promise<void> {
  const size = EXTERNAL_PORT_POOL.high - EXTERNAL_PORT_POOL.low + 1;
  for (let attempt = 0; attempt < 20; attempt++) {
    const start = EXTERNAL_PORT_POOL.low + randomInt(0, size);
    const candidate = await one<{ p: number }>(
      m,
      `SELECT p FROM generate_series($1::int, $2::int) p
        WHERE p <> $3 AND NOT EXISTS (SELECT 1 FROM app_ports WHERE resource_uuid = $4 AND external_port = p)
        ORDER BY (p - $5 + $6) % $6 LIMIT 1`,
      [EXTERNAL_PORT_POOL.low, EXTERNAL_PORT_POOL.high, internalPort, resourceUuid, start, size],
    );
    if (!candidate) throw unprocessable('no external port is left in the pool of this compute resource');
    await m.query(`SAVEPOINT external_port`);
    try {
      await m.query(`UPDATE app_ports SET public = true, external_port = $2, updated_at = now() WHERE id = $1`, [
        portId,
        candidate.p,
      ]);
      await m.query(`RELEASE SAVEPOINT external_port`);
      return;
    } catch (err) {
      await m.query(`ROLLBACK TO SAVEPOINT external_port`);
      if ((err as { driverError?: { code?: string } }).driverError?.code !== '23505') throw err;
    }
  }
  throw conflict('the external port pool is busy; try again');
}

/**
 * A port for an audit diff, under `port` (ports have numeric ids, so their entries name the
 * app as the resource and the port here); null once it is gone.
 */
async function portRecord(
  m: Pick<EntityManager, 'query'>,
  appUuid: string,
  id: number,
): Promise<Record<string, unknown> | null> {
  const p = await one(
    m,
    `SELECT id, internal_port, protocol, public, external_port FROM app_ports WHERE app_uuid = $1 AND id = $2`,
    [appUuid, id],
  );
  return p ? { port: p } : null;
}

/** Tells the app's workflow to apply its ports (one coalesced command while one is in flight). */
async function syncPorts(ctx: Ctx, tx: Tx, appUuid: string): Promise<void> {
  await enqueueCommand(ctx, tx, appUuid, 'sync_ports', 'sync-ports');
}

export const appPortRoutes = [
  route<{ uuid: string }>({
    method: 'get',
    path: '/apps/{uuid}/ports',
    requires: 'apps.read',
    tag: TAG,
    summary: "List an app's ports",
    response: yup.array(portSchema),
    async handler(ctx) {
      const app = await findApp(ctx, ctx.params.uuid);
      return (
        await rows<PortRow>(ctx.deps.dataSource, `${PORT_SELECT} WHERE p.app_uuid = $1 ORDER BY p.id`, [app.uuid])
      ).map(portView);
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof portBody>>({
    method: 'post',
    path: '/apps/{uuid}/ports',
    requires: 'apps.ports',
    tag: TAG,
    status: 201,
    audit: 'port.create',
    summary: 'Add a port; with public: true it gets an external port from the pool and the endpoint fields',
    body: portBody,
    response: portSchema,
    handler: (ctx) =>
      write(ctx, async (tx) => {
        const m = tx.m;
        const app = await findApp(ctx, ctx.params.uuid, m);
        assertChangeable(app);
        const protocol = ctx.body.protocol ?? 'tcp';
        const created = await one<{ id: number }>(
          m,
          `INSERT INTO app_ports (app_uuid, resource_uuid, internal_port, protocol) VALUES ($1, $2, $3, $4)
         ON CONFLICT (app_uuid, internal_port, protocol) DO NOTHING RETURNING id`,
          [app.uuid, app.resource_uuid, ctx.body.port, protocol],
        );
        if (!created) throw conflict(`the app already has ${protocol} port ${ctx.body.port}`);
        if (ctx.body.public) {
          await ensureEndpoint(m, app.resource_uuid);
          await allocateExternalPort(m, created.id, app.resource_uuid, ctx.body.port);
        }
        await recordAudit(m, ctx, {
          resourceType: 'app',
          resourceUuid: app.uuid,
          after: await portRecord(m, app.uuid, created.id),
        });
        await syncPorts(ctx, tx, app.uuid);
        return loadPort(m, app.uuid, created.id);
      }),
  }),
  route<{ uuid: string; port_id: number }>({
    method: 'delete',
    path: '/apps/{uuid}/ports/{port_id}',
    requires: 'apps.ports',
    tag: TAG,
    status: 204,
    params: portParams,
    audit: 'port.delete',
    summary: 'Remove a port (its external port returns to the pool)',
    handler: (ctx) =>
      write(ctx, async (tx) => {
        const m = tx.m;
        const app = await findApp(ctx, ctx.params.uuid, m);
        assertChangeable(app);
        const deleted = await rows(
          m,
          `DELETE FROM app_ports WHERE app_uuid = $1 AND id = $2 RETURNING id, internal_port, protocol, public, external_port`,
          [app.uuid, ctx.params.port_id],
        );
        if (deleted.length === 0) throw notFound('port');
        await recordAudit(m, ctx, { resourceType: 'app', resourceUuid: app.uuid, before: { port: deleted[0] } });
        await syncPorts(ctx, tx, app.uuid);
        return undefined;
      }),
  }),
  route<{ uuid: string; port_id: number }>({
    method: 'patch',
    path: '/apps/{uuid}/ports/{port_id}/expose_publicly',
    requires: 'apps.ports',
    tag: TAG,
    params: portParams,
    audit: 'port.expose',
    summary: 'Make a port public: it gets an external port from the pool and the endpoint fields',
    response: portSchema,
    handler: (ctx) =>
      write(ctx, async (tx) => {
        const m = tx.m;
        const app = await findApp(ctx, ctx.params.uuid, m);
        assertChangeable(app);
        const port = await one<{ id: number; internal_port: number; public: boolean }>(
          m,
          `SELECT id, internal_port, public FROM app_ports WHERE app_uuid = $1 AND id = $2 FOR UPDATE`,
          [app.uuid, ctx.params.port_id],
        );
        if (!port) throw notFound('port');
        const before = await portRecord(m, app.uuid, port.id);
        if (!port.public) {
          await ensureEndpoint(m, app.resource_uuid);
          await allocateExternalPort(m, port.id, app.resource_uuid, port.internal_port);
        }
        await recordAudit(m, ctx, {
          resourceType: 'app',
          resourceUuid: app.uuid,
          before,
          after: await portRecord(m, app.uuid, port.id),
        });
        if (!port.public) await syncPorts(ctx, tx, app.uuid);
        return loadPort(m, app.uuid, port.id);
      }),
  }),
  route<{ uuid: string; port_id: number }>({
    method: 'patch',
    path: '/apps/{uuid}/ports/{port_id}/make_private',
    requires: 'apps.ports',
    tag: TAG,
    params: portParams,
    audit: 'port.make_private',
    summary: 'Make a port private: its external port returns to the pool',
    response: portSchema,
    handler: (ctx) =>
      write(ctx, async (tx) => {
        const m = tx.m;
        const app = await findApp(ctx, ctx.params.uuid, m);
        assertChangeable(app);
        const before = await portRecord(m, app.uuid, ctx.params.port_id);
        const changed = await rows(
          m,
          `UPDATE app_ports SET public = false, external_port = NULL, updated_at = now() WHERE app_uuid = $1 AND id = $2 AND public RETURNING id`,
          [app.uuid, ctx.params.port_id],
        );
        const view = await loadPort(m, app.uuid, ctx.params.port_id);
        await recordAudit(m, ctx, {
          resourceType: 'app',
          resourceUuid: app.uuid,
          before,
          after: await portRecord(m, app.uuid, ctx.params.port_id),
        });
        if (changed.length > 0) await syncPorts(ctx, tx, app.uuid);
        return view;
      }),
  }),
];
