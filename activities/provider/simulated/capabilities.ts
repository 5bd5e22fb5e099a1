import type { DriverCapabilities } from '../../../platform/drivers/capabilities';

/** The simulated driver pretends to do everything (its faults are injected, not refusals). */
export const simulatedCapabilities: DriverCapabilities = {
  engine: () => null,
  vpcs: null,
  images: null,
  vpcAttachable: () => null,
  siteConnections: null,
};
