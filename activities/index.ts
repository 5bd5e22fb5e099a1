import { createAppActivities } from './apps';
import type { ActivityDeps } from './deps';
import { createCertificateActivities } from './certificates';
import { createDomainActivities } from './domains';
import { createDataActivities } from './data';
import { createEventActivities } from './events';
import { createPreviewActivities } from './previews';
import { createProjectActivities } from './projects';
import { createStateActivities } from './state';
import { createVpcActivities } from './vpc';
import { createVpnActivities } from './vpn';
import { createWebhookActivities } from './webhooks';
import { createBucketActivities } from './buckets';
import { createStackActivities } from './stacks';
import { createStaticSiteActivities } from './static-sites';

export type { ActivityDeps } from './deps';
export type { StorageCleanupInput } from './buckets';
export type { PublishedItem } from './stacks';

/** Every activity, built from its dependencies (the worker registers the result). */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createStateActivities(deps),
    ...createEventActivities(deps),
    ...createProjectActivities(deps),
    ...createVpcActivities(deps),
    ...createVpnActivities(deps),
    ...createWebhookActivities(deps),
    ...createBucketActivities(deps),
    ...createStackActivities(deps),
    ...createStaticSiteActivities(deps),
    ...createDomainActivities(deps),
    ...createCertificateActivities(deps),
    ...createPreviewActivities(deps),
    ...createDataActivities(deps),
    ...createAppActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
