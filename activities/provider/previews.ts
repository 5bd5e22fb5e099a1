/**
 * The data-plane part for preview environments: the workload of a preview app (a copy of
 * its parent's), rolling out commits to it, and removing it.
 *
 * The apps area owns app cloning and deployments in general; when it lands, the preview
 * activities should clone through its clone operation and deploy through its deployments
 * (see activities/previews.ts), and this part can shrink to what is preview-specific.
 */
export interface PreviewProvisionRequest {
  appUuid: string;
  parentAppUuid: string;
  resourceUuid: string;
  /** Run the parent's current image instead of building the commit. */
  useParentImage: boolean;
}

export interface PreviewDeployRequest {
  appUuid: string;
  commitSha: string;
}

export interface PreviewDriver {
  /** Creates the preview app's workload from its parent's settings. Idempotent. */
  provision(req: PreviewProvisionRequest): Promise<void>;
  /** Builds (or reuses the parent image) and rolls out a commit; rejects with why it failed. */
  deploy(req: PreviewDeployRequest): Promise<{ image: string }>;
  /** Removes the workload. Idempotent: removing one that is gone succeeds. */
  destroy(appUuid: string): Promise<void>;
}
