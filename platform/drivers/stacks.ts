import type { Manifest } from '../../domain/compose';

/** The stacks part of the data-plane driver: builds images and runs compose services. */
export interface StackBuildSpec {
  /** The stack deployment the build belongs to (a retry of the same build is the same build). */
  deploymentUuid: string;
  repository: string;
  commitSha: string;
  /** The build context as a folder of the repository (resolved against the compose file's folder). */
  context: string;
  dockerfile: string | null;
}

export interface StackServiceSpec {
  name: string;
  kind: 'app' | 'addon';
  image: string;
  ports: number[];
  cpuSize: number;
  ramSize: number;
  diskSize: number;
}

export interface StacksDriver {
  /**
   * What of the analyzed compose file this driver cannot run for real, one clear message
   * per problem (empty: everything can run). The deployment fails validation with them.
   */
  refusals(manifest: Manifest): string[];
  /** Builds a service's image from the repository at a commit; answers the image reference. */
  buildImage(itemUuid: string, spec: StackBuildSpec): Promise<string>;
  /** Rolls out a service (idempotent); answers its live status. */
  runService(itemUuid: string, spec: StackServiceSpec): Promise<string>;
  /** Removes a service that left the compose file (idempotent). */
  removeService(itemUuid: string): Promise<void>;
}
