import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { COMPOSE_CPU_SHARES } from '../../chaos/background-cpu';
import { IMAGE } from '../../chaos/worker-process';
import { SEARCH_ATTRIBUTES } from '../../domain/search-attributes';
import { ROOT } from '../support/env';

const file = path.join(ROOT, 'docker-compose.yml');
const compose = parse(readFileSync(file, 'utf8'), { merge: true });

describe('docker-compose.yml (the production shape)', () => {
  it('runs postgres, Temporal on that postgres, the UI, migrations, the API and workers', () => {
    expect(Object.keys(compose.services).sort()).toEqual([
      'api',
      'migrate',
      'postgres',
      'temporal',
      'temporal-setup',
      'temporal-ui',
      'worker',
    ]);
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
    // The node flags the benches measured the worker with (chaos/worker-process.ts IMAGE).
    expect(worker.command).toEqual(['node', ...IMAGE.workerNodeArgs, 'dist/bin/berth.js', 'worker']);
  });

  it('weighs the background services on the cores as the benches ran them, the API at Docker default', () => {
    const shares = Object.fromEntries(
      Object.entries<any>(compose.services)
        .filter(([, service]) => service.cpu_shares !== undefined)
        .map(([name, service]) => [name, service.cpu_shares]),
    );
    expect(shares).toEqual(COMPOSE_CPU_SHARES);
    expect(compose.services.api.cpu_shares).toBeUndefined();
  });

  it('registers every search attribute Berth sets on its workflows', () => {
    const script = JSON.stringify(compose.services['temporal-setup'].command);
    for (const key of SEARCH_ATTRIBUTES) expect(script).toContain(key.name);
  });

  it('holds together: every service it depends on exists, every image is pinned, every berth service runs a berth command', () => {
    // No compose client is installed on the machines this runs on (no Docker engine either),
    // so the file's own consistency is checked here instead of `docker compose config`.
    const names = new Set(Object.keys(compose.services));
    for (const [name, service] of Object.entries<any>(compose.services)) {
      const deps = Array.isArray(service.depends_on) ? service.depends_on : Object.keys(service.depends_on ?? {});
      for (const dep of deps)
        expect({ service: name, dependsOn: dep, exists: names.has(dep) }).toMatchObject({ exists: true });
      if (service.image)
        expect({ service: name, image: service.image }).toMatchObject({ image: expect.stringMatching(/:[\w.-]+$/) });
      if (service.build) expect(['api', 'worker', 'migrate']).toContain(name);
    }
    const commands = ['api', 'worker', 'migrate'].map((n) => compose.services[n].command);
    expect(commands).toEqual([
      ['node', 'dist/bin/berth.js', 'api'],
      ['node', ...IMAGE.workerNodeArgs, 'dist/bin/berth.js', 'worker'],
      ['node', 'dist/bin/berth.js', 'migrate'],
    ]);
    // the local driver runs apps on one machine: the scaled-out shape says which driver it runs
    expect(compose.services.worker.environment.BERTH_PROVIDER).toMatch(/simulated/);
  });
});
