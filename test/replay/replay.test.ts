import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { testEnv } from '../support/env';
import { scenarios } from './scenarios';

const DIR = path.join(__dirname, 'histories');

function load() {
  return readdirSync(DIR)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => {
      const json = JSON.parse(readFileSync(path.join(DIR, file), 'utf8'));
      return { file, json, history: historyFromJSON(json) };
    });
}

function workflowTypeOf(json: any): string {
  return json.events[0].workflowExecutionStartedEventAttributes.workflowType.name;
}

async function replay(items: Array<{ workflowId: string; history: ReturnType<typeof historyFromJSON> }>) {
  const results = [];
  for await (const result of Worker.runReplayHistories(
    { workflowBundle: { codePath: testEnv('workflowBundle') } },
    items,
  ))
    results.push(result);
  return results;
}

describe('replay of recorded histories', () => {
  const histories = load();

  it('every recorded history replays against the current workflow code without nondeterminism', async () => {
    expect(histories.length).toBeGreaterThan(0);
    const results = await replay(histories.map((h) => ({ workflowId: h.file, history: h.history })));
    const failures = results.filter((r) => r.error).map((r) => `${r.workflowId}: ${r.error!.message}`);
    expect(failures).toEqual([]);
    expect(results).toHaveLength(histories.length);
  });

  it('negative control: a history whose commands were tampered with fails to replay', async () => {
    const tampered = histories.flatMap(({ file, json }) => {
      const copy = structuredClone(json);
      const scheduled = copy.events.find((e: any) => e.activityTaskScheduledEventAttributes);
      if (!scheduled) return [];
      scheduled.activityTaskScheduledEventAttributes.activityType.name += 'Tampered';
      return [{ workflowId: `${file} (tampered)`, history: historyFromJSON(copy) }];
    });
    expect(tampered.length).toBeGreaterThan(0);
    const results = await replay(tampered);
    for (const r of results) {
      expect(r.error).toBeDefined();
      expect(r.error).toBeInstanceOf(DeterminismViolationError);
    }
  });

  it('every workflow type exported from workflows/ has at least one history, and every scenario its file', () => {
    const exported = readFileSync(path.join(__dirname, '..', '..', 'workflows', 'index.ts'), 'utf8');
    const types = [...exported.matchAll(/export\s*\{([^}]*)\}/g)]
      .flatMap((m) => m[1]!.split(','))
      .map((s) =>
        s
          .trim()
          .split(/\s+as\s+/)
          .pop()!,
      )
      .filter(Boolean);
    expect(types.length).toBeGreaterThan(0);
    const recorded = new Set(histories.map((h) => workflowTypeOf(h.json)));
    expect(types.filter((t) => !recorded.has(t))).toEqual([]);
    const files = new Set(histories.map((h) => h.file.replace(/\.json$/, '')));
    expect(scenarios.map((s) => s.name).filter((n) => !files.has(n))).toEqual([]);
  });
});
