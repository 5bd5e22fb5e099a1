import { rows } from '../entities/sql';
import type { ActivityDeps } from './deps';

export function createProjectActivities({ dataSource, logger }: Pick<ActivityDeps, 'dataSource' | 'logger'>) {
  return {
    /** Unassigns the compute resources of a project that is being deleted. */
    async releaseProjectAssignments(projectUuid: string): Promise<number> {
      const released = await rows(
        dataSource,
        `DELETE FROM project_resources r USING projects p
          WHERE r.project_uuid = p.uuid AND p.uuid = $1 AND p.state = 'deleting' RETURNING r.resource_uuid`,
        [projectUuid],
      );
      logger.info({ projectUuid, released: released.length }, 'released project resource assignments');
      return released.length;
    },
    /** Removes a project that is being deleted; resources in it fall back to no project. */
    async deleteProject(projectUuid: string): Promise<boolean> {
      const deleted = await rows(
        dataSource,
        `DELETE FROM projects WHERE uuid = $1 AND state = 'deleting' RETURNING uuid`,
        [projectUuid],
      );
      return deleted.length > 0;
    },
  };
}
