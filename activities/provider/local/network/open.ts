import type { Logger } from 'pino';
import type { Config } from '../../../../platform/config';
import { LOOPBACK } from '../sandbox/launcher';
import { fabricUnavailable, WorkloadNetwork } from './fabric';

/**
 * The workload network at start, with the banner's line: on when the range is set (the
 * default) and the machine can build it; otherwise off, and the line says plainly that
 * workloads then share the machine's network and why.
 */
export async function openWorkloadNetwork(
  config: Pick<Config, 'dataDir' | 'workloadNetwork'>,
  logger: Logger,
  /** The embedded object store's endpoint: on loopback, workloads reach it at the same address. */
  objectStoreEndpoint?: string,
): Promise<{ fabric: WorkloadNetwork | null; summary: string }> {
  const off = (why: string) => ({
    fabric: null,
    summary: `TENANT NETWORK ISOLATION OFF (${why}): apps share this machine's network and can reach its services and each other`,
  });
  if (!config.workloadNetwork) return off('BERTH_WORKLOAD_NETWORK=off');
  const reason = await fabricUnavailable();
  if (reason) return off(reason);
  const store = objectStoreEndpoint ? new URL(objectStoreEndpoint) : null;
  const platformServices =
    store && isLoopback(store.hostname)
      ? [{ host: store.hostname === 'localhost' ? LOOPBACK : store.hostname, port: Number(store.port || 80) }]
      : [];
  let fabric: WorkloadNetwork;
  try {
    fabric = await WorkloadNetwork.open({
      dataDir: config.dataDir,
      range: config.workloadNetwork,
      logger,
      platformServices,
    });
  } catch (err) {
    // e.g. a container whose /proc/sys is read-only: the machine cannot route for workloads
    logger.error({ err: (err as Error).message }, 'workload network: could not be built');
    return off(`it could not be built: ${(err as Error).message.split('\n')[0]}`);
  }
  return {
    fabric,
    summary: `each workload in a network namespace of its own, ${fabric.gateway} its gateway and resolver; policy in nftables table inet ${fabric.table}`,
  };
}

const isLoopback = (host: string) => host === 'localhost' || host.startsWith('127.');
