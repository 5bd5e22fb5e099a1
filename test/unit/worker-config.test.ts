import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { workflowBundle } from '../../bin/bundle';
import { DEFAULT_WORKER_CACHED_WORKFLOWS, loadConfig } from '../../platform/config';

describe('BERTH_WORKER_CACHED_WORKFLOWS', () => {
  it('defaults to a fixed size, not the SDK default that grows with the heap; 0 turns the cache off', () => {
    expect(loadConfig({}).workerCachedWorkflows).toBe(DEFAULT_WORKER_CACHED_WORKFLOWS);
    expect(DEFAULT_WORKER_CACHED_WORKFLOWS).toBe(100);
    expect(loadConfig({ BERTH_WORKER_CACHED_WORKFLOWS: '0' }).workerCachedWorkflows).toBe(0);
    expect(loadConfig({ BERTH_WORKER_CACHED_WORKFLOWS: '2' }).workerCachedWorkflows).toBe(2);
    expect(loadConfig({ BERTH_WORKER_CACHED_WORKFLOWS: '2500' }).workerCachedWorkflows).toBe(2500);
  });

  it('stops the start with a clear message for a size the SDK would not take', () => {
    for (const bad of ['1', '-5', '2.5', 'many']) {
      expect(() => loadConfig({ BERTH_WORKER_CACHED_WORKFLOWS: bad })).toThrow(/BERTH_WORKER_CACHED_WORKFLOWS must/);
    }
  });
});

describe('BERTH_WORKFLOW_BUNDLE', () => {
  it('is a path resolved against the working directory; unset by default', () => {
    expect(loadConfig({}).workflowBundle).toBeUndefined();
    expect(loadConfig({ BERTH_WORKFLOW_BUNDLE: 'dist/wf.js' }, '/srv/berth').workflowBundle).toBe(
      '/srv/berth/dist/wf.js',
    );
  });

  it('a given bundle is used as it is', async () => {
    const bundle = await workflowBundle(loadConfig({ BERTH_WORKFLOW_BUNDLE: '/srv/wf.js' }));
    expect(bundle.codePath).toBe('/srv/wf.js');
  });

  it('without one, `berth bundle` builds the workflows in a child process; discard removes the file', async () => {
    const bundle = await workflowBundle(loadConfig({}));
    expect(path.basename(bundle.codePath)).toBe('workflow-bundle.js');
    expect(readFileSync(bundle.codePath, 'utf8')).toContain('webhookDelivery');
    bundle.discard();
    expect(existsSync(bundle.codePath)).toBe(false);
  });
});
