import type { EntityManager } from 'typeorm';
import { assertProjectVisible } from './access';
import { notFound } from './problem';
import type { RouteContext } from './route';

export interface AppScope {
  uuid: string;
  workspace_uuid: string;
  project_id: string | null;
  resource_uuid: string;
  name: string;
  label: string;
  state: string;
  preview_parent_uuid: string | null;
}

/**
 * The app of an `/apps/{uuid}/...` route: it exists in the caller's workspace and its
 * project is visible to the caller; otherwise 404 (a restriction hides, never forbids).
 */
export async function findApp(ctx: RouteContext<unknown, unknown, unknown>, appUuid: string, db: Pick<EntityManager, 'query'> = ctx.deps.dataSource.manager, lock = false): Promise<AppScope> {
  const [app]: AppScope[] = await db.query(
    `SELECT uuid, workspace_uuid, project_id, resource_uuid, name, label, state, preview_parent_uuid
       FROM apps WHERE uuid = $1 AND workspace_uuid = $2${lock ? ' FOR UPDATE' : ''}`,
    [appUuid, ctx.caller.workspaceUuid]);
  if (!app) throw notFound('app');
  await assertProjectVisible(ctx, app.project_id, 'app');
  return app;
}
