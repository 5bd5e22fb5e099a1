import { convertSchema } from '@sodaru/yup-to-json-schema';
import type * as yup from 'yup';
import { REQUIREMENTS, describeRequirement } from '../domain/permissions';
import { WORKSPACE_HEADER } from './middleware/auth';
import { linksOf } from './openapi-links';
import { operationIdOf } from './openapi-names';
import { querySchemaOf } from './router';
import { pathParams, type RouteDef } from './route';

type JsonSchema = Record<string, unknown>;

function toJsonSchema(schema: yup.Schema<any>): JsonSchema {
  return convertSchema(schema as never) as JsonSchema;
}

const problem = { $ref: '#/components/schemas/Problem' };
const problemResponse = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: problem } },
});
/** On every answer (api/middleware/rate-limit.ts). */
const rateLimitHeaders = {
  'RateLimit-Limit': { $ref: '#/components/headers/RateLimitLimit' },
  'RateLimit-Remaining': { $ref: '#/components/headers/RateLimitRemaining' },
  'RateLimit-Reset': { $ref: '#/components/headers/RateLimitReset' },
};

/** The `/api/v1` path of a route in OpenAPI form (`{uuid}` placeholders already are). */
export function openApiPath(route: RouteDef): string {
  return `/api/v1${route.path}`;
}

function parameters(route: RouteDef): unknown[] {
  const params: unknown[] = [{ $ref: '#/components/parameters/WorkspaceId' }];
  const pathSchema = route.params ? (toJsonSchema(route.params).properties as Record<string, JsonSchema>) : {};
  for (const name of pathParams(route.path)) {
    params.push({ name, in: 'path', required: true, schema: pathSchema[name] ?? { type: 'string', format: 'uuid' } });
  }
  const query = querySchemaOf(route);
  if (query) {
    const json = toJsonSchema(query);
    const required = new Set((json.required as string[] | undefined) ?? []);
    for (const [name, schema] of Object.entries((json.properties ?? {}) as Record<string, JsonSchema>)) {
      params.push({ name, in: 'query', required: required.has(name), schema });
    }
  }
  return params;
}

/** OpenAPI 3.1 document of every declared route, derived from the route table. */
export function openApiDocument(routes: readonly RouteDef[], version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const links = linksOf(routes);
  for (const r of routes) {
    const status = String(r.status ?? 200);
    const success: Record<string, unknown> = {
      description: status === '204' ? 'No content' : 'Success',
      headers: rateLimitHeaders,
    };
    if (r.response && status !== '204') success.content = { 'application/json': { schema: toJsonSchema(r.response) } };
    if (links.has(r)) success.links = links.get(r);
    if (r.paginated) {
      success.headers = {
        ...rateLimitHeaders,
        Link: { description: 'RFC 8288 links: first, prev, next, last', schema: { type: 'string' } },
        'X-Total-Count': { description: 'Number of items across all pages', schema: { type: 'integer' } },
      };
    }
    const requirement = REQUIREMENTS[r.requires];
    const operation: Record<string, unknown> = {
      operationId: operationIdOf(r),
      summary: r.summary,
      ...(r.description ? { description: r.description } : {}),
      tags: [r.tag],
      security: [{ bearer: [] }],
      parameters: parameters(r),
      'x-berth-permission': describeRequirement(requirement),
      responses: {
        [status]: success,
        '400': problemResponse('Malformed or wrongly typed parameters'),
        '401': problemResponse('Missing, invalid or expired token'),
        '403': problemResponse(`The token lacks the permission: ${describeRequirement(requirement)}`),
        '404': problemResponse('Not found, or hidden by a project restriction'),
        '409': problemResponse('Conflicts with the current state'),
        '422': problemResponse('Breaks a rule of the contract'),
        '429': {
          ...problemResponse("Over the caller's rate limit (BERTH_RATE_LIMIT); retry after Retry-After seconds"),
          headers: {
            'Retry-After': { description: 'Seconds until the window resets', schema: { type: 'integer' } },
            ...rateLimitHeaders,
          },
        },
      },
    };
    if (r.body) {
      operation.requestBody = { required: true, content: { 'application/json': { schema: toJsonSchema(r.body) } } };
    }
    (paths[openApiPath(r)] ??= {})[r.method] = operation;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Berth management API',
      version,
      description:
        'The management API of the Berth hosting platform. Every call needs a bearer token; ' +
        `the ${WORKSPACE_HEADER} header selects the workspace (default: the token's).`,
    },
    servers: [{ url: '/' }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'brt_…' } },
      headers: {
        RateLimitLimit: { description: 'Requests the caller may make per window', schema: { type: 'integer' } },
        RateLimitRemaining: { description: 'Requests left in the current window', schema: { type: 'integer' } },
        RateLimitReset: { description: 'Seconds until the current window resets', schema: { type: 'integer' } },
      },
      parameters: {
        WorkspaceId: {
          name: WORKSPACE_HEADER,
          in: 'header',
          required: false,
          description: "Workspace UUID; the token's workspace when absent",
          schema: { type: 'string', format: 'uuid' },
        },
      },
      schemas: {
        Problem: {
          type: 'object',
          description: 'RFC 9457 problem details',
          required: ['type', 'title', 'status', 'detail', 'instance'],
          properties: {
            type: { type: 'string' },
            title: { type: 'string' },
            status: { type: 'integer' },
            detail: { type: 'string' },
            instance: { type: 'string', description: 'The request id (X-Request-Id)' },
            errors: {
              type: 'array',
              items: {
                type: 'object',
                required: ['path', 'message'],
                properties: { path: { type: 'string' }, message: { type: 'string' } },
              },
            },
          },
        },
      },
    },
  };
}

function escape(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** A self-contained reference page (no external assets) generated from the same table. */
export function referencePage(routes: readonly RouteDef[], version: string): string {
  const byTag = new Map<string, RouteDef[]>();
  for (const r of routes) byTag.set(r.tag, [...(byTag.get(r.tag) ?? []), r]);
  const sections = [...byTag.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([tag, list]) => {
      const items = list
        .map((r) => {
          const body = r.body
            ? `<details><summary>Request body</summary><pre>${escape(JSON.stringify(toJsonSchema(r.body), null, 2))}</pre></details>`
            : '';
          const resp = r.response
            ? `<details><summary>Response ${r.status ?? 200}</summary><pre>${escape(JSON.stringify(toJsonSchema(r.response), null, 2))}</pre></details>`
            : `<p>Response ${r.status ?? 200}</p>`;
          return `<section><h3><code class="m ${r.method}">${r.method.toUpperCase()}</code> <code>${escape(openApiPath(r))}</code></h3>
<p>${escape(r.summary)}</p>${r.description ? `<p>${escape(r.description)}</p>` : ''}<p class="perm">Permission: ${escape(describeRequirement(REQUIREMENTS[r.requires]))}${r.paginated ? ' · paginated (page, per_page; Link, X-Total-Count)' : ''}</p>${body}${resp}</section>`;
        })
        .join('\n');
      return `<h2 id="${escape(tag)}">${escape(tag)}</h2>\n${items}`;
    })
    .join('\n');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Berth API reference</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
code{font:13px ui-monospace,monospace}pre{background:#f6f6f6;padding:.5rem;overflow:auto}
.m{padding:1px 6px;border-radius:3px;color:#fff}.get{background:#2a7}.post{background:#27c}.put,.patch{background:#c82}.delete{background:#c33}
.perm{color:#666;font-size:13px}section{border-top:1px solid #eee;padding:.5rem 0}</style></head><body>
<h1>Berth API reference <small>${escape(version)}</small></h1>
<p>Every call needs <code>Authorization: Bearer &lt;token&gt;</code>; <code>${WORKSPACE_HEADER}</code> selects the workspace.
Errors are <code>application/problem+json</code> (RFC 9457). Each token has a rate limit: every answer carries
<code>RateLimit-Limit</code>, <code>RateLimit-Remaining</code> and <code>RateLimit-Reset</code>; past it, 429 with <code>Retry-After</code>. Machine-readable: <a href="/api/v1/openapi.json">/api/v1/openapi.json</a>.</p>
<nav>${[...byTag.keys()]
    .sort()
    .map((t) => `<a href="#${escape(t)}">${escape(t)}</a>`)
    .join(' · ')}</nav>
${sections}</body></html>`;
}
