import { pathParams, type RouteDef } from '../../api/route';

/** A well-formed value for a path parameter: integer ids are numbers, the rest UUIDs. */
export function sampleParam(name: string): string {
  return name === 'id' || name.endsWith('_id') && !name.endsWith('uuid') ? '1' : '00000000-0000-4000-8000-00000000abcd';
}

/** The route's path under /api/v1 with the given (or sample) parameter values. */
export function pathFor(route: RouteDef, values: Record<string, string> = {}): string {
  let p = route.path;
  for (const name of pathParams(route.path)) p = p.replace(`{${name}}`, encodeURIComponent(values[name] ?? sampleParam(name)));
  return `/api/v1${p}`;
}
