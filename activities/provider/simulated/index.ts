import type { Provider } from '../provider';
import { SimulatedAppsDriver } from './apps';
import { SimulatedCore, type SimulatedOptions } from './core';
import { createSimulatedNetwork } from './network';
import { createSimulatedStacks } from './stacks';
import { createObjectStoreStorage } from '../object-store-storage';
import { SimulatedData } from './data';

export { SimulatedCore } from './core';
export { SimulatedData } from './data';
export type { SimulatedOptions } from './core';

/**
 * The simulated data-plane driver (the embedded default). Each area of the driver
 * interface has its simulated part in this folder, built on one shared core.
 */
export function createSimulatedProvider(options: SimulatedOptions): Provider {
  const core = new SimulatedCore(options);
  return {
    name: 'simulated',
    core,
    network: createSimulatedNetwork(core),
    storage: createObjectStoreStorage({
      db: options.dataSource,
      store: options.objectStore,
      beforeOperation: (op) => core.maybeFail(op),
    }),
    stacks: createSimulatedStacks(core),
    data: new SimulatedData(core),
    apps: new SimulatedAppsDriver(core),
  };
}
