import { sameEventConcurrently, sameIdempotencyKeyConcurrently } from '../../chaos/scenarios/races';
import { startStack, type TestStack } from '../support/stack';
import { RECEIVER_ALLOW, startReceiver, type Receiver } from '../support/webhooks';

/** Races on the real stack (the chaos suite's race scenarios, also run by `npm run chaos`). */
let stack: TestStack;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
  stack = await startStack({ env: { BERTH_WEBHOOK_ALLOW_CIDRS: RECEIVER_ALLOW } });
  await stack.startWorker();
});
afterAll(async () => {
  await stack?.close();
  await receiver?.close();
});

describe('races', () => {
  it('WH-29 one event emitted 50 times concurrently makes one workflow and one delivery', async () => {
    await sameEventConcurrently(stack, receiver);
  });

  it('50 concurrent POSTs with one Idempotency-Key create one resource and all answer the same', async () => {
    await sameIdempotencyKeyConcurrently(stack, receiver);
  });
});
