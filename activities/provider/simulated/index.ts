import type { Provider } from '../provider';
import { SimulatedAppsDriver } from './apps';
import { SimulatedCore, type SimulatedOptions } from './core';

export { SimulatedCore } from './core';
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
    apps: new SimulatedAppsDriver(core),
  };
}
