import { LOCAL_NO_SITE_TUNNELS } from '../../../domain/vpc';
import type { Config } from '../../../platform/config';
import type { DriverCapabilities } from '../../../platform/drivers/capabilities';
import { localEngineSupport } from './data';
import { imageRuntimeRefusal } from './images/runtime';
import { LOCAL_ATTACHABLES_ONLY_APPS, localVpcRefusal } from './vpcs';

/** What the local driver does for real on this machine (read without starting it: the API asks). */
export function localCapabilities(
  config: Pick<Config, 'valkeyServer' | 'mysqlServer' | 'workloadNetwork'>,
): DriverCapabilities {
  return {
    engine: localEngineSupport({ valkey: config.valkeyServer, mysql: config.mysqlServer }),
    vpcs: localVpcRefusal(config),
    vpcAttachable: (type) => (type === 'App' ? null : LOCAL_ATTACHABLES_ONLY_APPS),
    images: imageRuntimeRefusal(),
    siteConnections: LOCAL_NO_SITE_TUNNELS,
  };
}
