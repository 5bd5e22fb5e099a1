import { readFileSync } from 'node:fs';
import { DEV_SERVER_DYNAMIC_CONFIG, DEV_SERVER_GO_ENV } from '../../bin/temporal-server';
import { devServerProcess } from '../../chaos/processes';
import { TEST_ENV } from '../support/env';

/** The command line and environment of the dev server listening at `port` (started by the suite's setup). */
function devServer(port: string): { args: string[]; env: string[] } {
  const { pid, args } = devServerProcess(port);
  return { args, env: readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0') };
}

describe('the Temporal dev server Berth starts (npm start, the chaos runs, this suite)', () => {
  const port = process.env[TEST_ENV.temporalAddress]!.split(':').pop()!;

  it("runs with Go's heap goal and soft limit, which Berth's own environment does not keep", () => {
    const { env } = devServer(port);
    expect(env).toEqual(expect.arrayContaining(['GOGC=50', 'GOMEMLIMIT=192MiB']));
    expect(DEV_SERVER_GO_ENV).toEqual({ GOGC: '50', GOMEMLIMIT: '192MiB' });
    // set around the start only: Berth's processes and what they start otherwise never see them
    expect(process.env.GOGC).toBeUndefined();
    expect(process.env.GOMEMLIMIT).toBeUndefined();
  });

  it('gets the bounded caches as dynamic config', () => {
    const { args } = devServer(port);
    for (const [key, value] of Object.entries(DEV_SERVER_DYNAMIC_CONFIG))
      expect(args).toContain(`${key}=${JSON.stringify(value)}`);
  });
});
