import { randomBytes, randomUUID } from 'node:crypto';
import { siteHost } from '../../domain/static-sites';
import { ComputeResource } from '../../entities/compute-resource';
import { Region } from '../../entities/region';
import { insertReturning, updateReturning } from '../../entities/sql';
import { StaticSite, StaticSiteDeployment, type SiteSourceConfig } from '../../entities/static-site';
import { assertProjectVisible } from '../access';
import type { Caller } from '../context';
import { checkCredential, checkRepository } from '../git-source';
import { checkProject } from '../placement';
import { conflict, notFound, Problem, unprocessable } from '../problem';
import { snapshotOf, type Tx } from './audited-write';

/** A change to a site's content source (PUT /static_sites/{uuid}/deployment, POST's deployment_config). */
export interface SourceInput {
  repository?: string;
  branch?: string;
  build_command?: string | null;
  publish_directory?: string;
  credential_id?: string | null;
}

export interface CreateSiteInput {
  name: string;
  label?: string;
  project_id?: string;
  region?: string;
  deployment_config?: SourceInput;
}

/** The stored content source with a change merged in; the repository is checked like stacks', a new credential must be stored. */
async function mergeSource(
  tx: Tx,
  caller: Caller,
  current: SiteSourceConfig,
  currentCredential: string | null,
  b: SourceInput,
): Promise<{ config: SiteSourceConfig; credentialId: string | null }> {
  const repository =
    b.repository === undefined ? current.repository : checkRepository(tx.deps.config, b.repository, 'repository');
  const credentialId = b.credential_id === undefined ? currentCredential : b.credential_id;
  if (b.credential_id !== undefined) await checkCredential(tx.m, caller.workspaceUuid, credentialId);
  return {
    config: {
      repository,
      branch: b.branch ?? current.branch ?? 'main',
      build_command: b.build_command === undefined ? (current.build_command ?? null) : b.build_command,
      publish_directory: b.publish_directory ?? current.publish_directory ?? '.',
    },
    credentialId,
  };
}

/** The region named, else the region of the workspace's first compute resource; 422 when there is none. */
async function regionOf(tx: Tx, caller: Caller, code: string | undefined): Promise<Region> {
  const region = code
    ? await tx.m.findOneBy(Region, { code })
    : await tx.m
        .createQueryBuilder(Region, 'g')
        .innerJoin(ComputeResource, 'c', 'c.region_id = g.id')
        .where('c.workspace_uuid = :workspace', { workspace: caller.workspaceUuid })
        .orderBy('c.created_at')
        .limit(1)
        .getOne();
  if (!region)
    throw unprocessable(code ? `region ${code} does not exist` : 'the workspace has no region yet; send region', [
      { path: 'body.region', message: 'unknown region' },
    ]);
  return region;
}

/** The site, locked for the change: in the caller's workspace and in a project open to the caller, else 404. */
async function siteForChange(tx: Tx, caller: Caller, uuid: string): Promise<StaticSite> {
  const site = await tx.m.findOne(StaticSite, {
    where: { uuid, workspace_uuid: caller.workspaceUuid },
    lock: { mode: 'pessimistic_write' },
  });
  if (!site) throw notFound('static site');
  await assertProjectVisible({ caller, deps: tx.deps }, site.project_uuid, 'static site');
  return site;
}

/** A deployment of the site in state pending (its workflow is started by the caller's operation). */
async function insertDeployment(tx: Tx, siteUuid: string): Promise<string> {
  const uuid = randomUUID();
  await insertReturning(tx.m, StaticSiteDeployment, { uuid, site_uuid: siteUuid });
  return uuid;
}

/**
 * POST /static_sites: a site served under its name (unique: 409), in a bucket of its own; its
 * provisioning workflow is enqueued, with its first deployment when a repository is given.
 */
export async function createStaticSite(tx: Tx, caller: Caller, b: CreateSiteInput): Promise<StaticSite> {
  if (!tx.deps.storage?.endpoint)
    throw new Problem(503, 'object storage is not configured on this installation (BERTH_S3_ENDPOINT)');
  const source = b.deployment_config ? await mergeSource(tx, caller, {}, null, b.deployment_config) : null;
  if (b.project_id) await checkProject({ caller, deps: tx.deps }, tx.m, b.project_id);
  const region = await regionOf(tx, caller, b.region);
  // ON CONFLICT DO NOTHING: the uuid and bucket are fresh, so the one conflict possible is the name.
  const site = await insertReturning(
    tx.m,
    StaticSite,
    {
      uuid: randomUUID(),
      workspace_uuid: caller.workspaceUuid,
      project_uuid: b.project_id ?? null,
      region_id: region.id,
      name: b.name,
      label: b.label ?? b.name,
      content_bucket: `site-${randomBytes(8).toString('hex')}`,
      deployment_config: source?.config ?? {},
      credential_id: source?.credentialId ?? null,
    },
    { ignoreConflict: true },
  );
  if (!site)
    throw conflict(`the name "${b.name}" is taken: a static site is served under its name, so names are unique`);
  const deploymentUuid = source?.config.repository ? await insertDeployment(tx, site.uuid) : null;
  await tx.enqueue({
    operation: 'static-site-provision',
    workflow: 'staticSiteProvision',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: site.uuid,
    args: [{ workspaceUuid: caller.workspaceUuid, siteUuid: site.uuid, deploymentUuid }],
  });
  await tx.audit({ action: 'static_site.create', resourceUuid: site.uuid, before: null, after: snapshotOf(site) });
  return site;
}

/** PUT /static/{uuid}: the label, or the project (checked); the served name is fixed. */
export async function updateStaticSite(
  tx: Tx,
  caller: Caller,
  input: { uuid: string; label?: string; project_id?: string | null },
): Promise<StaticSite> {
  const site = await siteForChange(tx, caller, input.uuid);
  if (input.project_id) await checkProject({ caller, deps: tx.deps }, tx.m, input.project_id);
  const updated = (await updateReturning(tx.m, StaticSite, site.uuid, {
    label: input.label ?? site.label,
    project_uuid: input.project_id === undefined ? site.project_uuid : input.project_id,
  }))!;
  await tx.audit({
    action: 'static_site.update',
    resourceUuid: site.uuid,
    before: snapshotOf(site),
    after: snapshotOf(updated),
  });
  return updated;
}

/**
 * PUT /static_sites/{uuid}/deployment: the content source changes and a deployment starts;
 * a repository is needed (422), the site must be provisioned and no deployment running (409).
 */
export async function deployStaticSite(
  tx: Tx,
  caller: Caller,
  input: SourceInput & { uuid: string },
): Promise<StaticSite> {
  const site = await siteForChange(tx, caller, input.uuid);
  const source = await mergeSource(tx, caller, site.deployment_config, site.credential_id, input);
  if (!source.config.repository)
    throw unprocessable('a content source is needed: send repository', [
      { path: 'body.repository', message: 'required' },
    ]);
  if (site.state === 'pending') throw conflict('the site is still being provisioned; try again when it is assigned');
  const busy = await tx.m
    .createQueryBuilder(StaticSiteDeployment, 'd')
    .where("d.site_uuid = :site AND d.state IN ('pending', 'running')", { site: site.uuid })
    .getExists();
  if (busy) throw conflict('a deployment of this site is in progress');
  const updated = (await updateReturning(tx.m, StaticSite, site.uuid, {
    deployment_config: source.config,
    credential_id: source.credentialId,
  }))!;
  const deploymentUuid = await insertDeployment(tx, site.uuid);
  await tx.enqueue({
    operation: 'static-site-deploy',
    workflow: 'staticSiteDeploy',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: site.uuid,
    subId: deploymentUuid,
    args: [{ workspaceUuid: caller.workspaceUuid, siteUuid: site.uuid, deploymentUuid }],
  });
  await tx.audit({
    action: 'static_site.deploy',
    resourceUuid: site.uuid,
    before: snapshotOf(site),
    after: snapshotOf(updated),
  });
  return updated;
}

/** DELETE /static_sites/{uuid}: the site goes; its cleanup workflow removes its route and its content. */
export async function deleteStaticSite(tx: Tx, caller: Caller, input: { uuid: string }): Promise<void> {
  const site = await siteForChange(tx, caller, input.uuid);
  await tx.m.delete(StaticSite, { uuid: site.uuid });
  await tx.audit({ action: 'static_site.delete', resourceUuid: site.uuid, before: snapshotOf(site), after: null });
  await tx.enqueue({
    operation: 'static-site-delete',
    workflow: 'storageCleanup',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: site.uuid,
    args: [
      { bucketName: site.content_bucket, accessKey: null, siteHost: siteHost(site.name, tx.deps.config.sitesDomain) },
    ],
  });
}
