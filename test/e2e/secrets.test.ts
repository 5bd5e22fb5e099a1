import { secretsNeverLeave, SECRETS_ENV, startSecretsAcme, type SecretsAcme } from '../../chaos/scenarios/secrets';
import { startStack, type TestStack } from '../support/stack';
import { RECEIVER_ALLOW, startReceiver, type Receiver } from '../support/webhooks';

/** The chaos suite's secrets scenario (also run by `npm run chaos`). */
let stack: TestStack;
let receiver: Receiver;
let acme: SecretsAcme | null;

beforeAll(async () => {
  receiver = await startReceiver();
  acme = await startSecretsAcme();
  stack = await startStack({ env: { BERTH_WEBHOOK_ALLOW_CIDRS: RECEIVER_ALLOW, ...SECRETS_ENV, ...acme?.env } });
  await stack.startWorker();
});
afterAll(async () => {
  await stack?.close();
  await receiver?.close();
  await acme?.close();
});

describe('secrets after a full run', () => {
  it('WH-10 no secret (certificate and ACME account keys included) in any API response, log line or workflow history, and only ciphertext in the database', async () => {
    await secretsNeverLeave(stack, receiver, acme);
  }, 120_000);
});
