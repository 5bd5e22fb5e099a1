import {
  addonServerKilled,
  appProcessKilled,
  startLocalPlane,
  type LocalPlane,
} from '../../chaos/scenarios/local-data-plane';

/**
 * The local data plane under faults (the chaos suite's local data plane scenario, also run
 * by `npm run chaos`): `berth dev` on the local driver, processes killed with SIGKILL.
 */
jest.setTimeout(240_000);

let plane: LocalPlane;

beforeAll(async () => {
  plane = await startLocalPlane();
});
afterAll(async () => {
  await plane?.close();
});

describe('local data plane faults', () => {
  it('an app process SIGKILLed is started again by its supervisor: the ingress answers 200 from a new pid, the app is running, the restart is in its log', async () => {
    expect(await appProcessKilled(plane)).toMatch(/ingress 200 again after/);
  });

  it('ADD-04 a postgres add-on whose server is SIGKILLed goes unhealthy on the health sweep, then healthy again with its data', async () => {
    expect(await addonServerKilled(plane)).toMatch(/SIGKILLed: failing after .* healthy after/);
  });
});
