import { runBundle } from './bundle';
import { runDev } from './dev';
import { runResource, UsageError } from './resource';
import { runApi, runMigrate, runWorkerProcess } from './serve';
import { resolveTemporal } from './temporal-cli';
import { runToken } from './token';
import { loadConfig } from '../platform/config';

const USAGE = `usage: berth <command>

  dev                     the whole stack on this machine (npm start)
  api                     the API server (production: DATABASE_URL and TEMPORAL_ADDRESS set)
  worker                  a worker (scale out by running more)
  bundle <file>           write the workflow bundle, for BERTH_WORKFLOW_BUNDLE (workers then start without bundling)
  migrate                 apply database migrations and seed the default workspace (prints its owner token once)
  setup                   locate or install the Temporal CLI and test server (what npm start and npm test use)
  token create --workspace <uuid|name> (--role <name> [--email <e>] | --permissions a,b) [--name <n>] [--expires-in-days <n>]
  token revoke <token-uuid>
  token list --workspace <uuid|name>
  resource create --name <n> --region <code> --plan free|standard [--cpu <cores>] [--ram <GiB>] [--disk <GiB>] [--workspace <uuid|name>]
                          a compute resource (prints its uuid)
  resource list [--workspace <uuid|name>]
`;

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  const config = loadConfig();
  switch (command) {
    case 'dev':
      return runDev(config);
    case 'api':
      return runApi(config);
    case 'worker':
      return runWorkerProcess(config);
    case 'migrate':
      return runMigrate(config);
    case 'bundle':
      return runBundle(rest[0]);
    case 'setup': {
      for (const kind of ['cli', 'test-server'] as const) {
        const found = resolveTemporal(kind, {
          dataDir: config.dataDir,
          log: (m) => process.stderr.write(`berth: ${m}\n`),
        });
        process.stdout.write(`${kind}: ${found.type === 'existing-path' ? found.path : 'SDK download at first use'}\n`);
      }
      return;
    }
    case 'token':
      return runToken(config, rest);
    case 'resource':
      return runResource(config, rest);
    default:
      process.stderr.write(USAGE);
      process.exitCode = command && command !== 'help' && command !== '--help' ? 2 : 0;
  }
}

main(process.argv.slice(2)).catch((err) => {
  process.stderr.write(`berth: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(err instanceof UsageError ? 2 : 1);
});
