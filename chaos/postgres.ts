import { rmSync } from 'node:fs';
import path from 'node:path';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../bin/embedded-postgres';
import { freePort } from '../test/support/ports';
import { ROOT } from '../test/support/env';

export interface ChaosPostgres {
  /** The admin URL (BERTH_TEST_DATABASE_URL for the suite's global setup). */
  url: string;
  stop(): Promise<void>;
  /** Starts it again on the same port with the same data. */
  start(): Promise<void>;
  /** Stops it and deletes its data. */
  destroy(): Promise<void>;
}

/** An embedded PostgreSQL the chaos run owns, so a scenario can stop and start it. */
export async function chaosPostgres(): Promise<ChaosPostgres> {
  const dir = path.join(ROOT, '.berth', `chaos-${process.pid}`);
  const options = { dir, port: await freePort(), database: 'berth_chaos' };
  let handle: EmbeddedPostgresHandle | null = await startEmbeddedPostgres(options);
  return {
    url: handle.url,
    async stop() {
      await handle?.stop();
      handle = null;
    },
    async start() {
      handle ??= await startEmbeddedPostgres(options);
    },
    async destroy() {
      await handle?.stop();
      handle = null;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
