import { existsSync } from 'node:fs';
import { ApplicationFailure } from '@temporalio/common';
import type { Config } from '../../../platform/config';
import type { NetworkDriver } from '../../../platform/drivers/network';

/**
 * Why the local driver plugs only apps into subnets: its database servers run on the host
 * side of the workload network (their apps reach them at the gateway), and cron runs are
 * not plugged in.
 */
export const LOCAL_ATTACHABLES_ONLY_APPS =
  'the local driver plugs apps into VPC subnets; its database servers run on the host side of the workload network (the apps attached to them reach them there) and its cron runs are not plugged in: attach the app';

/** The Debian packages the VPC fabric needs beyond the workload network's, each found by its binary. */
export const VPC_FABRIC_PACKAGES = [{ pkg: 'dnsmasq-base', binary: '/usr/sbin/dnsmasq' }] as const;

/**
 * Why this machine builds no VPCs (null: it does): they are built on the workload network
 * (every workload in a namespace of its own, which needs root and BERTH_WORKLOAD_NETWORK),
 * and each VPC's resolver is Debian's dnsmasq.
 */
export function localVpcRefusal(
  config: Pick<Config, 'workloadNetwork'>,
  exists: (file: string) => boolean = existsSync,
  root = process.getuid?.() === 0,
): string | null {
  if (!root) return 'the local driver builds VPCs from network namespaces, which needs Berth to run as root';
  if (!config.workloadNetwork)
    return 'the local driver builds VPCs on the workload network, which is off (BERTH_WORKLOAD_NETWORK=off)';
  const missing = VPC_FABRIC_PACKAGES.filter((p) => !exists(p.binary)).map((p) => p.pkg);
  if (missing.length > 0)
    return `the local driver's VPC resolvers are Debian's dnsmasq, and this machine lacks the ${missing.join(', ')} package: install it as root (npm start does so on first start when it runs as root)`;
  return null;
}

/**
 * The network driver of a local driver that builds no VPCs (the reason from localVpcRefusal,
 * or the workload network could not be built): every making operation fails for good with
 * the reason, and removing what was never made succeeds.
 */
export function refusingNetwork(reason: string): NetworkDriver {
  const refuse = async (): Promise<never> => {
    throw ApplicationFailure.nonRetryable(reason, 'NotSupportedByDriver');
  };
  const nothing = async (): Promise<void> => {};
  return {
    createVpc: refuse,
    createRouter: refuse,
    createResolver: refuse,
    attach: refuse,
    restartWorkload: refuse,
    applyRoutes: refuse,
    enableGateway: refuse,
    addPeer: refuse,
    createTunnel: refuse,
    deleteResolver: nothing,
    deleteRouter: nothing,
    deleteVpc: nothing,
    detach: nothing,
    disableGateway: nothing,
    removePeer: nothing,
    deleteTunnel: nothing,
  };
}
