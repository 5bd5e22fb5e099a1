import * as yup from 'yup';
import { PREVIEW_STATUSES } from '../../domain/previews';
import { arr, obj, oneOf, str, timestamp, uuid } from '../schemas/common';
import { columnsOf } from '../../entities/columns';
import { PreviewConfig, type PreviewEnvironment } from '../../entities/preview';
import { iso, isoRequired } from './common';

const boolean = () => yup.boolean().strict();

export const previewConfigSchema = obj({
  enabled: boolean().required(),
  triggers: obj({ pull_requests: boolean().required(), branch_patterns: arr(str().required()).required() }).required(),
  resource_id: uuid().nullable().defined(),
  project_id: uuid().nullable().defined(),
  use_parent_image: boolean().required(),
  lifetime_hours: yup.number().strict().integer().nullable().defined(),
  webhook_url: str().required(),
  webhook_secret_set: boolean().required(),
  /** Only in the response that generated it. */
  webhook_secret: str(),
  created_at: timestamp().nullable().defined(),
  updated_at: timestamp().nullable().defined(),
});

/**
 * An app's preview settings: the stored row (its workspace stays inside), or the defaults of
 * an app that never set them, which have no secret and no timestamps yet.
 */
export type PreviewConfigRow = Omit<
  PreviewConfig,
  'workspace_uuid' | 'webhook_secret_sealed' | 'created_at' | 'updated_at'
> & { [K in 'webhook_secret_sealed' | 'created_at' | 'updated_at']: PreviewConfig[K] | null };

/** The select list of PreviewConfigRow (also what its audit entries record). */
export const PREVIEW_CONFIG_COLUMNS = columnsOf(PreviewConfig, undefined, { except: ['workspace_uuid'] });

/** The defaults an app without a stored configuration reads. */
export function defaultPreviewConfig(appUuid: string): PreviewConfigRow {
  return {
    app_uuid: appUuid,
    enabled: false,
    pull_requests: true,
    branch_patterns: [],
    resource_uuid: null,
    project_uuid: null,
    use_parent_image: false,
    lifetime_hours: null,
    webhook_secret_sealed: null,
    created_at: null,
    updated_at: null,
  };
}

/** The code-host endpoint of an app (authenticated by its signature, not a bearer token). */
export function codeHostPath(appUuid: string): string {
  return `/api/v1/code_host/apps/${appUuid}/events`;
}

export function previewConfigView(c: PreviewConfigRow, origin: string, secret?: string) {
  return {
    enabled: c.enabled,
    triggers: { pull_requests: c.pull_requests, branch_patterns: [...c.branch_patterns] },
    resource_id: c.resource_uuid,
    project_id: c.project_uuid,
    use_parent_image: c.use_parent_image,
    lifetime_hours: c.lifetime_hours,
    webhook_url: `${origin}${codeHostPath(c.app_uuid)}`,
    webhook_secret_set: c.webhook_secret_sealed !== null,
    ...(secret ? { webhook_secret: secret } : {}),
    created_at: iso(c.created_at),
    updated_at: iso(c.updated_at),
  };
}

export const previewSchema = obj({
  id: yup.number().strict().integer().required(),
  status: oneOf(PREVIEW_STATUSES).required(),
  app_uuid: uuid().required(),
  app_name: str().required(),
  url: str().required(),
  pull_request_number: yup.number().strict().integer().nullable().defined(),
  pull_request_title: str().defined(),
  pull_request_author: str().defined(),
  pull_request_state: oneOf(['open', 'closed'] as const).required(),
  pull_request_url: str().defined(),
  pull_request_merged: boolean().required(),
  branch: str().required(),
  base_branch: str().defined(),
  commit_sha: str().defined(),
  deployment_error: str().defined(),
  last_commit_at: timestamp().nullable().defined(),
  last_deployed_at: timestamp().nullable().defined(),
  closed_at: timestamp().nullable().defined(),
  expires_at: timestamp().nullable().defined(),
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
});

/** An allow-list of the environment: its key, head and generation stay inside. */
export function previewView(p: PreviewEnvironment) {
  return {
    id: p.id,
    status: p.status,
    app_uuid: p.app_uuid,
    app_name: p.app_name,
    url: p.url,
    pull_request_number: p.pull_request_number,
    pull_request_title: p.pull_request_title,
    pull_request_author: p.pull_request_author,
    pull_request_state: p.pull_request_state,
    pull_request_url: p.pull_request_url,
    pull_request_merged: p.pull_request_merged,
    branch: p.branch,
    base_branch: p.base_branch,
    commit_sha: p.commit_sha,
    deployment_error: p.status === 'failed' ? p.deployment_error : '',
    last_commit_at: iso(p.last_commit_at),
    last_deployed_at: iso(p.last_deployed_at),
    closed_at: iso(p.closed_at),
    expires_at: iso(p.expires_at),
    created_at: isoRequired(p.created_at),
    updated_at: isoRequired(p.updated_at),
  };
}
