import { startStack, type TestStack } from '../support/stack';

/**
 * Issue 29: the served OpenAPI document links every creating answer to the operations that take
 * the created identifier, so generated clients and stateful fuzzers can chain calls. (That the
 * document validates as OpenAPI 3.1, links included, is test/api/openapi.test.ts.)
 */

let stack: TestStack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack.close());

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/**
 * Operations taking an identifier that no API call creates, so no link can lead to them; keyed
 * by member path (the operations on it and under it).
 */
const UNLINKED: Record<string, string> = {
  '/api/v1/resources/{uuid}':
    'compute resources are provisioned by the operator (berth CLI), not through the API; GET /resources lists them',
  '/api/v1/apps/{uuid}/preview_environments/{id}':
    "a preview environment is opened by a pull-request event the code host delivers to the app's preview webhook (api/code-host.ts, outside the route table), not by an API call",
};

interface Operation {
  method: string;
  path: string;
  operationId: string;
  pathParams: string[];
  responses: Record<string, { content?: Record<string, { schema: any }>; links?: Record<string, Link> }>;
}
interface Link {
  operationId: string;
  parameters: Record<string, string>;
}

async function operations(): Promise<Operation[]> {
  const doc = (await stack.http.get('/api/v1/openapi.json').expect(200)).body;
  return Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((method) => ({
      method,
      path,
      operationId: item[method].operationId,
      pathParams: (item[method].parameters as { in?: string; name: string }[])
        .filter((p) => p.in === 'path')
        .map((p) => p.name),
      responses: item[method].responses,
    })),
  );
}

/** Every link of every success answer, with the operation whose answer carries it. */
function linksOf(ops: Operation[]): { source: Operation; status: string; name: string; link: Link }[] {
  return ops.flatMap((source) =>
    Object.entries(source.responses)
      .filter(([status]) => status.startsWith('2'))
      .flatMap(([status, response]) =>
        Object.entries(response.links ?? {}).map(([name, link]) => ({ source, status, name, link })),
      ),
  );
}

/** Whether a JSON pointer (`/0/key`) names a place the JSON schema declares. */
function pointerResolves(schema: any, pointer: string): boolean {
  let at = schema;
  for (const token of pointer.split('/').slice(1)) {
    if (/^\d+$/.test(token)) at = at?.type === 'array' ? at.items : undefined;
    else at = at?.properties?.[token];
    if (at === undefined) return false;
  }
  return true;
}

describe('OpenAPI links (issue 29)', () => {
  it('every operation has a unique, readable operationId (lower camel case, letters and digits)', async () => {
    const ops = await operations();
    const ids = ops.map((o) => o.operationId);
    expect(ids.filter((id) => !/^[a-z][A-Za-z0-9]*$/.test(id))).toEqual([]);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
    const byId = new Map(ops.map((o) => [o.operationId, `${o.method.toUpperCase()} ${o.path}`]));
    // The naming rule of docs/development.md, one example of each of its cases.
    expect({
      listProjects: byId.get('listProjects'),
      createProject: byId.get('createProject'),
      getProject: byId.get('getProject'),
      updateProject: byId.get('updateProject'),
      deleteProject: byId.get('deleteProject'),
      createAppDomain: byId.get('createAppDomain'),
      verifyAppDomain: byId.get('verifyAppDomain'),
      getAppScalingProfile: byId.get('getAppScalingProfile'),
      deleteBucketObject: byId.get('deleteBucketObject'),
      updateStaticSite: byId.get('updateStaticSite'),
      changeAppState: byId.get('changeAppState'),
    }).toEqual({
      listProjects: 'GET /api/v1/projects',
      createProject: 'POST /api/v1/projects',
      getProject: 'GET /api/v1/projects/{uuid}',
      updateProject: 'PUT /api/v1/projects/{uuid}',
      deleteProject: 'DELETE /api/v1/projects/{uuid}',
      createAppDomain: 'POST /api/v1/apps/{uuid}/domains',
      verifyAppDomain: 'POST /api/v1/apps/{uuid}/domains/{domain_uuid}/verify',
      getAppScalingProfile: 'GET /api/v1/apps/{uuid}/scaling_profile',
      deleteBucketObject: 'DELETE /api/v1/buckets/{uuid}/objects',
      updateStaticSite: 'PUT /api/v1/static/{uuid}',
      changeAppState: 'PATCH /api/v1/apps/{uuid}/state',
    });
  });

  it('every link names an existing operation and gives exactly its path parameters, from expressions that resolve', async () => {
    const ops = await operations();
    const byId = new Map(ops.map((o) => [o.operationId, o]));
    const links = linksOf(ops);
    expect(links.length).toBeGreaterThan(100);
    const problems: string[] = [];
    for (const { source, status, name, link } of links) {
      const where = `${source.operationId} ${status} -> ${name}`;
      const target = byId.get(link.operationId);
      if (!target) {
        problems.push(`${where}: no operation ${link.operationId}`);
        continue;
      }
      if (name !== link.operationId) problems.push(`${where}: named otherwise than its operation`);
      const given = Object.keys(link.parameters).sort();
      if (JSON.stringify(given) !== JSON.stringify([...target.pathParams].sort()))
        problems.push(`${where}: parameters ${given} but the operation takes ${target.pathParams}`);
      const answer = source.responses[status]?.content?.['application/json']?.schema;
      for (const [param, expression] of Object.entries(link.parameters)) {
        const body = /^\$response\.body#(\/.+)$/.exec(expression);
        const path = /^\$request\.path\.([A-Za-z_]+)$/.exec(expression);
        if (body) {
          if (!pointerResolves(answer, body[1]!))
            problems.push(`${where}: ${param} = ${expression} is not in the answer`);
        } else if (path) {
          if (!source.pathParams.includes(path[1]!))
            problems.push(`${where}: ${param} = ${expression}, no such parameter`);
        } else problems.push(`${where}: ${param} = ${expression} is not a runtime expression of this API`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('every operation taking an identifier is reached by a link from an operation that creates it, or the table says why not', async () => {
    const ops = await operations();
    const linked = new Map<string, Set<string>>();
    for (const { source, link } of linksOf(ops)) {
      if (source.method === 'get') continue; // a read creates nothing
      linked.set(link.operationId, (linked.get(link.operationId) ?? new Set()).add(source.operationId));
    }
    const exempt = (o: Operation) =>
      Object.keys(UNLINKED).find((member) => o.path === member || o.path.startsWith(`${member}/`));
    const unreached = ops
      .filter((o) => o.pathParams.length > 0 && !linked.has(o.operationId) && !exempt(o))
      .map((o) => `${o.method.toUpperCase()} ${o.path}`);
    expect(unreached).toEqual([]);
    // The table holds only what needs it: each entry names operations no link reaches.
    for (const member of Object.keys(UNLINKED)) {
      const under = ops.filter((o) => exempt(o) === member);
      expect(under.length).toBeGreaterThan(0);
      expect(under.filter((o) => linked.has(o.operationId)).map((o) => o.operationId)).toEqual([]);
    }
  });

  it('nested resources are linked with the parent passed through: an app domain, a copy of an app, a test delivery', async () => {
    const ops = await operations();
    const link = (from: string, to: string) =>
      linksOf(ops).find((l) => l.source.operationId === from && l.link.operationId === to)?.link.parameters;
    expect(link('createAppDomain', 'verifyAppDomain')).toEqual({
      uuid: '$request.path.uuid',
      domain_uuid: '$response.body#/uuid',
    });
    expect(link('createApp', 'createAppDomain')).toEqual({ uuid: '$response.body#/uuid' });
    expect(link('cloneApp', 'getApp')).toEqual({ uuid: '$response.body#/uuid' });
    expect(link('createAppAddonReplica', 'getAppAddon')).toEqual({
      uuid: '$request.path.uuid',
      id: '$response.body#/uuid',
    });
    expect(link('testWebhook', 'getWebhookDelivery')).toEqual({
      uuid: '$request.path.uuid',
      delivery_uuid: '$response.body#/uuid',
    });
    expect(link('updateAppVariables', 'deleteAppVariable')).toEqual({
      uuid: '$request.path.uuid',
      key: '$response.body#/0/key',
    });
    expect(link('createStaticSite', 'updateStaticSite')).toEqual({ uuid: '$response.body#/uuid' });
  });
});
