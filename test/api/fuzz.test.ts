import { convertSchema } from '@sodaru/yup-to-json-schema';
import fc from 'fast-check';
import { querySchemaOf } from '../../api/router';
import { routes } from '../../api/routes';
import { pathParams } from '../../api/route';
import { pathFor } from '../support/routes';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { tableCounts } from '../support/db';
import { startStack, type TestStack } from '../support/stack';

/**
 * Fuzz over every declared route (owner token, so permission never stops a request):
 * malformed bodies, wrongly typed fields, unknown fields and query parameters, and junk
 * path ids always get a 4xx problem body, never a 5xx, and no row is written.
 */
let stack: TestStack;
let ws: Workspace;
const RUNS = Number(process.env.BERTH_FUZZ_RUNS ?? 12);

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds);
});
afterAll(() => stack.close());

type Json = Record<string, any>;

function types(schema: Json): string[] {
  if (Array.isArray(schema.type)) return schema.type;
  if (typeof schema.type === 'string') return [schema.type];
  return [];
}

/** A value whose JSON type the field's schema does not allow. */
function wrongTypeArb(schema: Json): fc.Arbitrary<unknown> | null {
  const t = types(schema);
  const options: fc.Arbitrary<unknown>[] = [];
  if (!t.includes('string')) options.push(fc.string({ maxLength: 20 }));
  if (!t.includes('number') && !t.includes('integer'))
    options.push(fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true })));
  if (!t.includes('boolean')) options.push(fc.boolean());
  if (!t.includes('array')) options.push(fc.array(fc.integer(), { maxLength: 3 }));
  if (!t.includes('object'))
    options.push(fc.dictionary(fc.string({ minLength: 1, maxLength: 5 }), fc.integer(), { maxKeys: 2 }));
  if (t.length === 0) return null;
  return options.length ? fc.oneof(...options) : null;
}

const junkId = fc.oneof(
  fc.string({ minLength: 1, maxLength: 40 }).filter((s) => s.trim() !== '' && !s.includes('/')),
  fc.integer().map(String),
  fc.constant('..'),
  fc.constant('%00'),
  fc.constant("1' OR '1'='1"),
);

function expectProblem(
  res: { status: number; headers: Record<string, string>; body: any; text: string },
  label: string,
  statuses?: number[],
): void {
  if (res.status >= 500 || res.status < 400 || (statuses && !statuses.includes(res.status))) {
    throw new Error(`${label}: got ${res.status} ${res.text.slice(0, 300)}`);
  }
  expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
  expect(res.body).toMatchObject({
    status: res.status,
    title: expect.any(String),
    detail: expect.any(String),
    instance: expect.any(String),
  });
}

describe('fuzz over every declared route', () => {
  for (const route of routes) {
    const label = `${route.method.toUpperCase()} ${route.path}`;
    it(`ERR-01 ${label}: malformed input gets a 4xx problem, never 5xx, and writes nothing`, async () => {
      const before = await tableCounts(stack.ds);
      const send = (path: string, body?: unknown, raw?: string) => {
        const req = stack.http[route.method](path).set('Authorization', `Bearer ${ws.ownerToken}`);
        if (raw !== undefined) return req.set('Content-Type', 'application/json').send(raw);
        return body === undefined ? req : req.send(body as object);
      };

      // Junk path ids.
      if (pathParams(route.path).length > 0) {
        await fc.assert(
          fc.asyncProperty(
            fc.record(Object.fromEntries(pathParams(route.path).map((n) => [n, junkId]))),
            async (values) => {
              const res = await send(pathFor(route, values as Record<string, string>), route.body ? {} : undefined);
              expectProblem(res, `${label} path ${JSON.stringify(values)}`);
            },
          ),
          { numRuns: RUNS },
        );
      }

      // Unknown and malformed query parameters.
      await fc.assert(
        fc.asyncProperty(
          fc.string({ minLength: 1, maxLength: 10 }).filter((k) => /^[a-z_]+$/.test(k)),
          fc.string({ maxLength: 10 }),
          async (key, value) => {
            const query = querySchemaOf(route);
            if (query && key in query.fields) return;
            const res = await send(
              `${pathFor(route, {})}?${encodeURIComponent(`zz_${key}`)}=${encodeURIComponent(value)}`,
              route.body ? {} : undefined,
            );
            expectProblem(res, `${label} unknown query ${key}`, [400]);
          },
        ),
        { numRuns: RUNS },
      );
      const query = querySchemaOf(route);
      if (query) {
        const json = convertSchema(query as never) as Json;
        for (const [name, schema] of Object.entries((json.properties ?? {}) as Record<string, Json>)) {
          const bad = schema.enum
            ? 'not-a-listed-value'
            : types(schema).some((t) => t === 'integer' || t === 'number')
              ? 'NaN-ish'
              : null;
          if (bad === null) continue;
          const res = await send(`${pathFor(route, {})}?${name}=${bad}`, route.body ? {} : undefined);
          expectProblem(res, `${label} query ${name}=${bad}`, [400]);
        }
      }

      if (route.body) {
        const body = convertSchema(route.body as never) as Json;
        const props = (body.properties ?? {}) as Record<string, Json>;
        // Not JSON at all, and JSON that is not an object.
        for (const raw of ['{', '{"a":', 'nul', '[1,', '\u0000']) {
          expectProblem(await send(pathFor(route, {}), undefined, raw), `${label} raw ${JSON.stringify(raw)}`, [400]);
        }
        await fc.assert(
          fc.asyncProperty(
            fc.oneof(
              fc.integer(),
              fc.string(),
              fc.boolean(),
              fc.constant(null),
              fc.array(fc.anything(), { maxLength: 3 }),
            ),
            async (value) => {
              const res = await send(pathFor(route, {}), undefined, JSON.stringify(value));
              expectProblem(res, `${label} body ${JSON.stringify(value)}`, [400]);
            },
          ),
          { numRuns: RUNS },
        );
        // Unknown fields.
        await fc.assert(
          fc.asyncProperty(
            fc.string({ minLength: 1, maxLength: 12 }).filter((k) => !(k in props) && k !== '__proto__'),
            fc.jsonValue(),
            async (key, value) => {
              const res = await send(pathFor(route, {}), { [key]: value });
              expectProblem(res, `${label} unknown field ${key}`, [400]);
            },
          ),
          { numRuns: RUNS },
        );
        // Each declared field with a value of the wrong JSON type.
        for (const [name, schema] of Object.entries(props)) {
          const arb = wrongTypeArb(schema);
          if (!arb) continue;
          await fc.assert(
            fc.asyncProperty(arb, async (value) => {
              const res = await send(pathFor(route, {}), { [name]: value });
              expectProblem(res, `${label} field ${name}=${JSON.stringify(value)}`, [400]);
            }),
            { numRuns: RUNS },
          );
        }
      }

      const after = await tableCounts(stack.ds);
      expect(after).toEqual(before);
    });
  }
});
