import * as yup from 'yup';
import { SITE_STATES, siteUrl } from '../../domain/static-sites';
import { int, obj, oneOf, str, timestamp, uuid } from '../schemas/common';
import { iso, isoRequired } from './common';

export interface SiteRow {
  uuid: string;
  workspace_uuid: string;
  project_id: string | null;
  name: string;
  label: string;
  state: string;
  deployment_config: { repository?: string; branch?: string; build_command?: string | null; publish_directory?: string };
  credential_id: string | null;
  created_at: Date;
  updated_at: Date;
  region_code: string;
}

/** Never the content bucket: a site's storage is not exposed (SIT-05). */
export const SITE_SELECT = `SELECT s.uuid, s.workspace_uuid, s.project_id, s.name, s.label, s.state, s.deployment_config, s.credential_id,
  s.created_at, s.updated_at, g.code AS region_code FROM static_sites s JOIN regions g ON g.id = s.region_id`;

export const siteSchema = obj({
  uuid: uuid().required(),
  name: str().required(),
  label: str().required(),
  state: oneOf(SITE_STATES).required(),
  url: str().required(),
  region: str().required(),
  project_id: uuid().nullable().defined(),
  deployment_config: obj({
    type: oneOf(['git'] as const).required(),
    repository: str().nullable().defined(),
    branch: str().required(),
    build_command: str().nullable().defined(),
    publish_directory: str().required(),
    credential_id: uuid().nullable().defined(),
  }).required(),
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
});

export const siteDeploymentSchema = obj({
  uuid: uuid().required(),
  state: oneOf(['pending', 'running', 'completed', 'failed'] as const).required(),
  commit_sha: str().nullable().defined(),
  file_count: int().nullable().defined(),
  message: str().nullable().defined(),
  created_at: timestamp().required(),
  completed_at: timestamp().nullable().defined(),
});

export const siteListSchema = yup.array(siteSchema);

export function siteView(s: SiteRow, sitesDomain: string) {
  return {
    uuid: s.uuid,
    name: s.name,
    label: s.label,
    state: s.state,
    url: siteUrl(s.name, sitesDomain),
    region: s.region_code,
    project_id: s.project_id,
    deployment_config: {
      type: 'git' as const,
      repository: s.deployment_config.repository ?? null,
      branch: s.deployment_config.branch ?? 'main',
      build_command: s.deployment_config.build_command ?? null,
      publish_directory: s.deployment_config.publish_directory ?? '.',
      credential_id: s.credential_id,
    },
    created_at: isoRequired(s.created_at),
    updated_at: isoRequired(s.updated_at),
  };
}

export function siteDeploymentView(d: { uuid: string; state: 'pending' | 'running' | 'completed' | 'failed'; commit_sha: string | null; file_count: number | null; message: string | null; created_at: Date; completed_at: Date | null }) {
  return { uuid: d.uuid, state: d.state, commit_sha: d.commit_sha, file_count: d.file_count, message: d.message, created_at: isoRequired(d.created_at), completed_at: iso(d.completed_at) };
}
