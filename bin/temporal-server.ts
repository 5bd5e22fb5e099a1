import { TestWorkflowEnvironment } from '@temporalio/testing';
import { SEARCH_ATTRIBUTES } from '../domain/search-attributes';
import type { Executable } from './temporal-cli';

export interface TemporalDevServer {
  address: string;
  uiUrl: string | null;
  stop(): Promise<void>;
}

/**
 * The Temporal CLI dev server with Berth's search attributes registered. With
 * `dbFilename` its state survives restarts; without, it lives in memory (tests).
 */
export async function startTemporalDevServer(options: {
  executable: Executable;
  port?: number;
  uiPort?: number;
  dbFilename?: string;
  namespace?: string;
}): Promise<TemporalDevServer> {
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: options.executable,
      ip: '127.0.0.1',
      port: options.port,
      ...(options.uiPort ? { ui: true, uiPort: options.uiPort } : { ui: false }),
      dbFilename: options.dbFilename,
      namespace: options.namespace ?? 'default',
      searchAttributes: SEARCH_ATTRIBUTES,
      log: { format: 'pretty', level: 'error' },
    },
  });
  return {
    address: env.address,
    uiUrl: options.uiPort ? `http://127.0.0.1:${options.uiPort}` : null,
    stop: () => env.teardown(),
  };
}
