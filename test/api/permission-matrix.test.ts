import { PERMISSIONS, REQUIREMENTS, allows, type Permission } from '../../domain/permissions';
import { routes } from '../../api/routes';
import type { RouteDef } from '../../api/route';
import { pathFor } from '../support/routes';
import { seedWorkspace, tokenWith, type Workspace } from '../support/fixtures';
import { startStack, type TestStack } from '../support/stack';

/**
 * The permission matrix: every declared route, called with a workspace token holding
 * each single permission, answers 403 exactly where the permission table says, and never
 * 403 where it allows. Permission is checked before anything else, so any path ids and
 * an empty body suffice.
 */
let stack: TestStack;
let ws: Workspace;
const tokens = new Map<Permission | 'none', string>();

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds);
  for (const p of PERMISSIONS) tokens.set(p, await tokenWith(stack.ds, ws.uuid, [p]));
  tokens.set('none', await tokenWith(stack.ds, ws.uuid, []));
});
afterAll(() => stack.close());

function call(route: RouteDef, token: string) {
  const req = stack.http[route.method](pathFor(route)).set('Authorization', `Bearer ${token}`);
  return route.body ? req.send({}) : req;
}

describe('permission matrix over every declared route', () => {
  it("AUTH-16 every permission is <area>:<level> with the contract's areas and levels", () => {
    for (const p of PERMISSIONS) {
      expect(p).toMatch(/^(apps|services|buckets|projects|network|workspace):(view|operate|manage|deploy|general)$/);
      if (p.endsWith(':deploy')) expect(p).toBe('apps:deploy');
    }
  });

  for (const route of routes) {
    const requirement = REQUIREMENTS[route.requires];
    it(`AUTH-02 ${route.method.toUpperCase()} ${route.path} (${route.requires})`, async () => {
      const failures: string[] = [];
      for (const p of [...PERMISSIONS, 'none'] as const) {
        const expected403 = !allows({ builtinRole: null, permissions: new Set(p === 'none' ? [] : [p]) }, requirement);
        const res = await call(route, tokens.get(p)!);
        if (res.status >= 500) failures.push(`${p}: ${res.status} ${res.text}`);
        else if (expected403 && res.status !== 403) failures.push(`${p}: expected 403, got ${res.status}`);
        else if (!expected403 && (res.status === 403 || res.status === 401))
          failures.push(`${p}: expected access, got ${res.status} ${res.body?.detail}`);
        if (res.status === 403) expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      }
      expect(failures).toEqual([]);
    });
  }

  it('AUTH-03 a token limited to view permissions cannot change anything', async () => {
    const viewer = await tokenWith(
      stack.ds,
      ws.uuid,
      PERMISSIONS.filter((p) => p.endsWith(':view')),
    );
    for (const route of routes.filter((r) => r.method !== 'get')) {
      const requirement = REQUIREMENTS[route.requires];
      if ('authenticated' in requirement) continue;
      // A POST the contract grants to a view permission reads (buckets:view makes a download link, AUTH-11).
      if ('anyOf' in requirement && requirement.anyOf.some((p) => p.endsWith(':view'))) continue;
      const res = await call(route, viewer);
      expect(`${route.method} ${route.path} ${res.status}`).toBe(`${route.method} ${route.path} 403`);
    }
  });

  it('AUTH-01 every declared route answers 401 without a bearer token, and with a bad or revoked one', async () => {
    await stack.ds.query(
      `UPDATE api_tokens SET revoked_at = now() WHERE token_hash = encode(sha256(convert_to($1, 'UTF8')), 'hex')`,
      [tokens.get('none')],
    );
    for (const route of routes) {
      const bare = await stack.http[route.method](pathFor(route));
      expect(`${route.path} ${bare.status}`).toBe(`${route.path} 401`);
      expect(bare.headers['content-type']).toMatch(/application\/problem\+json/);
      const wrong = await stack.http[route.method](pathFor(route)).set('Authorization', 'Bearer brt_not-a-real-token');
      expect(wrong.status).toBe(401);
      const revoked = await stack.http[route.method](pathFor(route)).set(
        'Authorization',
        `Bearer ${tokens.get('none')}`,
      );
      expect(revoked.status).toBe(401);
    }
  });
});
