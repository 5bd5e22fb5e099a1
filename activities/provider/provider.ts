/**
 * The data-plane driver: the only way activities reach the cluster that runs workloads.
 * Each area adds its typed operations as an interface here; a driver implements them all.
 * The embedded default is the simulated driver (./simulated), which says so in its name.
 */
export interface ProviderInfo {
  /** Driver name, e.g. "simulated". */
  readonly name: string;
}

export type Provider = ProviderInfo;
