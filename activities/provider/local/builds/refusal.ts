import { parseReleaseImage } from '../../../../platform/local-layout';
import type { BuildRequest } from '../../../../platform/drivers/apps';

/**
 * Why the `local` driver cannot build or run what a deployment asks for, or null when it
 * can: it builds git commits into releases (with podman for builder dockerfile) and pulls
 * registry images with podman (both refused with `imagesRefusal`, the missing packages,
 * when this machine has no podman).
 */
export function localBuildRefusal(
  request: Pick<BuildRequest, 'method' | 'image' | 'commitSha'>,
  builder: string | null,
  imagesRefusal: string | null,
): string | null {
  if (request.method === 'container_registry') return imagesRefusal;
  if (builder === 'dockerfile' && imagesRefusal) return imagesRefusal;
  if (request.method === 'parent_image') {
    return request.image && parseReleaseImage(request.image)
      ? null
      : `the local driver runs no container images (parent image ${request.image ?? 'none'} is not a local release); a driver that runs images (kubernetes, planned) would`;
  }
  if (!request.commitSha) return `the local driver builds git commits; a ${request.method} deployment has none`;
  return null;
}
