import type { AppRunSpec } from '../../../../platform/drivers/apps';
import type { NetworkMember } from '../network/fabric';

/**
 * What the workload network knows of an app's workloads (replicas, cron runs, release
 * commands), from the run spec. A spec sealed before the network existed names no workspace:
 * its workloads are on no workspace's network (they go out, and reach nothing of the platform).
 */
export function networkMember(appUuid: string, spec: Pick<AppRunSpec, 'network'>, serves = true): NetworkMember {
  const n = spec.network;
  return {
    workspace: n?.workspace ?? null,
    app: appUuid,
    allowConnections: n?.allowConnections ?? false,
    clusters: n?.clusters ?? [],
    serviceName: serves ? (n?.serviceName ?? null) : null,
  };
}
