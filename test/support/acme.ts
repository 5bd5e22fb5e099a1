import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { DataSource } from 'typeorm';
import { startLocalIngress, type LocalIngress } from '../../activities/provider/local/ingress/ingress';
import { IngressCertificates } from '../../activities/provider/local/ingress/tls/certificates';
import { openLocalCa } from '../../activities/provider/local/ingress/tls/local-ca';
import type { ActivityDeps } from '../../activities';
import type { AppRow } from './app-rows';
import type { Workspace } from './fixtures';
import type { Pebble } from './pebble';
import type { TimeSkipping } from './temporal';

/** The environment that points Berth at pebble (its directory, and the CA of its own HTTPS). */
export function acmeEnv(pebble: Pebble) {
  return { BERTH_ACME_DIRECTORY: pebble.directoryUrl, BERTH_ACME_CA_FILE: pebble.tlsCaFile };
}

/**
 * A real local ingress on pebble's HTTP-01 port (`httpPort`, given to startPebble) serving
 * `app` (a backend answering "served by the app") over HTTP and HTTPS, and pebble's issuing
 * root on disk for `curl --cacert`.
 */
export interface AcmeIngress {
  ingress: LocalIngress;
  pebbleRootFile: string;
  close(): Promise<void>;
}

export async function startAcmeIngress(options: {
  ds: DataSource;
  deps: Pick<ActivityDeps, 'secretBox' | 'logger'>;
  pebble: Pebble;
  httpPort: number;
  app: Pick<AppRow, 'uuid'>;
}): Promise<AcmeIngress> {
  const { ds, deps } = options;
  const dir = await mkdtemp(path.join(tmpdir(), 'berth-acme-'));
  const pebbleRootFile = path.join(dir, 'pebble-root.pem');
  await writeFile(pebbleRootFile, await options.pebble.issuingRoot());
  const backend: Server = createServer((_req, res) => res.end('served by the app'));
  await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
  const ingress = await startLocalIngress({
    dataSource: ds,
    secretBox: deps.secretBox,
    logger: deps.logger,
    events: { health: async () => undefined, liveStatus: async () => undefined, traffic: async () => undefined },
    port: options.httpPort,
    settingsTtlMs: 100,
    tls: {
      port: 0,
      certificates: new IngressCertificates(ds, deps.secretBox, await openLocalCa(dir, deps.secretBox), 100),
    },
  });
  ingress.routes.setBackends(options.app.uuid, [
    { kind: 'process', host: '127.0.0.1', port: (backend.address() as AddressInfo).port },
  ]);
  return {
    ingress,
    pebbleRootFile,
    async close() {
      await ingress.close();
      backend.closeAllConnections();
      backend.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A verified custom domain of `app`, as verification leaves it. */
export async function insertVerifiedDomain(
  ds: DataSource,
  workspaceUuid: string,
  app: Pick<AppRow, 'uuid' | 'name'>,
): Promise<{ uuid: string; name: string }> {
  const uuid = randomUUID();
  const name = `shop-${randomBytes(3).toString('hex')}.example.test`;
  await ds.query(
    `INSERT INTO domains (uuid, workspace_uuid, app_uuid, name, verification_status, dns_target) VALUES ($1, $2, $3, $4, 'verified', $5)`,
    [uuid, workspaceUuid, app.uuid, name, `${app.name}.local.berth.localhost`],
  );
  return { uuid, name };
}

/** Starts a domain's certificate workflow through the outbox, as verification does. */
export async function startCertificateWorkflow(ds: DataSource, ts: TimeSkipping, ws: Workspace, domainUuid: string) {
  const op = await ds.transaction((m) =>
    ts.outbox.enqueue(m, {
      operation: 'domain-certificate',
      workflow: 'domainCertificate',
      workspaceUuid: ws.uuid,
      resourceUuid: domainUuid,
      args: [{ domainUuid }],
    }),
  );
  await ts.outbox.dispatch(op);
  return ts.client.workflow.getHandle(op.workflowId);
}

/** Polls a domain's certificate record until `done` holds (real time: ACME orders are real). */
export async function certificateUntil(
  ds: DataSource,
  domainUuid: string,
  done: (row: Record<string, any>) => boolean,
  what: string,
): Promise<Record<string, any>> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const [row] = await ds.query(`SELECT * FROM domain_certificates WHERE domain_uuid = $1`, [domainUuid]);
    if (row && done(row)) return row;
    if (Date.now() > deadline) throw new Error(`${what}: ${JSON.stringify(row)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
