import * as yup from 'yup';
import {
  APP_NAME,
  BUILDERS,
  DEPLOYMENT_METHODS,
  DEPLOYMENT_PERIODS,
  DEPLOYMENT_STATES,
  STATE_ACTIONS,
  APP_STATES,
} from '../../domain/apps';
import { BRANCH } from '../../domain/git-urls';
import { arr, bool, int, json, num, obj, oneOf, str, uuid } from './common';

const GIB = 2 ** 30;

export const quotaBody = obj({
  cpu_size: num().min(0.1).max(64),
  ram_size: int()
    .min(128 * 2 ** 20)
    .max(256 * GIB),
  disk_size: int()
    .min(0)
    .max(4096 * GIB),
  replicas: int().min(1).max(100),
});

const appFields = {
  label: str().trim().min(1).max(100),
  project_id: uuid().nullable(),
  manage_dns_records: bool(),
  maintenance: bool(),
  quota: quotaBody.default(undefined),
};

export const createAppBody = obj({
  ...appFields,
  name: str()
    .matches(
      APP_NAME,
      '${path} must be a DNS label: lowercase letters, digits and hyphens, starting with a letter, at most 40 characters',
    )
    .required(),
  resource_id: uuid().required(),
  deployment_method: oneOf(DEPLOYMENT_METHODS),
  deployment_config: json(),
  builder: oneOf(BUILDERS),
  internal_port: int().min(1).max(65535),
  private_access: bool(),
  allow_connections: bool(),
  basic_auth_enabled: bool(),
  basic_auth_username: str().min(1).max(100),
  basic_auth_password: str().min(8).max(200),
  /** Join a VPC at creation, without the restart an attach costs (APP-11); the subnet implies its VPC. */
  vpc_uuid: uuid(),
  vpc_subnet_uuid: uuid(),
});

export const updateAppBody = obj({ ...appFields, internal_port: int().min(1).max(65535) });

export const securityBody = obj({
  basic_auth_enabled: bool(),
  basic_auth_username: str().min(1).max(100),
  basic_auth_password: str().min(8).max(200),
  private_access: bool(),
  allow_connections: bool(),
});

export const deploymentSettingsBody = obj({
  deployment_method: oneOf(DEPLOYMENT_METHODS),
  deployment_config: json(),
  builder: oneOf(BUILDERS),
});

const branch = () => str().matches(BRANCH, '${path} must be a branch name');

/** deployment_config per method (unknown keys refused, like every body object). */
export const DEPLOYMENT_CONFIG: Record<string, yup.ObjectSchema<any>> = {
  git_push: obj({ branch: branch() }),
  public_git: obj({ repository: str().max(500).required(), branch: branch() }),
  github: obj({ repository: str().max(500).required(), branch: branch(), auto_deploy_enabled: bool() }),
  container_registry: obj({
    image: str()
      .matches(/^[a-z0-9][a-z0-9._\/:@-]{0,300}$/, '${path} must be an image reference')
      .required(),
    credential_id: uuid(),
  }),
  parent_image: obj({ parent_app_id: uuid() }),
  cli_upload: obj({}),
};

const healthCheck = obj({
  kind: oneOf(['liveness', 'readiness', 'startup'] as const).required(),
  protocol: oneOf(['http', 'tcp'] as const).required(),
  path: str().matches(/^\/[^\s]{0,500}$/, '${path} must be an absolute URL path'),
  port: int().min(1).max(65535),
  initial_delay_seconds: int().min(0).max(3600),
  period_seconds: int().min(1).max(3600),
  timeout_seconds: int().min(1).max(3600),
  failure_threshold: int().min(1).max(100),
});
export const healthChecksBody = obj({ health_checks: arr(healthCheck.required()).max(3).required() });

export const scalingProfileBody = obj({
  min_replicas: int().min(0).max(100).required(),
  max_replicas: int().min(1).max(100).required(),
  target_cpu_percent: int().min(1).max(100).nullable(),
});

export const stateBody = obj({ action: oneOf(STATE_ACTIONS).required() });

export const listAppsQuery = yup.object({
  project_id: uuid(),
  state: oneOf(APP_STATES),
});

export const cloneBody = obj({
  label: str().trim().min(1).max(100),
  name: str().matches(
    APP_NAME,
    '${path} must be a DNS label: lowercase letters, digits and hyphens, starting with a letter, at most 40 characters',
  ),
  project_id: uuid().nullable(),
  resource_id: uuid(),
  use_parent_image: bool().default(false),
  parent_image_auto_sync: bool().default(false),
  clone_variables: bool().default(false),
  clone_secret_files: bool().default(false),
  clone_scaling_settings: bool().default(false),
  clone_health_checks: bool().default(false),
  clone_security: bool().default(false),
  addons: arr(obj({ uuid: uuid().required(), clone_data: bool().default(false) }).required()).max(50),
  cronjobs: arr(uuid().required()).max(50),
});

export const deployBody = obj({
  branch: branch(),
  commit_sha: str().matches(/^[0-9a-f]{7,64}$/, '${path} must be a hexadecimal commit id'),
});

export const listDeploymentsQuery = yup.object({
  status: oneOf(DEPLOYMENT_STATES),
  period: oneOf(DEPLOYMENT_PERIODS),
});
