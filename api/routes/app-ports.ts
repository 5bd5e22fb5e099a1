import type { EntityManager } from 'typeorm';
import * as yup from 'yup';
import { one, rows } from '../../entities/sql';
import { createPort, deletePort, exposePort, makePortPrivate } from '../commands/app-ports';
import { write, type Tx } from '../commands/audited-write';
import type { Caller } from '../context';
import { notFound } from '../problem';
import { route, type RouteContext } from '../route';
import { bool, int, obj, oneOf, str, timestamp, uuid } from '../schemas/common';
import { isoRequired } from '../views/common';
import { findApp } from './app-support';

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

/** The handler of a change of the port at /apps/{uuid}/ports/{port_id}: the command, then the port's view, in its transaction. */
function changedPort(command: (tx: Tx, caller: Caller, input: { appUuid: string; portId: number }) => Promise<void>) {
  return (ctx: RouteContext<{ uuid: string; port_id: number }, unknown, unknown>) =>
    write(ctx, async (tx) => {
      await command(tx, ctx.caller, { appUuid: ctx.params.uuid, portId: ctx.params.port_id });
      return loadPort(tx.m, ctx.params.uuid, ctx.params.port_id);
    });
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
        const port = await createPort(tx, ctx.caller, { ...ctx.body, appUuid: ctx.params.uuid });
        return loadPort(tx.m, port.app_uuid, port.id);
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
      write(ctx, (tx) => deletePort(tx, ctx.caller, { appUuid: ctx.params.uuid, portId: ctx.params.port_id })),
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
    handler: changedPort(exposePort),
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
    handler: changedPort(makePortPrivate),
  }),
];
