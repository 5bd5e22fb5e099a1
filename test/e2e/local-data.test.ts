import { connect } from 'node:net';
import { Client } from 'pg';
import request from 'supertest';
import { appFixture, localRepo, stackFixture, type LocalRepo } from '../support/git';
import { eventually } from '../support/stack';
import { healthyAddon } from './support/addons';
import { deployStack } from './support/stacks';
import { startBerthDev, type BerthDev } from './support/berth-dev';

/**
 * Databases and stacks for real on the local driver (issue 14): `berth dev` with the local
 * driver, a real PostgreSQL server per add-on, apps and stack services built from their
 * commit and reached through the real ingress.
 */
jest.setTimeout(480_000);

let berth: BerthDev;
let api: ReturnType<typeof request>;
let auth: Record<string, string>;
let resource: string;
const repos: LocalRepo[] = [];

function repo(files: Record<string, string>): LocalRepo {
  const r = localRepo(files);
  repos.push(r);
  return r;
}

/** A request to the app's public URL (HTTPS through the ingress). */
function viaIngress(app: { public_url: string }) {
  return berth.viaPublicUrl(app.public_url);
}

/** Whether something accepts TCP connections on the loopback port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

async function deploymentsDone(appUuid: string, count: number): Promise<any[]> {
  return eventually(
    async () => {
      const list = (await api.get(`/api/v1/apps/${appUuid}/deployments`).set(auth).expect(200)).body as any[];
      return list.length >= count && list.every((d) => ['completed', 'failed', 'cancelled'].includes(d.state))
        ? list
        : undefined;
    },
    { what: `${count} deployment(s) ended`, timeoutMs: 240_000 },
  );
}

beforeAll(async () => {
  berth = await startBerthDev({ BERTH_GIT_ALLOW_FILE_URLS: '1' });
  api = request(berth.apiUrl);
  auth = { Authorization: `Bearer ${berth.token}` };
  resource = (await api.get('/api/v1/resources').set(auth).expect(200)).body[0].uuid;
});

afterAll(async () => {
  await berth?.stop();
  for (const r of repos) r.dispose();
});

describe('issue 14 on the local driver', () => {
  it('a postgres add-on becomes healthy; a pg client writes with its connection_url; the deployed app reads the same table through its environment and answers through the ingress', async () => {
    const source = repo(appFixture('pg-reader'));
    const app = (
      await api
        .post('/api/v1/apps')
        .set(auth)
        .send({
          name: 'reader',
          resource_id: resource,
          deployment_method: 'public_git',
          deployment_config: { repository: source.url, branch: 'main' },
        })
        .expect(201)
    ).body;
    await deploymentsDone(app.uuid, 1);
    const addon = await healthyAddon(api, auth, app.uuid, { type: 'postgres', label: 'notes' });

    const client = new Client({ connectionString: addon.connection_details.internal.connection_url });
    await client.connect();
    try {
      await client.query('CREATE TABLE notes (id serial PRIMARY KEY, body text NOT NULL)');
      await client.query(`INSERT INTO notes (body) VALUES ('hello'), ('world')`);
    } finally {
      await client.end();
    }

    // the add-on changed the app's environment: a new deployment carries DATABASE_URL
    await api.post(`/api/v1/apps/${app.uuid}/deployments`).set(auth).send({}).expect(202);
    const [latest] = await deploymentsDone(app.uuid, 2);
    expect(latest.state).toBe('completed');
    const shown = (await api.get(`/api/v1/apps/${app.uuid}`).set(auth).expect(200)).body;
    const res = await eventually(
      async () => {
        const r = await viaIngress(shown);
        return r.status === 200 ? r : undefined;
      },
      { what: 'the app answering from its database', timeoutMs: 60_000 },
    );
    expect(res.text).toBe('hello,world\n');
  });

  it('a stack from a compose file (a build: web service and a postgres image) serves through the ingress and reaches its database', async () => {
    const source = repo(stackFixture('web-db'));
    const stack = await deployStack(
      api,
      auth,
      { name: 'shop', resource_id: resource, repository_url: source.url },
      300_000,
    );
    expect(stack.latest_deployment).toMatchObject({ state: 'completed', validation_errors: {} });
    expect(stack.state).toBe('running');
    const web = stack.services.find((s: any) => s.compose_service_name === 'web');
    expect(stack.services.find((s: any) => s.compose_service_name === 'db')).toMatchObject({
      item_type: 'addon',
      compose_service_type: 'postgres',
      status: 'running',
    });
    const app = (await api.get(`/api/v1/apps/${web.item_uuid}`).set(auth).expect(200)).body;
    expect(new URL(app.public_url).host.startsWith(`${web.item_name}.`)).toBe(true);
    const res = await eventually(
      async () => {
        const r = await viaIngress(app);
        return r.status === 200 ? r : undefined;
      },
      { what: 'the stack web service answering', timeoutMs: 60_000 },
    );
    // the server's address: the workload network's gateway, or loopback where the machine has none
    expect(res.text).toMatch(/^postgresql:\/\/\d+\.\d+\.\d+\.\d+:\d+\/app: postgres answers\n$/);

    // deleting the stack removes its services from the machine: no route, no database server
    const dbPort = Number(/:(\d+)\/app:/.exec(res.text)![1]);
    await api.delete(`/api/v1/stacks/${stack.uuid}`).set(auth).expect(204);
    await eventually(async () => (await viaIngress(app)).status === 404 && !(await accepts(dbPort)), {
      what: "the stack's services gone",
      timeoutMs: 60_000,
    });
  });

  it('a stack service the local driver cannot run is a validation error that names it', async () => {
    const source = repo({
      'compose.yaml': 'services:\n  files:\n    build: ../files\n  db:\n    image: postgres:16\n',
    });
    const stack = await deployStack(
      api,
      auth,
      { name: 'edge', resource_id: resource, repository_url: source.url },
      120_000,
    );
    expect(stack.latest_deployment.state).toBe('failed');
    expect(stack.latest_deployment.validation_errors).toEqual({
      services: ['files: the build context "../files" must not contain .. segments'],
    });
    expect(stack.services).toEqual([]);
  });
});
