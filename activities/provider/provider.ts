import type { NetworkDriver } from './network';
import type { DataDriver } from './data';
import type { AppsDriver } from './apps';
import type { SimulatedCore } from './simulated/core';
import type { StacksDriver } from './stacks';
import type { StorageDriver } from './storage';

/**
 * The data-plane driver: the only way activities reach the cluster that runs workloads.
 * It is composed of one typed part per area (an interface in ./<area>.ts, e.g.
 * `apps: AppsDriver`), each implemented by every driver. The embedded default is the
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
