import * as yup from 'yup';
import { SITE_STATES, siteUrl } from '../../domain/static-sites';
import { int, obj, oneOf, str, timestamp, uuid } from '../schemas/common';
import { columnsOf } from '../../entities/columns';
import { StaticSite, type StaticSiteDeployment } from '../../entities/static-site';
import { iso, isoRequired } from './common';

/** A site with its region's code (SITE_SELECT); never the content bucket: a site's storage is not exposed (SIT-05). */
export type SiteRow = Omit<StaticSite, 'content_bucket'> & { region_code: string };

/** Raw: the region's code is joined onto the entity, which has no relation to regions. */
export const SITE_SELECT = `SELECT ${columnsOf(StaticSite, 's', { except: ['content_bucket'] })}, g.code AS region_code
  FROM static_sites s JOIN regions g ON g.id = s.region_id`;

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

export function siteDeploymentView(d: StaticSiteDeployment) {
  return {
    uuid: d.uuid,
    state: d.state,
    commit_sha: d.commit_sha,
    file_count: d.file_count,
    message: d.message,
    created_at: isoRequired(d.created_at),
    completed_at: iso(d.completed_at),
  };
}
