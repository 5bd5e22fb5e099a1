import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { contentType, SITE_PREFIX, siteHost } from '../domain/static-sites';
import { one } from '../entities/sql';
import type { SiteFile } from '../platform/drivers/storage';
import type { ActivityDeps } from './deps';
import { cloneBranch } from './git';
import { moveState } from './state';

const MAX_FILES = 5000;
const MAX_BYTES = 100 * 2 ** 20;

async function collect(root: string, dir: string, out: SiteFile[], total: { bytes: number }): Promise<void> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.name === '.git') continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) await collect(root, full, out, total);
    else if (entry.isFile()) {
      const body = await readFile(full);
      total.bytes += body.length;
      if (out.length >= MAX_FILES || total.bytes > MAX_BYTES) {
        throw ApplicationFailure.nonRetryable(
          `the site is larger than ${MAX_FILES} files or ${MAX_BYTES / 2 ** 20} MiB`,
          'SiteContentError',
        );
      }
      const rel = path.relative(root, full).split(path.sep).join('/');
      out.push({ path: rel, body, contentType: contentType(rel) });
    }
  }
}

export function createStaticSiteActivities({
  dataSource,
  secretBox,
  provider,
  config,
  logger,
}: Pick<ActivityDeps, 'dataSource' | 'secretBox' | 'provider' | 'config' | 'logger'>) {
  return {
    /** Creates the site's content bucket and its route (pending -> ready to assign). False when the site is gone. */
    async provisionSiteStorage(siteUuid: string): Promise<boolean> {
      const s = await one<{ name: string; content_bucket: string }>(
        dataSource,
        `SELECT name, content_bucket FROM static_sites WHERE uuid = $1`,
        [siteUuid],
      );
      if (!s) return false;
      await provider.storage.createBucket(s.content_bucket);
      await provider.storage.routeSite(siteHost(s.name, config.sitesDomain), s.content_bucket, SITE_PREFIX);
      return true;
    },

    /**
     * A deployment starts: the deployment moves to running and the site to deploying, in one
     * transaction. Idempotent: a retry after the move answers true again; false when the
     * deployment was not pending (or the site cannot deploy now).
     */
    async startSiteDeployment(siteUuid: string, deploymentUuid: string): Promise<boolean> {
      return dataSource.transaction(async (m) => {
        const [d] = await m.query(`SELECT state FROM static_site_deployments WHERE uuid = $1 FOR UPDATE`, [
          deploymentUuid,
        ]);
        if (!d) return false;
        if (d.state === 'running') return true;
        if (d.state !== 'pending') return false;
        if (
          !(await moveState(
            m,
            { table: 'static_sites', uuid: siteUuid, from: ['assigned', 'running', 'failed'], to: 'deploying' },
            { failure_reason: null },
          ))
        )
          return false;
        await m.query(`UPDATE static_site_deployments SET state = 'running' WHERE uuid = $1`, [deploymentUuid]);
        return true;
      });
    },

    /**
     * Clones the content source with git, takes the files under publish_directory and
     * publishes them to the site's content bucket on the object store. build_command is
     * the data plane's to run; the simulated driver publishes the files as committed.
     */
    async publishSiteContent(
      siteUuid: string,
      deploymentUuid: string,
    ): Promise<{ commitSha: string; fileCount: number }> {
      const s = await one<{
        workspace_uuid: string;
        name: string;
        content_bucket: string;
        deployment_config: { repository?: string; branch?: string; publish_directory?: string };
        credential_id: string | null;
      }>(
        dataSource,
        `SELECT workspace_uuid, name, content_bucket, deployment_config, credential_id FROM static_sites WHERE uuid = $1`,
        [siteUuid],
      );
      if (!s || !s.deployment_config.repository)
        throw ApplicationFailure.nonRetryable('the site has no content source', 'SiteContentError');
      let credential = null;
      if (s.credential_id) {
        const c = await one<{ username: string; token_sealed: string }>(
          dataSource,
          `SELECT username, token_sealed FROM container_registry_credentials WHERE uuid = $1 AND workspace_uuid = $2`,
          [s.credential_id, s.workspace_uuid],
        );
        if (c) credential = { username: c.username || 'git', token: secretBox.open(c.token_sealed) };
      }
      const clone = await cloneBranch(s.deployment_config.repository, s.deployment_config.branch ?? 'main', {
        credential,
        allowFile: config.gitAllowFileUrls,
        caFile: config.gitCaFile,
      });
      try {
        const root = await realpath(clone.dir);
        let dir: string;
        try {
          dir = await realpath(path.join(root, s.deployment_config.publish_directory ?? '.'));
        } catch {
          throw ApplicationFailure.nonRetryable(
            `publish_directory "${s.deployment_config.publish_directory}" does not exist in the repository`,
            'SiteContentError',
          );
        }
        if ((dir !== root && !dir.startsWith(`${root}${path.sep}`)) || !(await stat(dir)).isDirectory()) {
          throw ApplicationFailure.nonRetryable(
            'publish_directory must be a directory inside the repository',
            'SiteContentError',
          );
        }
        const files: SiteFile[] = [];
        await collect(dir, dir, files, { bytes: 0 });
        if (files.length === 0)
          throw ApplicationFailure.nonRetryable('publish_directory holds no files', 'SiteContentError');
        const count = await provider.storage.publishFiles(s.content_bucket, SITE_PREFIX, files);
        await provider.storage.routeSite(siteHost(s.name, config.sitesDomain), s.content_bucket, SITE_PREFIX);
        await dataSource.query(`UPDATE static_site_deployments SET commit_sha = $2, file_count = $3 WHERE uuid = $1`, [
          deploymentUuid,
          clone.commitSha,
          count,
        ]);
        logger.info({ siteUuid, deploymentUuid, files: count }, 'static site published');
        return { commitSha: clone.commitSha, fileCount: count };
      } finally {
        await clone.dispose();
      }
    },

    /** Ends a deployment: the site runs, or fails with the reason. */
    async finishSiteDeployment(
      siteUuid: string,
      deploymentUuid: string,
      outcome: 'completed' | 'failed',
      message: string | null,
    ): Promise<void> {
      await dataSource.query(
        `UPDATE static_site_deployments SET state = $2, message = $3, completed_at = now() WHERE uuid = $1 AND state IN ('pending', 'running')`,
        [deploymentUuid, outcome, message],
      );
      await moveState(
        dataSource,
        {
          table: 'static_sites',
          uuid: siteUuid,
          from: ['pending', 'deploying'],
          to: outcome === 'completed' ? 'running' : 'failed',
        },
        { failure_reason: message?.slice(0, 500) ?? null },
      );
    },

    /** pending -> failed when provisioning cannot be done. */
    async failSite(siteUuid: string, reason: string): Promise<void> {
      await moveState(
        dataSource,
        { table: 'static_sites', uuid: siteUuid, from: ['pending'], to: 'failed' },
        { failure_reason: reason.slice(0, 500) },
      );
    },
  };
}
