import type { AttachableType } from '../../domain/vpc';
import type { DataDriver } from './data';

/**
 * What a data-plane driver does for real. The API asks it before it accepts a request the
 * driver would refuse, and answers 422 with the driver's reason; it never asks which
 * driver runs. Each driver declares its own (activities/provider/<driver>/capabilities.ts).
 */
export interface DriverCapabilities {
  /** Whether an add-on engine runs: null, or the reason it cannot (what to install). */
  engine: DataDriver['supports'];
  /** Whether VPCs are built: null, or the reason they cannot be. */
  vpcs: string | null;
  /** Whether container images run (container_registry apps): null, or the reason they cannot (what to install). */
  images: string | null;
  /** Whether a workload of this type (a cron job: `cronJob`) can be plugged into a VPC subnet: null, or the reason it cannot. */
  vpcAttachable(type: AttachableType, workload: { cronJob: boolean }): string | null;
  /** Whether IPsec site-to-site connections are made: null, or the reason they cannot be. */
  siteConnections: string | null;
}
