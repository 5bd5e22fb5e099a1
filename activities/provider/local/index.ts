import { parseAllowList } from '../../../domain/webhook-destination';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import type { SecretBox } from '../../../domain/secret-box';
import { localLayout, systemAppsDir, type LocalLayout } from '../../../platform/local-layout';
import type { Config } from '../../../platform/config';
import type { Provider } from '../provider';
import { createObjectStoreStorage } from '../object-store-storage';
import type { ObjectStoreOptions } from '../../../platform/drivers/storage';
import { temporalAppEvents } from './apps/events';
import { LocalAppsDriver } from './apps/driver';
import { createLocalBuilder } from './builds/builder';
import { publishLocalEndpoints } from './ingress/endpoints';
import { startLocalIngress } from './ingress/ingress';
import { detectIsolation, type Isolation } from './sandbox/isolation';
import { openWorkloadNetwork } from './network/open';
import { createLocalStacks } from './stacks';
import { createLocalData } from './data';
import { localVpcRefusal, refusingNetwork } from './vpcs';
import { openLocalVpcs } from './vpc/driver';
import { createVpcGateways } from './vpc/gateways';
import { appRunSpec } from '../../app-environment';
import { IngressCertificates } from './ingress/tls/certificates';
import { openLocalCa } from './ingress/tls/local-ca';
import { podmanConfig } from './images/config';
import { openPlatformRegistry } from './images/registry';
import { imageRuntimeRefusal } from './images/runtime';
import { localVolumeMountRefusal } from './apps/volumes';

export interface LocalProviderOptions {
  config: Config;
  dataSource: DataSource;
  secretBox: SecretBox;
  temporal: Client;
  logger: Logger;
  objectStore?: ObjectStoreOptions;
  /** Tests: a given isolation instead of the detected one. */
  isolation?: Isolation;
}

/** Where the local driver keeps its files for this configuration (the API reads logs and repositories through it). */
export function localLayoutFor(
  config: Pick<Config, 'dataDir' | 'appsDir'>,
  isolation: Pick<Isolation, 'uidSwitch'>,
): LocalLayout {
  return localLayout({
    dataDir: config.dataDir,
    appsDir: config.appsDir ?? (isolation.uidSwitch ? systemAppsDir(config.dataDir) : undefined),
  });
}

/**
 * The LOCAL data-plane driver: this machine, everything real. Apps are built from their
 * commit and run as supervised processes behind one HTTP ingress; postgres, valkey and
 * mysql add-ons are real servers. Buckets live on the real object store. VPCs are router
 * namespaces on the workload network with apps' replicas plugged into their subnets (where
 * the workload network runs; otherwise they are refused with the reason, and the banner
 * says so). Stacks build their `build:` services into apps and run
 * their database images as add-ons; what cannot run for real fails validation with a reason.
 */
export async function startLocalProvider(options: LocalProviderOptions): Promise<Provider> {
  const { config, dataSource, secretBox, temporal, logger } = options;
  const isolation = options.isolation ?? detectIsolation();
  // the embedded store (not one at BERTH_S3_ENDPOINT) is offered to workloads at its own address
  const network = await openWorkloadNetwork(
    config,
    logger,
    options.objectStore?.access ? options.objectStore.endpoint : undefined,
  );
  if (network.fabric) isolation.network = network.fabric;
  const layout = localLayoutFor(config, isolation);
  const events = temporalAppEvents(temporal, logger);
  // traffic signals keep a free-plan app awake: several per idle period, at most one a minute
  const trafficSignalIntervalMs = Math.min(60_000, Math.max(500, (config.appIdleTimeoutS * 1000) / 4));
  const storage = createObjectStoreStorage({ db: dataSource, store: options.objectStore });
  const ca = await openLocalCa(path.join(config.dataDir, 'tls'), secretBox);
  const ingress = await startLocalIngress({
    dataSource,
    secretBox,
    logger,
    events,
    port: config.ingressPort,
    host: config.host,
    trafficSignalIntervalMs,
    sites: { domain: config.sitesDomain, storage },
    // only the embedded store knows public_endpoint hosts (a store at BERTH_S3_ENDPOINT has its own)
    bucketEndpoint: options.objectStore?.access ? options.objectStore.endpoint : undefined,
    tls: {
      port: config.ingressTlsPort,
      publicPort: config.publicHttpsPort,
      certificates: new IngressCertificates(dataSource, secretBox, ca),
    },
  });
  const podman = imageRuntimeRefusal() ? null : podmanConfig(layout);
  const registryAllow = parseAllowList(config.registryAllowCidrs, 'BERTH_REGISTRY_ALLOW_CIDRS');
  const registry = podman
    ? await openPlatformRegistry(config.registry, path.join(layout.privateRoot, 'registry'), logger)
    : { registry: null, summary: 'off (this machine runs no container images)' };
  const builder = createLocalBuilder({
    layout,
    isolation,
    logger,
    allowFileUrls: config.gitAllowFileUrls,
    gitCaFile: config.gitCaFile,
    podman,
    registry: registry.registry,
    registryAllow,
  });
  const apps = new LocalAppsDriver({
    dataSource,
    secretBox,
    layout,
    isolation,
    builder,
    ingress: ingress.routes,
    events,
    logger,
    host: config.host,
    registry: registry.registry,
    registryAllow,
  });
  const data = createLocalData({
    dataSource,
    secretBox,
    layout,
    isolation,
    logger,
    host: config.host,
    binaries: { valkey: config.valkeyServer, mysql: config.mysqlServer },
    jobs: apps,
  });
  await publishLocalEndpoints(dataSource, config.host);
  // VPC routers first: the replicas resume() starts are plugged into their subnets
  const vpcRefusal =
    localVpcRefusal(config) ?? (network.fabric ? null : 'the workload network could not be built on this machine');
  const vpcs =
    network.fabric && !vpcRefusal
      ? await openLocalVpcs({
          dataSource,
          tag: network.fabric.tag,
          logger,
          gateways: createVpcGateways({ dataSource, secretBox, tag: network.fabric.tag, logger, host: config.host }),
          restartApp: async (appUuid) =>
            apps.restartIfRunning(appUuid, await appRunSpec(dataSource, secretBox, appUuid)),
        })
      : null;
  if (vpcs) {
    isolation.vpcs = vpcs.fabric;
    network.fabric!.vpcNames = (asker, name) => vpcs.fabric.answer(asker, name);
  }
  await apps.resume();
  await data.resume();
  await network.fabric?.sweep(); // what a previous run left and nothing took back
  return {
    name: 'local',
    apps,
    data,
    network: vpcs?.driver ?? refusingNetwork(vpcRefusal!),
    storage,
    stacks: createLocalStacks({
      dataSource,
      secretBox,
      builder,
      apps,
      data,
      logger,
      imagesRefusal: imageRuntimeRefusal(),
      volumesRefusal: localVolumeMountRefusal(isolation),
      imageRelease: (appUuid, image) => apps.imageRelease(appUuid, image),
    }),
    summary: [
      `Apps (local)     ${ingress.tlsUrl} and ${ingress.url}   (Host: <app name>.<region domain>; git push: <api>/git/<app name>.git)`,
      `Local CA         ${ca.rootPath}   (curl --cacert ${ca.rootPath} https://<app name>.<region domain>${config.publicHttpsPort === 443 ? '' : `:${config.publicHttpsPort}`}/)`,
      `Isolation        ${isolation.summary}`,
      `Network          ${network.summary}`,
      `Image registry   ${registry.summary}`,
      `App files        ${layout.appsRoot}`,
      vpcs
        ? `VPCs             a router namespace per VPC (bvpc-${network.fabric!.tag}-…), its resolver dnsmasq at base+2; apps' replicas plugged into their subnets; WireGuard gateways on UDP ports of ${config.host}`
        : `VPCs             refused (${vpcRefusal})`,
    ],
    async close() {
      await ingress.close();
      await apps.close();
      await data.close();
      await vpcs?.close();
      await network.fabric?.close();
      await registry.registry?.close();
    },
  };
}
