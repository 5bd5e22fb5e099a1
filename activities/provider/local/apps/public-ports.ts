import { createServer, connect, type Server, type Socket } from 'node:net';
import type { PortSpec } from '../../../../platform/drivers/apps';
import type { AppsContext } from './context';

/** Whether something accepts TCP connections at host:port within `timeoutMs`. */
export function acceptsConnections(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

export type ForwardTarget = { host: string; port: number } | null;

/**
 * A public TCP port: listens on host:port and pipes each connection to the target `pick`
 * answers at that moment (round-robin over replicas, or a fixed internal port); no target,
 * the connection is closed.
 */
export class TcpForwarder {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();

  constructor(
    readonly host: string,
    readonly port: number,
    private readonly pick: () => ForwardTarget,
  ) {}

  async listen(): Promise<void> {
    const server = createServer((client) => {
      this.sockets.add(client);
      client.once('close', () => this.sockets.delete(client));
      const target = this.pick();
      if (!target) {
        client.destroy();
        return;
      }
      const upstream = connect(target);
      this.sockets.add(upstream);
      upstream.once('close', () => this.sockets.delete(upstream));
      client.pipe(upstream).pipe(client);
      upstream.once('error', () => client.destroy());
      client.once('error', () => upstream.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, this.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/**
 * The app's public TCP ports: each external port forwards to the app's ready replicas
 * (round-robin), at the replica's address and the internal port the user mapped.
 */
export class PublicPorts {
  constructor(
    private readonly ctx: Pick<AppsContext, 'runtime'>,
    /** The address public ports listen on. */
    private readonly host: string,
  ) {}

  private target(appUuid: string, internalPort: number): ForwardTarget {
    const rt = this.ctx.runtime(appUuid);
    const backends = (rt.serving?.backends() ?? []).filter((b) => b.kind === 'process');
    if (backends.length === 0) return null;
    const b = backends[rt.next++ % backends.length]!;
    if (b.kind !== 'process') return null;
    return { host: b.host, port: internalPort === rt.webPort ? b.port : internalPort };
  }

  /** Opens the ports asked for, closes the others (an empty list closes them all). */
  async open(appUuid: string, ports: PortSpec[]): Promise<void> {
    const rt = this.ctx.runtime(appUuid);
    const wanted = new Map(
      ports
        .filter((p) => p.externalPort !== null && p.protocol === 'tcp')
        .map((p) => [p.externalPort!, p.internalPort]),
    );
    for (const [external, { fwd, internal }] of rt.forwarders) {
      if (wanted.get(external) !== internal) {
        rt.forwarders.delete(external);
        await fwd.close();
      }
    }
    for (const [external, internal] of wanted) {
      if (rt.forwarders.has(external)) continue;
      const fwd = new TcpForwarder(this.host, external, () => this.target(appUuid, internal));
      await fwd.listen();
      rt.forwarders.set(external, { fwd, internal });
    }
  }
}
