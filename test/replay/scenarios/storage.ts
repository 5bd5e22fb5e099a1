import { seedWorkspace, type Workspace } from '../../support/fixtures';
import { fixture, localRepo } from '../../support/git';
import { startObjectStore } from '../../support/object-store';
import { eventually, startStack, type TestStack } from '../../support/stack';
import type { History, ReplayScenario } from './types';

/**
 * Buckets, static sites and stacks need an object store and file:// repositories, so
 * each scenario runs on a stack of its own (same dev server) with the embedded store.
 */
async function withStorageStack(
  fn: (stack: TestStack, ws: Workspace, auth: Record<string, string>) => Promise<History>,
): Promise<History> {
  const store = await startObjectStore();
  const stack = await startStack({ objectStore: store, env: { BERTH_GIT_ALLOW_FILE_URLS: '1' } });
  try {
    await stack.startWorker();
    const ws = await seedWorkspace(stack.ds);
    return await fn(stack, ws, { Authorization: `Bearer ${ws.ownerToken}` });
  } finally {
    await stack.close();
    await store.dispose();
  }
}

async function completed(stack: TestStack, workflowId: string): Promise<History> {
  const handle = stack.temporal.workflow.getHandle(workflowId);
  await eventually(async () => (await handle.describe()).status.name === 'COMPLETED', {
    what: `${workflowId} completed`,
    timeoutMs: 60_000,
  });
  return handle.fetchHistory();
}

export const storageScenarios: ReplayScenario[] = [
  {
    name: 'bucket-provision',
    record: () =>
      withStorageStack(async (stack, ws, auth) => {
        const b = await stack.http
          .post('/api/v1/buckets')
          .set(auth)
          .send({ label: 'replayed', resource_id: ws.resourceUuid });
        return completed(stack, `bucket-provision/${b.body.uuid}`);
      }),
  },
  {
    name: 'storage-cleanup',
    record: () =>
      withStorageStack(async (stack, ws, auth) => {
        const b = await stack.http
          .post('/api/v1/buckets')
          .set(auth)
          .send({ label: 'to delete', resource_id: ws.resourceUuid });
        await completed(stack, `bucket-provision/${b.body.uuid}`);
        await stack.http.delete(`/api/v1/buckets/${b.body.uuid}`).set(auth).expect(204);
        return completed(stack, `bucket-delete/${b.body.uuid}`);
      }),
  },
  {
    name: 'static-site-provision',
    record: () =>
      withStorageStack(async (stack, _ws, auth) => {
        const repo = localRepo({ 'public/index.html': '<h1>replayed</h1>' });
        try {
          const s = await stack.http
            .post('/api/v1/static_sites')
            .set(auth)
            .send({
              name: `replay-${Date.now().toString(36)}`,
              deployment_config: { repository: repo.url, publish_directory: 'public' },
            });
          return await completed(stack, `static-site-provision/${s.body.uuid}`);
        } finally {
          repo.dispose();
        }
      }),
  },
  {
    name: 'static-site-deploy',
    record: () =>
      withStorageStack(async (stack, _ws, auth) => {
        const repo = localRepo({ 'index.html': '<h1>v1</h1>' });
        try {
          const s = await stack.http
            .post('/api/v1/static_sites')
            .set(auth)
            .send({ name: `replay-deploy-${Date.now().toString(36)}` });
          await completed(stack, `static-site-provision/${s.body.uuid}`);
          await stack.http
            .put(`/api/v1/static_sites/${s.body.uuid}/deployment`)
            .set(auth)
            .send({ repository: repo.url })
            .expect(202);
          const [d] = await stack.ds.query(`SELECT uuid FROM static_site_deployments WHERE site_uuid = $1`, [
            s.body.uuid,
          ]);
          return await completed(stack, `static-site-deploy/${s.body.uuid}/${d.uuid}`);
        } finally {
          repo.dispose();
        }
      }),
  },
  {
    name: 'stack-analyze',
    record: () =>
      withStorageStack(async (stack, ws, auth) => {
        const repo = localRepo({ 'compose.yaml': fixture('web-postgres-cache.yaml') });
        try {
          await stack.http
            .post('/api/v1/stacks/analyze')
            .set(auth)
            .send({ repository_url: repo.url, branch: 'main' })
            .expect(200);
          const id = await eventually(
            async () => {
              for await (const w of stack.temporal.workflow.list({
                query: `BerthWorkspace = '${ws.uuid}' AND BerthOperation = 'stack-analyze'`,
              }))
                return w.workflowId;
              return undefined;
            },
            { what: 'analysis in visibility' },
          );
          return await completed(stack, id);
        } finally {
          repo.dispose();
        }
      }),
  },
  {
    name: 'stack-deploy',
    record: () =>
      withStorageStack(async (stack, ws, auth) => {
        const repo = localRepo({ 'compose.yaml': fixture('web-postgres-cache.yaml') });
        try {
          const s = await stack.http
            .post('/api/v1/stacks')
            .set(auth)
            .send({
              name: 'replayed',
              resource_id: ws.resourceUuid,
              repository_url: repo.url,
              branch: 'main',
              variables: { DB_PASSWORD: 'replay-password', SECRET_KEY_BASE: 'replay-key' },
            });
          return await completed(stack, `stack-deploy/${s.body.uuid}/${s.body.latest_deployment.uuid}`);
        } finally {
          repo.dispose();
        }
      }),
  },
  {
    name: 'stack-cleanup',
    record: () =>
      withStorageStack(async (stack, ws, auth) => {
        const repo = localRepo({ 'compose.yaml': fixture('warnings.yaml') });
        try {
          const s = await stack.http
            .post('/api/v1/stacks')
            .set(auth)
            .send({ name: 'removed', resource_id: ws.resourceUuid, repository_url: repo.url, branch: 'main' });
          await completed(stack, `stack-deploy/${s.body.uuid}/${s.body.latest_deployment.uuid}`);
          await stack.http.delete(`/api/v1/stacks/${s.body.uuid}`).set(auth).expect(204);
          return await completed(stack, `stack-delete/${s.body.uuid}`);
        } finally {
          repo.dispose();
        }
      }),
  },
];
