import type { EntityManager } from 'typeorm';
import * as yup from 'yup';
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

export interface RestrictionView {
  id: number;
  subject_type: 'user' | 'role';
  user_uuid: string | null;
  role_name: string | null;
}

export interface ProjectRow {
  uuid: string;
  name: string;
  description: string;
  state: 'active' | 'deleting';
  created_at: Date;
  updated_at: Date;
}

export function restrictionView(r: RestrictionView): RestrictionView {
  return { id: r.id, subject_type: r.subject_type, user_uuid: r.user_uuid, role_name: r.role_name };
}

/** Projects with their assigned resources and restrictions: three queries for any number. */
export async function projectViews(db: EntityManager, workspaceUuid: string, projects: readonly ProjectRow[]) {
  if (projects.length === 0) return [];
  const uuids = projects.map((p) => p.uuid);
  const links: Array<{ project_uuid: string; resource_uuid: string }> = await db.query(
    `SELECT project_uuid, resource_uuid FROM project_resources WHERE project_uuid = ANY($1::uuid[]) ORDER BY created_at`, [uuids]);
  const restrictions: Array<RestrictionView & { project_uuid: string }> = await db.query(
    `SELECT id, project_uuid, subject_type, user_uuid, role_name FROM project_restrictions
      WHERE project_uuid = ANY($1::uuid[]) ORDER BY id`, [uuids]);
  const resources = new Map<string, ResourceView>(
    (await loadResources(db, workspaceUuid, [...new Set(links.map((l) => l.resource_uuid))])).map((r) => [r.uuid, r]));
  return projects.map((p) => ({
    uuid: p.uuid,
    name: p.name,
    description: p.description,
    state: p.state,
    created_at: isoRequired(p.created_at),
    updated_at: isoRequired(p.updated_at),
    resources: links.filter((l) => l.project_uuid === p.uuid).map((l) => resources.get(l.resource_uuid)!).filter(Boolean),
    restrictions: restrictions.filter((r) => r.project_uuid === p.uuid).map(restrictionView),
  }));
}
