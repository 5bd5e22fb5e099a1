import type { Method, RouteDef } from './route';

/**
 * The `operationId` of every route, derived from its method and path (the rule is in
 * docs/development.md, "Operation ids"). Generated clients name their functions after these,
 * so they change only when the route's method or path does.
 */

/**
 * The contract names one route of static sites `PUT /static/{uuid}` (platform-api.md); for its
 * operationId and its links it is a member of `/static_sites` like the others.
 */
const COLLECTION_ALIASES: Record<string, string> = { '/static': '/static_sites' };

/** The path with a collection the contract spells otherwise under its usual name. */
export function canonicalPath(path: string): string {
  for (const [alias, collection] of Object.entries(COLLECTION_ALIASES))
    if (path.startsWith(`${alias}/`)) return `${collection}${path.slice(alias.length)}`;
  return path;
}

const MEMBER_VERBS: Record<Method, string> = {
  get: 'get',
  post: 'post',
  put: 'update',
  patch: 'patch',
  delete: 'delete',
};

/** `vpn_users` -> `VpnUsers` */
function pascal(word: string): string {
  return word
    .split('_')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');
}

/** `deliveries` -> `delivery`, `apps` -> `app`; a word that is not a plural (`access`, `config`) is kept. */
export function singular(word: string): string {
  if (word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (word.endsWith('s') && !word.endsWith('ss')) return word.slice(0, -1);
  return word;
}

const isParam = (segment: string | undefined) => segment?.startsWith('{') ?? false;

/** The static segments of a path in PascalCase, each one followed by a parameter in the singular (`/apps/{uuid}/domains/{d}` -> `AppDomain`). */
function nounOf(segments: readonly string[]): string {
  return segments.map((s, i) => (isParam(s) ? '' : pascal(isParam(segments[i + 1]) ? singular(s) : s))).join('');
}

export function operationIdOf(route: RouteDef): string {
  if (route.operationId) return route.operationId;
  const segments = canonicalPath(route.path).split('/').filter(Boolean);
  const last = segments.at(-1)!;
  if (isParam(last)) return `${MEMBER_VERBS[route.method]}${nounOf(segments)}`;
  const owner = nounOf(segments.slice(0, -1));
  switch (route.method) {
    case 'get':
      return `${route.response?.type === 'array' ? 'list' : 'get'}${owner}${pascal(last)}`;
    case 'put':
      return `update${owner}${pascal(last)}`;
    case 'delete':
      return `delete${owner}${pascal(singular(last))}`;
    default: {
      // POST or PATCH: on a collection it creates a member; on any other word that word is an action, its first part the verb.
      if (singular(last) !== last) return `create${owner}${pascal(singular(last))}`;
      const [verb, ...rest] = last.split('_');
      return `${verb}${owner}${pascal(rest.join('_'))}`;
    }
  }
}
