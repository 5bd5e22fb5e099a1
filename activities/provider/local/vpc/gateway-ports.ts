import { createSocket } from 'node:dgram';
import { hostname } from 'node:os';
import { ApplicationFailure } from '@temporalio/common';
import type { DataSource } from 'typeorm';
import { WIREGUARD_PORT } from '../../../../domain/wireguard';
import { one, rows } from '../../../../entities/sql';

/**
 * The machine's UDP ports of WireGuard gateways: each gateway gets one of its own, chosen
 * once (the lowest port of the range that no gateway holds and nothing on the machine
 * listens on) and kept in `vpc_vpn_gateways.listen_port`, so its endpoint, which
 * configuration files already handed out name, never changes across restarts. The column's
 * unique index settles two gateways choosing at once.
 */
export const GATEWAY_PORTS = { first: WIREGUARD_PORT, count: 1000 } as const;

/** Whether nothing listens on the UDP port (IPv4 and IPv6, every address). */
export async function udpPortFree(port: number): Promise<boolean> {
  const tryBind = (type: 'udp4' | 'udp6') =>
    new Promise<boolean>((resolve) => {
      const socket = createSocket({ type, ipv6Only: type === 'udp6' });
      socket.once('error', (err: NodeJS.ErrnoException) => {
        socket.close();
        // a machine without IPv6 has nothing listening there either
        resolve(err.code !== 'EADDRINUSE');
      });
      socket.bind(port, () => socket.close(() => resolve(true)));
    });
  return (await tryBind('udp4')) && (await tryBind('udp6'));
}

const UNIQUE_VIOLATION = '23505';

/** The gateway's port: the one it holds, else a free one, now held. */
export async function gatewayPort(db: DataSource, gatewayUuid: string): Promise<number> {
  const held = await one<{ listen_port: number | null }>(
    db,
    `SELECT listen_port FROM vpc_vpn_gateways WHERE uuid = $1`,
    [gatewayUuid],
  );
  if (!held) throw ApplicationFailure.nonRetryable(`gateway ${gatewayUuid} does not exist`, 'NotFound');
  if (held.listen_port !== null) return held.listen_port;
  const taken = new Set(
    (
      await rows<{ listen_port: number }>(db, `SELECT listen_port FROM vpc_vpn_gateways WHERE listen_port IS NOT NULL`)
    ).map((r) => r.listen_port),
  );
  for (let port = GATEWAY_PORTS.first; port < GATEWAY_PORTS.first + GATEWAY_PORTS.count; port++) {
    if (taken.has(port) || !(await udpPortFree(port))) continue;
    try {
      const set = await one<{ listen_port: number }>(
        db,
        `UPDATE vpc_vpn_gateways SET listen_port = COALESCE(listen_port, $2), updated_at = now()
          WHERE uuid = $1 RETURNING listen_port`,
        [gatewayUuid, port],
      );
      if (!set) throw ApplicationFailure.nonRetryable(`gateway ${gatewayUuid} does not exist`, 'NotFound');
      return set.listen_port;
    } catch (err) {
      if ((err as { code?: string }).code !== UNIQUE_VIOLATION) throw err;
      // another gateway took it meanwhile: the next one
    }
  }
  throw ApplicationFailure.nonRetryable(
    `no free UDP port for a WireGuard gateway in ${GATEWAY_PORTS.first}-${GATEWAY_PORTS.first + GATEWAY_PORTS.count - 1}`,
    'NoGatewayPort',
  );
}

/**
 * The endpoint a client reaches: the machine's host name or address (config.host) and the
 * gateway's port. An API listening on every address (0.0.0.0, ::) names no one address: the
 * machine's host name stands for it.
 */
export function gatewayEndpoint(host: string, port: number): string {
  const name = host === '0.0.0.0' || host === '::' ? hostname() : host;
  return name.includes(':') ? `[${name}]:${port}` : `${name}:${port}`;
}
