import { connect, createServer, type Server } from 'node:net';

/**
 * A platform service workloads may use, offered at the gateway: connections to
 * `gateway:port` are piped to `target:port` (the object store's S3 side on loopback). The
 * service checks its own credentials (SigV4); the policy lets workloads reach this port only.
 */
export async function forwardAtGateway(gateway: string, port: number, target: string): Promise<Server> {
  const server = createServer((client) => {
    const upstream = connect(port, target);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, gateway, () => resolve());
  });
  return server;
}
