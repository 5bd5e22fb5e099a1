import { In, type EntityManager } from 'typeorm';
import * as yup from 'yup';
import { ProjectResource, ProjectRestriction, type Project } from '../../entities/project';
import { arr, obj, oneOf, str, timestamp, uuid } from '../schemas/common';
import { isoRequired } from './common';
import { loadResources, resourceSchema, type ResourceView } from './resources';

export const restrictionSchema = obj({
  id: yup.number().strict().integer().required(),
  subject_type: oneOf(['user', 'role'] as const).required(),
  user_uuid: uuid().nullable().defined(),
  role_name: str().nullable().defined(),
});

export const projectSchema = obj({
  uuid: uuid().required(),
  name: str().required(),
  description: str().defined(),
  state: oneOf(['active', 'deleting'] as const).required(),
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
  resources: arr(resourceSchema).required(),
  restrictions: arr(restrictionSchema).required(),
});

export function restrictionView(r: ProjectRestriction): yup.InferType<typeof restrictionSchema> {
  return { id: r.id, subject_type: r.subject_type, user_uuid: r.user_uuid, role_name: r.role_name };
}

/** Projects with their assigned resources and restrictions: three queries for any number. */
export async function projectViews(db: EntityManager, workspaceUuid: string, projects: readonly Project[]) {
  if (projects.length === 0) return [];
  const uuids = projects.map((p) => p.uuid);
  const links = await db.find(ProjectResource, { where: { project_uuid: In(uuids) }, order: { created_at: 'ASC' } });
  const restrictions = await db.find(ProjectRestriction, { where: { project_uuid: In(uuids) }, order: { id: 'ASC' } });
  const resources = new Map<string, ResourceView>(
    (await loadResources(db, workspaceUuid, [...new Set(links.map((l) => l.resource_uuid))])).map((r) => [r.uuid, r]),
  );
  return projects.map((p) => ({
    uuid: p.uuid,
    name: p.name,
    description: p.description,
    state: p.state,
    created_at: isoRequired(p.created_at),
    updated_at: isoRequired(p.updated_at),
    resources: links
      .filter((l) => l.project_uuid === p.uuid)
      .map((l) => resources.get(l.resource_uuid)!)
      .filter(Boolean),
    restrictions: restrictions.filter((r) => r.project_uuid === p.uuid).map(restrictionView),
  }));
}
