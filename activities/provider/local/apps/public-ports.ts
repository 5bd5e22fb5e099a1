import { createServer, connect, type Server, type Socket } from 'node:net';

/** A loopback port nobody listens on now (the kernel picks it; the caller binds it soon after). */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, host, () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

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
