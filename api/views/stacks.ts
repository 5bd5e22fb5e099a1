import type { EntityManager } from 'typeorm';
import * as yup from 'yup';
import { computeStackState, STACK_STATES } from '../../domain/stacks';
import { arr, bool, json, num, obj, oneOf, str, timestamp, uuid } from '../schemas/common';
import { App } from '../../entities/app';
import { Stack, StackDeployment, StackItem } from '../../entities/stack';
import { iso, isoRequired } from './common';
import { loadResources, resourceSchema, type ResourceView } from './resources';

const serviceSchema = obj({
  compose_service_name: str().required(),
  compose_service_type: str().required(),
  status: str().required(),
  item_type: oneOf(['app', 'addon'] as const).required(),
  item_uuid: uuid().required(),
  item_name: str().required(),
});

const deploymentSchema = obj({
  uuid: uuid().required(),
  state: str().required(),
  subevent: str().nullable().defined(),
  commit_sha: str().nullable().defined(),
  validation_errors: json().required(),
  published_at: timestamp().nullable().defined(),
  completed_at: timestamp().nullable().defined(),
  created_at: timestamp().required(),
});

export const stackSchema = obj({
  uuid: uuid().required(),
  name: str().required(),
  label: str().required(),
  state: oneOf(STACK_STATES).required(),
  project_id: uuid().nullable().defined(),
  compose_path: str().required(),
  deployment_config: obj({
    type: oneOf(['git'] as const).required(),
    repository: str().required(),
    branch: str().required(),
    auto_deploy_enabled: bool().required(),
    credential_id: uuid().nullable().defined(),
  }).required(),
  total_cpu_size: num().required(),
  total_ram_size: num().required(),
  total_disk_size: num().required(),
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
  platform: resourceSchema.required(),
  services: arr(serviceSchema).required(),
  latest_deployment: deploymentSchema.nullable().defined(),
});

export const analyzeSchema = obj({
  commit_sha: str().required(),
  manifest: json().required(),
  warnings: arr(
    obj({
      code: str().required(),
      service: str().nullable().defined(),
      key: str().required(),
      message: str().required(),
    }),
  ).required(),
});

export const stackListSchema = yup.array(stackSchema);

/** Stacks with services (live status of their apps), latest deployment and totals, in four queries for any number. */
export async function stackViews(db: EntityManager, workspaceUuid: string, stacks: readonly Stack[]) {
  if (stacks.length === 0) return [];
  const uuids = stacks.map((s) => s.uuid);
  // An app's live state stands for its item's status; the raw row carries it beside the entity's primary key.
  const { entities: itemEntities, raw } = await db
    .createQueryBuilder(StackItem, 'i')
    .leftJoin(App, 'a', "a.uuid = i.uuid AND i.item_type = 'app'")
    .addSelect('COALESCE(a.state, i.status)', 'live_status')
    .where('i.stack_uuid IN (:...uuids)', { uuids })
    .orderBy('i.item_type', 'DESC')
    .addOrderBy('i.compose_service_name')
    .getRawAndEntities<{ i_uuid: string; live_status: string }>();
  const live = new Map(raw.map((r) => [r.i_uuid, r.live_status]));
  const items = itemEntities.map((i) => ({ ...i, status: live.get(i.uuid) ?? i.status }));
  const deployments = await db
    .createQueryBuilder(StackDeployment, 'd')
    .distinctOn(['d.stack_uuid'])
    .where('d.stack_uuid IN (:...uuids)', { uuids })
    .orderBy('d.stack_uuid')
    .addOrderBy('d.created_at', 'DESC')
    .addOrderBy('d.uuid', 'DESC')
    .getMany();
  const resources = new Map<string, ResourceView>(
    (await loadResources(db, workspaceUuid, [...new Set(stacks.map((s) => s.resource_uuid))])).map((r) => [r.uuid, r]),
  );
  return stacks.map((s) => {
    const mine = items.filter((i) => i.stack_uuid === s.uuid);
    const latest = deployments.find((d) => d.stack_uuid === s.uuid) ?? null;
    return {
      uuid: s.uuid,
      name: s.name,
      label: s.label,
      state: computeStackState(
        latest,
        mine.map((i) => i.status),
      ),
      project_id: s.project_uuid,
      compose_path: s.compose_path,
      deployment_config: {
        type: 'git' as const,
        repository: s.repository,
        branch: s.branch,
        auto_deploy_enabled: s.auto_deploy_enabled,
        credential_id: s.credential_id,
      },
      total_cpu_size: mine.reduce((sum, i) => sum + Number(i.cpu_size), 0),
      total_ram_size: mine.reduce((sum, i) => sum + Number(i.ram_size), 0),
      total_disk_size: mine.reduce((sum, i) => sum + Number(i.disk_size), 0),
      created_at: isoRequired(s.created_at),
      updated_at: isoRequired(s.updated_at),
      platform: resources.get(s.resource_uuid)!,
      services: mine.map((i) => ({
        compose_service_name: i.compose_service_name,
        compose_service_type: i.compose_service_type,
        status: i.status,
        item_type: i.item_type,
        item_uuid: i.uuid,
        item_name: i.item_name,
      })),
      latest_deployment: latest && {
        uuid: latest.uuid,
        state: latest.state,
        subevent: latest.subevent,
        commit_sha: latest.commit_sha,
        validation_errors: latest.validation_errors,
        published_at: iso(latest.published_at),
        completed_at: iso(latest.completed_at),
        created_at: isoRequired(latest.created_at),
      },
    };
  });
}
