import { connect, createServer, type Server } from 'node:net';

/**
 * A platform service workloads may use, offered at the gateway: connections to
 * `gateway:<its port>` are piped to the service (the object store's S3 side on loopback).
 * The service checks its own credentials (SigV4); the policy lets workloads reach this port only.
 */
export async function forwardAtGateway(gateway: string, service: { host: string; port: number }): Promise<Server> {
  const { port } = service;
  const server = createServer((client) => {
    const upstream = connect(port, service.host);
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
