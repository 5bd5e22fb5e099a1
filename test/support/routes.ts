import { pathParams, type RouteDef } from '../../api/route';

/**
 * A well-formed value for a path parameter: a UUID (every parameter is one unless the
 * route declares it otherwise), and `1` for one the route's params schema declares a number.
 */
export function sampleParam(name: string, route?: RouteDef): string {
  const declared = (route?.params as { fields?: Record<string, { type?: string }> } | undefined)?.fields?.[name];
  return declared?.type === 'number' ? '1' : '00000000-0000-4000-8000-00000000abcd';
}

/** The route's path under /api/v1 with the given (or sample) parameter values. */
export function pathFor(route: RouteDef, values: Record<string, string> = {}): string {
  let p = route.path;
  for (const name of pathParams(route.path))
    p = p.replace(`{${name}}`, encodeURIComponent(values[name] ?? sampleParam(name, route)));
  return `/api/v1${p}`;
}
