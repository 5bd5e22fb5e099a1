import { validate } from '@readme/openapi-parser';
import { routeDispatch } from '../../api/route-dispatch';
import { routes } from '../../api/routes';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { pathFor } from '../support/routes';
import { startStack, type TestStack } from '../support/stack';

let stack: TestStack;
let ws: Workspace;

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds);
});
afterAll(() => stack.close());

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

async function document(): Promise<any> {
  const res = await stack.http.get('/api/v1/openapi.json');
  expect(res.status).toBe(200);
  return res.body;
}

describe('OpenAPI document', () => {
  it('validates as OpenAPI 3.1', async () => {
    const doc = await document();
    expect(doc.openapi).toBe('3.1.0');
    const result = await validate(structuredClone(doc));
    expect(result.valid ? [] : result.errors).toEqual([]);
  });

  it('GEN-01 lists exactly the routes the router serves, every path under /api/v1', async () => {
    const doc = await document();
    const documented = new Set<string>();
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      expect(path.startsWith('/api/v1/')).toBe(true);
      for (const m of METHODS) if (item[m]) documented.add(`${m.toUpperCase()} ${path}`);
    }
    const served = new Set<string>();
    for (const router of routeDispatch(routes, stack.apiDeps).routers)
      for (const layer of router.stack) {
        const path = String(layer.path).replace(/:([A-Za-z_]+)/g, '{$1}');
        for (const m of layer.methods) if (m !== 'HEAD') served.add(`${m} ${path}`);
      }
    expect([...served].sort()).toEqual([...documented].sort());
  });

  it('every documented operation is answered by a route (never "no route")', async () => {
    const doc = await document();
    for (const route of routes) {
      expect(doc.paths[`/api/v1${route.path}`][route.method]).toBeDefined();
      const req = stack.http[route.method](pathFor(route)).set('Authorization', `Bearer ${ws.ownerToken}`);
      const res = route.body ? await req.send({}) : await req;
      expect(`${route.method} ${route.path}: ${res.body?.detail ?? ''}`).not.toMatch(/no route for/);
    }
  });

  it('serves a human-readable reference page at /docs', async () => {
    const res = await stack.http.get('/docs');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/html/);
    for (const route of routes) expect(res.text).toContain(`/api/v1${route.path}`);
  });
});
