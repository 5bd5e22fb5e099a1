import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export type ProxyMode = 'forward' | 'refuse' | 'blackhole';

export interface TcpProxy {
  port: number;
  /** forward: pass through; refuse: cut every connection at once; blackhole: accept and never answer. */
  setMode(mode: ProxyMode): void;
  close(): Promise<void>;
}

/**
 * A loopback TCP proxy to `target` whose link a test breaks and restores (a database
 * that goes away and comes back, without touching the real server). Changing the mode
 * cuts the connections open at that moment.
 */
export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  let mode: ProxyMode = 'forward';
  const open = new Set<Socket>();
  const server: Server = createServer((client) => {
    open.add(client);
    client.on('close', () => open.delete(client));
    client.on('error', () => {});
    if (mode === 'refuse') return void client.destroy();
    if (mode === 'blackhole') return;
    const upstream = connect(targetPort, targetHost);
    open.add(upstream);
    upstream.on('close', () => {
      open.delete(upstream);
      client.destroy();
    });
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const cutAll = () => {
    for (const s of open) s.destroy();
    open.clear();
  };
  return {
    port: (server.address() as AddressInfo).port,
    setMode(next) {
      mode = next;
      cutAll();
    },
    close: async () => {
      cutAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
