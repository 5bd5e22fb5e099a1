import { createHash } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import { addonConnection } from '../../../domain/addon-connection';
import { composePathProblem, type AddonType, type Manifest } from '../../../domain/compose';
import type { SecretBox } from '../../../domain/secret-box';
import { one, rows } from '../../../entities/sql';
import { clusterIdOf, generatePassword } from '../../data';
import { openWorkspaceRegistryLogins } from '../../registry-credentials';
import type { AppMount, AppNetworkSpec, AppsDriver } from '../../../platform/drivers/apps';
import type { DataDriver, DataEngine } from '../../../platform/drivers/data';
import type { StacksDriver } from '../../../platform/drivers/stacks';
import { parseReleaseImage } from '../../../platform/local-layout';
import type { LocalBuilder } from './contracts';

export interface LocalStacksDeps {
  dataSource: DataSource;
  secretBox: SecretBox;
  builder: LocalBuilder;
  apps: AppsDriver;
  data: DataDriver;
  logger: Logger;
  /** Why container images do not run here (null: they do: `image:` services and Dockerfiles). */
  imagesRefusal: string | null;
  /** Why a named volume cannot be mounted at its path here (null: it can). */
  volumesRefusal: string | null;
  /** Pulls a registry image into a release of the app (the apps driver's imageRelease); answers its release image. */
  imageRelease(appUuid: string, image: string): Promise<string>;
  /** How often a build, a database or a rollout is looked at while waiting (default 1 s). */
  pollMs?: number;
  /** How long a service may take to serve, or a database to become healthy (default 5 minutes). */
  readyTimeoutMs?: number;
}

/** A stack's managed service as this driver keeps it (table local_stack_addons). */
interface StackAddon {
  item_uuid: string;
  compose_service_name: string;
  engine: AddonType;
  username: string | null;
  database: string | null;
  password_sealed: string;
}

/**
 * What of a compose file the local driver cannot run for real, one message per problem:
 * where this machine runs no container images (`imagesRefusal`), an `image:` service that is
 * no managed database image and a `build.dockerfile`; where volumes cannot be mounted at
 * their paths (`volumesRefusal`), named volumes on a service; an add-on whose server is not
 * installed.
 */
export function localStackRefusals(
  manifest: Manifest,
  supports: (engine: DataEngine) => string | null,
  imagesRefusal: string | null,
  volumesRefusal: string | null = null,
): string[] {
  const out: string[] = [];
  for (const s of manifest.services) {
    if (!s.build) {
      if (imagesRefusal) out.push(`${s.name}: image "${s.image}" cannot run here: ${imagesRefusal}`);
    } else {
      const problem = composePathProblem(s.build.context);
      if (problem) out.push(`${s.name}: the build context "${s.build.context}" ${problem}`);
      if (s.build.dockerfile && imagesRefusal)
        out.push(`${s.name}: build.dockerfile "${s.build.dockerfile}" cannot be built here: ${imagesRefusal}`);
    }
    if (s.volumes.length > 0 && volumesRefusal) {
      out.push(
        `${s.name}: the named volumes ${s.volumes.map((v) => `"${v}"`).join(', ')} cannot be mounted: ${volumesRefusal}`,
      );
    }
  }
  for (const a of manifest.addons) {
    const reason = supports(a.type);
    if (reason) out.push(`${a.name}: ${reason}`);
  }
  return out;
}

/** A stack build's id for the builder: one per stack deployment and service (a retry finds the same build). */
function buildId(deploymentUuid: string, itemUuid: string): string {
  const h = createHash('sha256').update(`stack-build:${deploymentUuid}:${itemUuid}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** A stack's named volume as a storage volume of the local data driver: one id per stack and name. */
function stackVolumeId(stackUuid: string, name: string): string {
  return `sv-${createHash('sha256').update(`stack-volume:${stackUuid}:${name}`).digest('hex').slice(0, 24)}`;
}

/** `db` -> `DB_URL`: the per-service variable naming each add-on's connection URL. */
function serviceUrlKey(service: string): string {
  return `${service.toUpperCase().replace(/[^A-Z0-9]+/g, '_')}_URL`;
}

/**
 * Stacks on the LOCAL driver. A `build:` service is an app of the workspace already (the
 * stack publishes it as a row of `apps` named `<service>-<6 hex>`): the local builder
 * builds its build context at the stack's commit, and the local apps driver runs the
 * release as supervised processes behind the ingress, at `<app name>.<region domain>`.
 * A managed database image becomes a real server of the local data driver (cluster
 * `c-<item uuid>`), with a generated user, database and password kept here. Each built
 * service gets the add-ons' connection variables (DATABASE_URL, REDIS_URL, ... from the
 * first of each engine, and `<SERVICE>_URL` for every one). What cannot run for real is
 * refused at validation (`localStackRefusals`). See docs/decisions.md, "Local stacks".
 */
export function createLocalStacks(deps: LocalStacksDeps): StacksDriver {
  const { dataSource: ds, secretBox, builder, apps, data } = deps;
  const pollMs = deps.pollMs ?? 1000;
  const readyTimeoutMs = deps.readyTimeoutMs ?? 5 * 60_000;
  const sleep = () => new Promise((r) => setTimeout(r, pollMs));

  /** The add-on's row, created with a new password on first use. */
  async function addonRow(itemUuid: string): Promise<StackAddon> {
    const item = await one<{ compose_service_name: string; compose_service_type: AddonType }>(
      ds,
      `SELECT compose_service_name, compose_service_type FROM stack_items WHERE uuid = $1 AND item_type = 'addon'`,
      [itemUuid],
    );
    if (!item)
      throw ApplicationFailure.nonRetryable(`stack service ${itemUuid} is not a managed add-on`, 'StackServiceGone');
    const user = item.compose_service_type === 'valkey' ? null : 'app';
    await ds.query(
      `INSERT INTO local_stack_addons (item_uuid, engine, username, database, password_sealed) VALUES ($1, $2, $3, $3, $4) ON CONFLICT (item_uuid) DO NOTHING`,
      [itemUuid, item.compose_service_type, user, secretBox.seal(generatePassword())],
    );
    const row = await one<Omit<StackAddon, 'compose_service_name'>>(
      ds,
      `SELECT * FROM local_stack_addons WHERE item_uuid = $1`,
      [itemUuid],
    );
    return { ...row!, compose_service_name: item.compose_service_name };
  }

  /** Provisions the add-on's server (idempotent) and waits until it is healthy; answers its connection variables. */
  async function ensureAddon(
    itemUuid: string,
  ): Promise<{ service: string; engine: AddonType; vars: Record<string, string>; url: string }> {
    const a = await addonRow(itemUuid);
    const size = await one<{ cpu_size: number; ram_size: string }>(
      ds,
      `SELECT cpu_size, ram_size FROM stack_items WHERE uuid = $1`,
      [itemUuid],
    );
    const id = clusterIdOf(itemUuid);
    const password = secretBox.open(a.password_sealed);
    await data.provision({
      id,
      engine: a.engine,
      cpuSize: Number(size?.cpu_size ?? 0.5),
      ramSize: Number(size?.ram_size ?? 512 * 2 ** 20),
      publicAccess: false,
      backups: false,
      password,
      username: a.username,
      database: a.database,
    });
    const deadline = Date.now() + readyTimeoutMs;
    for (;;) {
      const s = await data.status(id);
      if (s.status === 'healthy' && s.endpoint) {
        const conn = addonConnection({
          type: a.engine,
          name: a.compose_service_name,
          settings: {},
          username: a.username,
          database_name: a.database,
          password,
          public_access: false,
          region_domain: '',
          endpoint: s.endpoint,
        });
        return {
          service: a.compose_service_name,
          engine: a.engine,
          vars: conn.var,
          url: conn.connection_details!.internal.connection_url,
        };
      }
      if (Date.now() > deadline)
        throw ApplicationFailure.retryable(
          `${a.compose_service_name} is not healthy (${s.status})`,
          'StackAddonNotReady',
        );
      await sleep();
    }
  }

  /** The environment of a built service: its stack's add-ons' connection variables (the first of each engine keeps the common names). */
  async function addonEnvironment(itemUuid: string): Promise<{ env: Record<string, string>; clusters: string[] }> {
    const siblings = await rows<{ uuid: string }>(
      ds,
      `SELECT i.uuid FROM stack_items i JOIN stack_items me ON me.stack_uuid = i.stack_uuid
        WHERE me.uuid = $1 AND i.item_type = 'addon' ORDER BY i.created_at, i.compose_service_name`,
      [itemUuid],
    );
    const env: Record<string, string> = {};
    for (const s of siblings) {
      const a = await ensureAddon(s.uuid);
      for (const [k, v] of Object.entries(a.vars)) if (!(k in env)) env[k] = v;
      env[serviceUrlKey(a.service)] = a.url;
    }
    return { env, clusters: siblings.map((s) => clusterIdOf(s.uuid)) };
  }

  /**
   * A built service's place on its workspace's network: reached by its compose name by the
   * stack's other services (compose's own rule), reaching the stack's add-on servers.
   */
  async function serviceNetwork(itemUuid: string, clusters: string[]): Promise<AppNetworkSpec | undefined> {
    const found = await one<{ workspace_uuid: string; compose_service_name: string }>(
      ds,
      `SELECT s.workspace_uuid, i.compose_service_name FROM stack_items i JOIN stacks s ON s.uuid = i.stack_uuid WHERE i.uuid = $1`,
      [itemUuid],
    );
    if (!found) return undefined;
    return {
      workspace: found.workspace_uuid,
      serviceName: found.compose_service_name,
      allowConnections: true,
      clusters,
    };
  }

  /**
   * The named volumes a service mounts, as app mounts: each a storage volume of the stack
   * (made on first use, kept across deployments and services: compose's own rule).
   */
  async function serviceMounts(itemUuid: string): Promise<AppMount[]> {
    const found = await one<{ stack_uuid: string; service: string; manifest: Manifest | null }>(
      ds,
      `SELECT s.uuid AS stack_uuid, i.compose_service_name AS service, s.manifest
         FROM stack_items i JOIN stacks s ON s.uuid = i.stack_uuid WHERE i.uuid = $1`,
      [itemUuid],
    );
    if (!found) return [];
    const service = found.manifest?.services.find((x) => x.name === found.service);
    const mounts: AppMount[] = [];
    for (const m of service?.mounts ?? []) {
      const volumeId = stackVolumeId(found.stack_uuid, m.volume);
      await ds.query(
        `INSERT INTO local_stack_volumes (volume_id, stack_uuid, name) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
        [volumeId, found.stack_uuid, m.volume],
      );
      await data.provision({
        id: volumeId,
        engine: 'storage',
        cpuSize: 0,
        ramSize: 0,
        publicAccess: false,
        backups: false,
        password: null,
      });
      mounts.push({ volumeId, subPath: null, mountPath: m.path });
    }
    return mounts;
  }

  /** The named volumes of stacks that are gone (their services are being removed): folders and rows. */
  async function dropVolumesOfDeletedStacks(): Promise<void> {
    const gone = await rows<{ volume_id: string }>(
      ds,
      `SELECT volume_id FROM local_stack_volumes v WHERE NOT EXISTS (SELECT 1 FROM stacks s WHERE s.uuid = v.stack_uuid)`,
    );
    for (const v of gone) {
      await data.delete(v.volume_id);
      await ds.query(`DELETE FROM local_stack_volumes WHERE volume_id = $1`, [v.volume_id]);
    }
  }

  async function waitServing(itemUuid: string, name: string): Promise<string> {
    const deadline = Date.now() + readyTimeoutMs;
    for (;;) {
      const failure = await apps.rolloutFailure(itemUuid);
      if (failure) throw ApplicationFailure.nonRetryable(`${name} does not serve: ${failure}`, 'StackServiceFailed');
      const status = await apps.status(itemUuid);
      if (status === 'running') return 'running';
      if (status === 'failed')
        throw ApplicationFailure.nonRetryable(
          `${name} does not serve: its processes keep failing (see its logs)`,
          'StackServiceFailed',
        );
      if (Date.now() > deadline)
        throw ApplicationFailure.nonRetryable(
          `${name} did not serve within ${Math.round(readyTimeoutMs / 1000)} s (status ${status})`,
          'StackServiceFailed',
        );
      await sleep();
    }
  }

  const provisionApp = (
    itemUuid: string,
    name: string,
    ports: number[],
    cpuSize: number,
    ramSize: number,
    diskSize: number,
  ) =>
    apps.provision({
      appUuid: itemUuid,
      name,
      resourceUuid: '',
      internalPort: ports[0] ?? 8080,
      cpuSize,
      ramSize,
      diskSize,
      replicas: 1,
    });

  return {
    refusals: (manifest) =>
      localStackRefusals(manifest, (engine) => data.supports(engine), deps.imagesRefusal, deps.volumesRefusal),

    async buildImage(itemUuid, spec) {
      await provisionApp(itemUuid, itemUuid, [], 0.5, 512 * 2 ** 20, 0);
      const deploymentUuid = buildId(spec.deploymentUuid, itemUuid);
      // a Dockerfile's private FROM is pulled with the workspace's credential for its registry, as an app's is
      const stack = await one<{ workspace_uuid: string }>(
        ds,
        `SELECT s.workspace_uuid FROM stack_items i JOIN stacks s ON s.uuid = i.stack_uuid WHERE i.uuid = $1`,
        [itemUuid],
      );
      const registryLogins =
        stack && !deps.imagesRefusal
          ? await openWorkspaceRegistryLogins({ dataSource: ds, secretBox }, stack.workspace_uuid)
          : [];
      await builder.start({
        appUuid: itemUuid,
        deploymentUuid,
        source: {
          repository: spec.repository,
          commitSha: spec.commitSha,
          context: spec.context,
          // compose builds the context's Dockerfile; without one the context is detected (Procfile, Node, ...)
          dockerfile: deps.imagesRefusal ? null : spec.dockerfile,
          dockerfileIfPresent: !deps.imagesRefusal,
          registryLogins,
        },
      });
      for (;;) {
        const s = await builder.status(deploymentUuid);
        if (s.status === 'succeeded') return s.image;
        if (s.status === 'failed') throw ApplicationFailure.nonRetryable(s.reason, 'StackBuildFailed');
        if (s.status === 'cancelled')
          throw ApplicationFailure.nonRetryable('the build was cancelled', 'StackBuildFailed');
        await sleep();
      }
    },

    async runService(itemUuid, spec) {
      if (spec.kind === 'addon') {
        await ensureAddon(itemUuid);
        return 'running';
      }
      const { env, clusters } = await addonEnvironment(itemUuid);
      await provisionApp(itemUuid, spec.name, spec.ports, spec.cpuSize, spec.ramSize, spec.diskSize);
      const network = await serviceNetwork(itemUuid, clusters);
      // an `image:` service: the registry image becomes a release of its app (a built one is one already)
      const image = parseReleaseImage(spec.image) ? spec.image : await deps.imageRelease(itemUuid, spec.image);
      await apps.rollout(itemUuid, image, {
        env,
        internalPort: spec.ports[0] ?? 8080,
        cpuSize: spec.cpuSize,
        ramSize: spec.ramSize,
        replicas: 1,
        healthChecks: [],
        mounts: await serviceMounts(itemUuid),
        ...(network ? { network } : {}),
      });
      return waitServing(itemUuid, spec.name);
    },

    async removeService(itemUuid) {
      const addon = await one<{ item_uuid: string }>(
        ds,
        `SELECT item_uuid FROM local_stack_addons WHERE item_uuid = $1`,
        [itemUuid],
      );
      if (addon) {
        await data.delete(clusterIdOf(itemUuid));
        await ds.query(`DELETE FROM local_stack_addons WHERE item_uuid = $1`, [itemUuid]);
      } else {
        await apps.delete(itemUuid);
      }
      await dropVolumesOfDeletedStacks();
    },
  };
}
