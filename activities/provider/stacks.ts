/** The stacks part of the data-plane driver: builds images and runs compose services. */
export interface StackBuildSpec {
  repository: string;
  commitSha: string;
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
  /** Builds a service's image from the repository at a commit; answers the image reference. */
  buildImage(itemUuid: string, spec: StackBuildSpec): Promise<string>;
  /** Rolls out a service (idempotent); answers its live status. */
  runService(itemUuid: string, spec: StackServiceSpec): Promise<string>;
  /** Removes a service that left the compose file (idempotent). */
  removeService(itemUuid: string): Promise<void>;
}
