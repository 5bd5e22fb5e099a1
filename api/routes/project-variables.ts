import type { EntityManager } from 'typeorm';
import { conflict } from '../problem';
import { variableRoutes } from '../variable-routes';
import { findProject } from './projects';

/** The project (404 when absent or closed to the caller); a project being deleted takes no changes. */
async function changeableProject(
  ctx: Parameters<typeof findProject>[0] & { params: { uuid: string } },
  m: EntityManager,
) {
  const project = await findProject(ctx, ctx.params.uuid, m);
  if (project.state === 'deleting') throw conflict('the project is being deleted');
  await m.query(`SELECT 1 FROM projects WHERE uuid = $1 FOR UPDATE`, [project.uuid]);
  return project;
}

/** A project's variables and secret files (projects:operate or projects:manage): every app of the project gets them. */
export const projectVariableRoutes = variableRoutes({
  kind: 'project',
  base: '/projects/{uuid}',
  requires: 'projects.variables',
  find: (ctx) => findProject(ctx, ctx.params.uuid),
  lockForChange: changeableProject,
  applies: {
    variables:
      'every app of the project uses them (its own override them) from its next deployment, and reads needs_redeploy until then',
    files: 'mounted in every app of the project under /etc/secrets/<name>, unless the app has its own of that name',
  },
});
