import { In, type EntityManager } from 'typeorm';
import type { Config } from '../../platform/config';
import * as yup from 'yup';
import { SITE_STATES, siteUrl } from '../../domain/static-sites';
import { Region } from '../../entities/region';
import type { StaticSite, StaticSiteDeployment } from '../../entities/static-site';
import { int, obj, oneOf, str, timestamp, uuid } from '../schemas/common';
import { iso, isoRequired } from './common';

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

/** A site as the contract shows it; never the content bucket: a site's storage is not exposed (SIT-05). */
/** Where sites are served: their domain and the port the ingress answers HTTPS at. */
export type SiteLinks = Pick<Config, 'sitesDomain' | 'publicHttpsPort'>;

function siteView(s: StaticSite, regionCode: string, links: SiteLinks) {
  return {
    uuid: s.uuid,
    name: s.name,
    label: s.label,
    state: s.state,
    url: siteUrl(s.name, links.sitesDomain, links.publicHttpsPort),
    region: regionCode,
    project_id: s.project_uuid,
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

/** Sites with their regions' codes, in one more query for any number. */
export async function siteViews(m: EntityManager, sites: readonly StaticSite[], links: SiteLinks) {
  const ids = [...new Set(sites.map((s) => s.region_id))];
  const regions =
    ids.length === 0 ? [] : await m.find(Region, { where: { id: In(ids) }, select: { id: true, code: true } });
  const code = new Map(regions.map((r) => [r.id, r.code]));
  return sites.map((s) => siteView(s, code.get(s.region_id)!, links));
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
