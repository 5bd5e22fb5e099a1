import { randomBytes, randomUUID } from 'node:crypto';
import { readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import type { AppState } from '../domain/apps';
import { analyzeCompose, COMPOSE_FILE_NAMES, ComposeError, type Manifest } from '../domain/compose';
import type { AnalyzeInput, AnalyzeResult, StackState } from '../domain/stacks';
import { insertAppOnce } from '../entities/app-rows';
import { one, rows } from '../entities/sql';
import type { ActivityDeps } from './deps';
import { moveAppTo, moveState } from './state';
import { cloneBranch, type GitCredential } from './git';

export interface PublishedItem {
  uuid: string;
  name: string;
  kind: 'app' | 'addon';
  image: string | null;
  build: { context: string; dockerfile: string | null } | null;
  ports: number[];
  cpuSize: number;
  ramSize: number;
  diskSize: number;
}

const MAX_COMPOSE_BYTES = 512 * 1024;

async function readCompose(dir: string, composePath: string): Promise<{ text: string; file: string }> {
  const root = await realpath(dir);
  let target: string;
  try {
    target = await realpath(path.join(root, composePath));
  } catch {
    throw ApplicationFailure.nonRetryable(
      `compose_path "${composePath}" does not exist in the repository`,
      'ComposeError',
    );
  }
  if (target !== root && !target.startsWith(`${root}${path.sep}`)) {
    throw ApplicationFailure.nonRetryable('compose_path leads outside the repository', 'ComposeError');
  }
  let file = target;
  if ((await stat(target)).isDirectory()) {
    const found = [];
    for (const name of COMPOSE_FILE_NAMES) {
      try {
        if ((await stat(path.join(target, name))).isFile()) found.push(name);
      } catch {
        /* not there */
      }
    }
    if (found.length === 0)
      throw ApplicationFailure.nonRetryable(
        `no compose file (${COMPOSE_FILE_NAMES.join(', ')}) in "${composePath}"`,
        'ComposeError',
      );
    file = path.join(target, found[0]!);
  }
  const info = await stat(file);
  if (info.size > MAX_COMPOSE_BYTES)
    throw ApplicationFailure.nonRetryable('the compose file is larger than 512 KiB', 'ComposeError');
  return { text: await readFile(file, 'utf8'), file: path.relative(root, file) };
}

export function createStackActivities({
  dataSource,
  secretBox,
  provider,
  config,
  logger,
}: Pick<ActivityDeps, 'dataSource' | 'secretBox' | 'provider' | 'config' | 'logger'>) {
  /** A stored credential of the workspace, opened here (never passed through a workflow). */
  async function credential(workspaceUuid: string, credentialId: string | null): Promise<GitCredential | null> {
    if (!credentialId) return null;
    const row = await one<{ username: string; token_sealed: string }>(
      dataSource,
      `SELECT username, token_sealed FROM container_registry_credentials WHERE uuid = $1 AND workspace_uuid = $2`,
      [credentialId, workspaceUuid],
    );
    if (!row)
      throw ApplicationFailure.nonRetryable(
        'credential_id does not name a stored credential of this workspace',
        'GitError',
      );
    return { username: row.username || 'git', token: secretBox.open(row.token_sealed) };
  }

  async function analyze(input: AnalyzeInput): Promise<AnalyzeResult> {
    const clone = await cloneBranch(input.repositoryUrl, input.branch, {
      credential: await credential(input.workspaceUuid, input.credentialId),
      allowFile: config.gitAllowFileUrls,
      caFile: config.gitCaFile,
    });
    try {
      const { text, file } = await readCompose(clone.dir, input.composePath);
      try {
        const { manifest, warnings } = analyzeCompose(text, file);
        return { commitSha: clone.commitSha, manifest, warnings };
      } catch (err) {
        if (err instanceof ComposeError) throw ApplicationFailure.nonRetryable(err.message, 'ComposeError');
        throw err;
      }
    } finally {
      await clone.dispose();
    }
  }

  return {
    /** Clones the repository with git and analyzes its compose file; creates nothing. */
    analyzeStackSource: analyze,

    /** Moves a deployment into a phase (guarded by the phases it may come from). */
    async setStackDeploymentPhase(
      deploymentUuid: string,
      from: StackState[],
      to: StackState,
      subevent: string,
    ): Promise<boolean> {
      return moveState(dataSource, { table: 'stack_deployments', uuid: deploymentUuid, from, to }, { subevent });
    },

    /**
     * validating: clones the tracked branch again, analyzes it and checks that every
     * required variable has a stored value. Records the commit and any validation errors.
     */
    async validateStackDeployment(deploymentUuid: string): Promise<{ ok: boolean; commitSha: string | null }> {
      const s = await one<{
        stack_uuid: string;
        workspace_uuid: string;
        repository: string;
        branch: string;
        compose_path: string;
        credential_id: string | null;
        variables_sealed: string;
      }>(
        dataSource,
        `SELECT s.uuid AS stack_uuid, s.workspace_uuid, s.repository, s.branch, s.compose_path, s.credential_id, s.variables_sealed
           FROM stack_deployments d JOIN stacks s ON s.uuid = d.stack_uuid WHERE d.uuid = $1`,
        [deploymentUuid],
      );
      if (!s) return { ok: false, commitSha: null };
      let result: AnalyzeResult;
      try {
        result = await analyze({
          workspaceUuid: s.workspace_uuid,
          repositoryUrl: s.repository,
          branch: s.branch,
          composePath: s.compose_path,
          credentialId: s.credential_id,
        });
      } catch (err) {
        if (err instanceof ApplicationFailure && (err.type === 'GitError' || err.type === 'ComposeError')) {
          const key = err.type === 'GitError' ? 'repository' : 'compose';
          await dataSource.query(
            `UPDATE stack_deployments SET validation_errors = $2, updated_at = now() WHERE uuid = $1`,
            [deploymentUuid, JSON.stringify({ [key]: [err.message] })],
          );
          return { ok: false, commitSha: null };
        }
        throw err;
      }
      const values = JSON.parse(secretBox.open(s.variables_sealed)) as Record<string, string>;
      const missing = result.manifest.required_variables.filter((v) => values[v] === undefined);
      // what the data plane cannot run for real is refused here, before anything is published
      const refused = provider.stacks.refusals(result.manifest);
      const errors = {
        ...(missing.length > 0 ? { variables: missing.map((v) => `${v} is required and has no value`) } : {}),
        ...(refused.length > 0 ? { services: refused } : {}),
      };
      const ok = missing.length === 0 && refused.length === 0;
      await dataSource.query(
        `UPDATE stack_deployments SET commit_sha = $2, validation_errors = $3, updated_at = now() WHERE uuid = $1`,
        [deploymentUuid, result.commitSha, JSON.stringify(errors)],
      );
      if (ok) {
        await dataSource.query(`UPDATE stacks SET manifest = $2, updated_at = now() WHERE uuid = $1`, [
          s.stack_uuid,
          JSON.stringify(result.manifest),
        ]);
      }
      return { ok, commitSha: result.commitSha };
    },

    /**
     * publishing: materializes the manifest as stack items. App services become rows of
     * `apps` (same uuid, server-assigned suffixed name); managed add-ons are items of type
     * addon. Services gone from the compose file are removed. Allocations follow.
     */
    async publishStackServices(deploymentUuid: string): Promise<PublishedItem[]> {
      return dataSource.transaction(async (m) => {
        const s = await one<{
          uuid: string;
          workspace_uuid: string;
          project_uuid: string | null;
          resource_uuid: string;
          label: string;
          manifest: Manifest;
        }>(
          m,
          `SELECT s.uuid, s.workspace_uuid, s.project_uuid, s.resource_uuid, s.label, s.manifest
             FROM stack_deployments d JOIN stacks s ON s.uuid = d.stack_uuid WHERE d.uuid = $1 FOR UPDATE OF s`,
          [deploymentUuid],
        );
        if (!s) return [];
        const existing = await rows<{ uuid: string; compose_service_name: string; item_type: string }>(
          m,
          `SELECT uuid, compose_service_name, item_type FROM stack_items WHERE stack_uuid = $1`,
          [s.uuid],
        );
        const byName = new Map(existing.map((e) => [e.compose_service_name, e]));
        const volumeDisk = (names: string[]) =>
          s.manifest.volumes.filter((v) => names.includes(v.name)).reduce((sum, v) => sum + v.disk_size, 0);
        const wanted: PublishedItem[] = [
          ...s.manifest.services.map((svc) => ({
            uuid: '',
            name: svc.name,
            kind: 'app' as const,
            image: svc.image,
            build: svc.build,
            ports: svc.ports,
            cpuSize: svc.cpu_size,
            ramSize: svc.ram_size,
            diskSize: volumeDisk(svc.volumes),
          })),
          ...s.manifest.addons.map((a) => ({
            uuid: '',
            name: a.name,
            kind: 'addon' as const,
            image: a.image,
            build: null,
            ports: [],
            cpuSize: a.cpu_size,
            ramSize: a.ram_size,
            diskSize: a.disk_size + volumeDisk(a.volumes),
          })),
        ];
        for (const gone of existing.filter(
          (e) => !wanted.some((w) => w.name === e.compose_service_name && w.kind === e.item_type),
        )) {
          await provider.stacks.removeService(gone.uuid);
          await m.query(`DELETE FROM resource_allocations WHERE owner_uuid = $1`, [gone.uuid]);
          await m.query(`DELETE FROM stack_items WHERE uuid = $1`, [gone.uuid]);
          if (gone.item_type === 'app') await m.query(`DELETE FROM apps WHERE uuid = $1`, [gone.uuid]);
        }
        for (const w of wanted) {
          const prior = byName.get(w.name);
          const uuid = prior && prior.item_type === w.kind ? prior.uuid : randomUUID();
          w.uuid = uuid;
          const itemName =
            w.kind === 'app'
              ? `${w.name.toLowerCase().replace(/[^a-z0-9-]+/g, '-')}-${randomBytes(3).toString('hex')}`
              : `${s.label} ${w.name}`;
          if (!prior || prior.item_type !== w.kind) {
            if (w.kind === 'app') {
              await insertAppOnce(m, {
                uuid,
                workspace_uuid: s.workspace_uuid,
                project_uuid: s.project_uuid,
                resource_uuid: s.resource_uuid,
                name: itemName,
                service_name: w.name,
                label: `${s.label} ${w.name}`,
                state: 'pending',
              });
            }
            await m.query(
              `INSERT INTO stack_items (uuid, stack_uuid, compose_service_name, compose_service_type, item_type, item_name, status)
               VALUES ($1, $2, $3, $4, $5, $6, 'pending')`,
              [
                uuid,
                s.uuid,
                w.name,
                w.kind === 'app' ? 'app' : s.manifest.addons.find((a) => a.name === w.name)!.type,
                w.kind,
                itemName,
              ],
            );
          }
          await m.query(
            `UPDATE stack_items SET cpu_size = $2, ram_size = $3, disk_size = $4, status = 'pending', updated_at = now() WHERE uuid = $1`,
            [uuid, w.cpuSize, w.ramSize, w.diskSize],
          );
          await m.query(
            `INSERT INTO resource_allocations (owner_uuid, owner_type, resource_uuid, cpu_size, ram_size, disk_size) VALUES ($1, 'stack_item', $2, $3, $4, $5)
             ON CONFLICT (owner_uuid) DO UPDATE SET cpu_size = EXCLUDED.cpu_size, ram_size = EXCLUDED.ram_size, disk_size = EXCLUDED.disk_size`,
            [uuid, s.resource_uuid, w.cpuSize, w.ramSize, w.diskSize],
          );
        }
        await m.query(
          `UPDATE stack_deployments SET published_at = COALESCE(published_at, now()), updated_at = now() WHERE uuid = $1`,
          [deploymentUuid],
        );
        return wanted;
      });
    },

    /** building: an image for a service with a build section (the data plane builds it). */
    async buildStackService(deploymentUuid: string, item: PublishedItem): Promise<string> {
      const d = await one<{ repository: string; commit_sha: string; compose_file: string }>(
        dataSource,
        `SELECT s.repository, d.commit_sha, s.manifest->>'compose_file' AS compose_file
           FROM stack_deployments d JOIN stacks s ON s.uuid = d.stack_uuid WHERE d.uuid = $1`,
        [deploymentUuid],
      );
      // compose resolves a build context against the compose file's folder
      const context = path.posix.normalize(
        path.posix.join(path.posix.dirname(d!.compose_file ?? '.'), item.build!.context),
      );
      return provider.stacks.buildImage(item.uuid, {
        deploymentUuid,
        repository: d!.repository,
        commitSha: d!.commit_sha,
        context,
        dockerfile: item.build!.dockerfile,
      });
    },

    /** deploying: rolls a service out and records its live status (apps mirror it in apps.state). */
    async deployStackService(item: PublishedItem, image: string): Promise<string> {
      const status = await provider.stacks.runService(item.uuid, {
        name: item.name,
        kind: item.kind,
        image,
        ports: item.ports,
        cpuSize: item.cpuSize,
        ramSize: item.ramSize,
        diskSize: item.diskSize,
      });
      await dataSource.query(`UPDATE stack_items SET status = $2, updated_at = now() WHERE uuid = $1`, [
        item.uuid,
        status,
      ]);
      if (item.kind === 'app') await moveAppTo(dataSource, item.uuid, status as AppState);
      return status;
    },

    async failStackService(itemUuid: string, reason: string): Promise<void> {
      logger.warn({ itemUuid, reason }, 'stack service failed to deploy');
      await dataSource.query(`UPDATE stack_items SET status = 'failed', updated_at = now() WHERE uuid = $1`, [
        itemUuid,
      ]);
      await moveAppTo(dataSource, itemUuid, 'failed');
    },

    /** After a stack is deleted: its services leave the data plane (idempotent). */
    async removeStackServices(itemUuids: string[]): Promise<number> {
      for (const uuid of itemUuids) await provider.stacks.removeService(uuid);
      return itemUuids.length;
    },

    /** Ends a deployment: completed (at least one service runs) or failed. */
    async finishStackDeployment(
      deploymentUuid: string,
      outcome: 'completed' | 'failed',
      subevent: string,
    ): Promise<boolean> {
      const moved = await rows(
        dataSource,
        `UPDATE stack_deployments SET state = $2, subevent = $3, completed_at = now(), updated_at = now()
          WHERE uuid = $1 AND state NOT IN ('completed', 'failed') RETURNING uuid`,
        [deploymentUuid, outcome, subevent],
      );
      return moved.length > 0;
    },
  };
}
