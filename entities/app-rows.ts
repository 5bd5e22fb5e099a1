import { randomInt } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { suffixedName } from '../domain/apps';
import { App } from './app';
import { insertReturning } from './sql';

/**
 * The one writer of new rows of the apps table, as entities/capacity.ts is of capacity: the
 * create and clone commands and the preview environment's workflow insert apps through it.
 */

/** What a new app row is given; every other column takes its default. */
export type NewApp = Partial<App> &
  Pick<App, 'uuid' | 'workspace_uuid' | 'resource_uuid' | 'service_name' | 'label' | 'state'>;

/** How many suffixed names an insert tries before it gives up. */
const NAME_TRIES = 8;

/**
 * Inserts an app under a fresh suffixed name of its service name (APP-01; the unique index
 * decides, a clash tries another) and returns the whole row as written, defaults included,
 * without reading it back; undefined when every name it tried was taken.
 */
export async function insertAppUnderFreshName(m: EntityManager, values: NewApp): Promise<App | undefined> {
  for (let attempt = 0; attempt < NAME_TRIES; attempt++) {
    const name = suffixedName(values.service_name, () => randomInt(0, 1_000_000) / 1_000_000);
    // ON CONFLICT DO NOTHING: the uuid is fresh, so the one conflict possible is the name.
    const app = await insertReturning(m, App, { ...values, name }, { ignoreConflict: true });
    if (app) return app;
  }
  return undefined;
}

/**
 * Inserts an app under the uuid and name chosen for it earlier (a preview's, fixed when its
 * environment was written). Idempotent by uuid: inserting it again changes nothing and answers
 * undefined; a name another app holds is an error (the unique index).
 */
export function insertAppOnce(m: EntityManager, values: NewApp & Pick<App, 'name'>): Promise<App | undefined> {
  return insertReturning(m, App, values, { ignoreConflict: ['uuid'] });
}

/**
 * A copy of `source` (a clone, or a preview's app): its deployment (or, with `parentImage`, the
 * source's image, method parent_image), builder, DNS setting, port and quota, in state
 * `cloning` (the clone's steps copy the rest) and never in maintenance.
 */
export function copyOf(
  source: App,
  target: Pick<App, 'uuid' | 'workspace_uuid' | 'project_uuid' | 'resource_uuid' | 'service_name' | 'label'> & {
    parentImage: boolean;
    parentImageAutoSync: boolean;
  },
): NewApp {
  const { parentImage, parentImageAutoSync, ...placed } = target;
  return {
    ...placed,
    state: 'cloning',
    deployment_method: parentImage ? 'parent_image' : source.deployment_method,
    deployment_config: parentImage ? { parent_app_id: source.uuid } : source.deployment_config,
    builder: source.builder,
    manage_dns_records: source.manage_dns_records,
    maintenance: false,
    internal_port: source.internal_port,
    quota: source.quota,
    parent_app_uuid: parentImage ? source.uuid : null,
    parent_image_auto_sync: parentImage ? parentImageAutoSync : false,
  };
}
