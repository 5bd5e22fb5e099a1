import type { NetworkDriver } from '../../platform/drivers/network';
import type { DataDriver } from '../../platform/drivers/data';
import type { AppsDriver } from '../../platform/drivers/apps';
import type { SimulatedCore } from './simulated/core';
import type { StacksDriver } from '../../platform/drivers/stacks';
import type { StorageDriver } from '../../platform/drivers/storage';

/**
 * The data-plane driver: the only way activities reach the cluster that runs workloads.
 * It is composed of one typed part per area (an interface in platform/drivers/<area>.ts, e.g.
 * `apps: AppsDriver`; there because api/ reads storage and data through them too), each
 * implemented by every driver. The embedded default is the
 * simulated driver (./simulated), which says so in its name.
 */
export interface Provider {
  /** Driver name, e.g. "simulated". */
  readonly name: string;
  /** Present on the simulated driver only: fault injection and latency. */
  readonly core?: SimulatedCore;
  readonly network: NetworkDriver;
  readonly storage: StorageDriver;
  readonly stacks: StacksDriver;
  data: DataDriver;
  readonly apps: AppsDriver;
  /** Lines for the start banner: what runs where, and how isolated (the local driver). */
  readonly summary?: string[];
  /** Stops what the driver runs in this process (app processes, ingress, add-on servers). */
  close?(): Promise<void>;
}
