import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { SEARCH_ATTRIBUTES } from '../../domain/search-attributes';
import { ROOT } from '../support/env';

const file = path.join(ROOT, 'docker-compose.yml');
const compose = parse(readFileSync(file, 'utf8'), { merge: true });

function composeClient(): string[] | null {
  if (spawnSync('docker', ['compose', 'version'], { stdio: 'ignore' }).status === 0) return ['docker', 'compose'];
  if (spawnSync('docker-compose', ['version'], { stdio: 'ignore' }).status === 0) return ['docker-compose'];
  return null;
}

describe('docker-compose.yml (the production shape)', () => {
  it('runs postgres, Temporal on that postgres, the UI, migrations, the API and workers', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['api', 'migrate', 'postgres', 'temporal', 'temporal-setup', 'temporal-ui', 'worker']);
    const temporal = compose.services.temporal;
    expect(temporal.environment).toMatchObject({ DB: 'postgres12', POSTGRES_SEEDS: 'postgres' });
    expect(compose.services['temporal-ui'].ports).toContain('8233:8080');
    for (const name of ['api', 'worker', 'migrate']) {
      const env = compose.services[name].environment;
      expect(env.DATABASE_URL).toMatch(/@postgres:5432\//);
      expect(env.TEMPORAL_ADDRESS).toBe('temporal:7233');
      expect(env.BERTH_SECRET_KEY).toMatch(/BERTH_SECRET_KEY/);
    }
  });

  it('lets the worker scale: no fixed ports, container name or host volume', () => {
    const worker = compose.services.worker;
    expect(worker.ports).toBeUndefined();
    expect(worker.container_name).toBeUndefined();
    expect(worker.volumes).toBeUndefined();
    expect(worker.command).toEqual(['node', 'bin/berth.js', 'worker']);
  });

  it('registers every search attribute Berth sets on its workflows', () => {
    const script = JSON.stringify(compose.services['temporal-setup'].command);
    for (const key of SEARCH_ATTRIBUTES) expect(script).toContain(key.name);
  });

  it('is accepted by `docker compose config` when a compose client is installed', () => {
    const client = composeClient();
    if (!client) return;
    const out = execFileSync(client[0]!, [...client.slice(1), '-f', file, 'config', '--services'], { env: { ...process.env, BERTH_SECRET_KEY: 'x' }, encoding: 'utf8' });
    expect(out.trim().split('\n').sort()).toEqual(Object.keys(compose.services).sort());
  });
});
