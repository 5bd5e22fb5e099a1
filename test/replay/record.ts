import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import type { temporal } from '@temporalio/proto';
import { startStack, type TestStack } from '../support/stack';
import { scenarios } from './scenarios';

/**
 * `npm run histories:record`: runs every replay scenario on a real Temporal server and
 * writes its history to test/replay/histories/<name>.json. Re-record after changing a
 * workflow (`npm run histories:record -- -t <name>` for one).
 */
let stack: TestStack;

beforeAll(async () => {
  stack = await startStack();
  await stack.startWorker();
});
afterAll(() => stack.close());

describe('record replay histories', () => {
  for (const scenario of scenarios) {
    it(scenario.name, async () => {
      const history = await scenario.record(stack);
      const json = historyToJSON(history as temporal.api.history.v1.History);
      writeFileSync(
        path.join(__dirname, 'histories', `${scenario.name}.json`),
        `${JSON.stringify(JSON.parse(json), null, 2)}\n`,
      );
    });
  }
});
