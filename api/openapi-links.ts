import type * as yup from 'yup';
import { canonicalPath, operationIdOf } from './openapi-names';
import { pathParams, type RouteDef } from './route';

/**
 * OpenAPI links, derived from the route table: the answer of an operation that creates a
 * resource is linked to every operation that takes that resource's identifier, so generated
 * clients and stateful fuzzers can chain a create into what follows (docs/development.md,
 * "OpenAPI links").
 */

/** An OpenAPI Link object. */
export interface Link {
  operationId: string;
  parameters: Record<string, string>;
  description: string;
}

/** A member path such as `/apps/{uuid}/domains/{domain_uuid}`: the collection, then the member's parameter. */
interface Member {
  collection: string;
  param: string;
}

/** The member paths a route's path runs through, outermost first (`/apps/{uuid}/domains/{d}/verify` -> apps, domains). */
function membersOf(route: RouteDef): Member[] {
  const segments = canonicalPath(route.path).split('/');
  return segments.flatMap((s, i) =>
    s.startsWith('{') ? [{ collection: segments.slice(0, i).join('/'), param: s.slice(1, -1) }] : [],
  );
}

const memberPath = (m: Member) => `${m.collection}/{${m.param}}`;
const within = (path: string, prefix: string) => path === prefix || path.startsWith(`${prefix}/`);

/** The fields of an answer: an object's, or those of an array's items (`/0/...`). */
function answerFields(route: RouteDef): { fields: Record<string, unknown>; prefix: string } | undefined {
  if (!route.response || route.status === 204) return undefined;
  const schema = route.response as yup.Schema<any> & { fields?: Record<string, unknown>; innerType?: yup.Schema<any> };
  if (schema.fields) return { fields: schema.fields, prefix: '' };
  const items = schema.innerType as (yup.Schema<any> & { fields?: Record<string, unknown> }) | undefined;
  return items?.fields ? { fields: items.fields, prefix: '/0' } : undefined;
}

/** JSON pointer to the created member's identifier in the answer: the field named like the parameter, else `uuid`, else `id`. */
function identifierPointer(route: RouteDef, param: string): string | undefined {
  const answer = answerFields(route);
  const field = [param, 'uuid', 'id'].find((name) => answer && name in answer.fields);
  return field === undefined ? undefined : `${answer!.prefix}/${field}`;
}

interface Creator {
  route: RouteDef;
  member: Member;
  pointer: string;
}

/**
 * Who creates the members of a collection:
 * 1. a POST or PUT on the collection whose answer carries the member's identifier;
 * 2. a POST on one member that answers 201 with the same shape as (1), a copy (an app's clone, a replica);
 * 3. when the collection has no (1), a POST elsewhere under its parent that answers with the
 *    shape its members are shown in (a webhook's test answers with the delivery it made).
 */
function creatorsOf(member: Member, routes: readonly RouteDef[]): Creator[] {
  const path = memberPath(member);
  const creator = (route: RouteDef): Creator[] => {
    const pointer = identifierPointer(route, member.param);
    return pointer ? [{ route, member, pointer }] : [];
  };
  const direct = routes.filter(
    (r) => (r.method === 'post' || r.method === 'put') && canonicalPath(r.path) === member.collection,
  );
  const found = direct.flatMap(creator);
  if (found.length > 0) {
    const copies = routes.filter(
      (r) =>
        r.method === 'post' &&
        r.status === 201 &&
        canonicalPath(r.path).startsWith(`${path}/`) &&
        found.some((c) => c.route.response === r.response),
    );
    return [...found, ...copies.flatMap(creator)];
  }
  const shown = routes.find((r) => r.method === 'get' && canonicalPath(r.path) === path)?.response;
  const parent = member.collection.slice(0, member.collection.lastIndexOf('/'));
  const elsewhere = routes.filter(
    (r) =>
      r.method === 'post' &&
      shown !== undefined &&
      r.response === shown &&
      within(canonicalPath(r.path), parent) &&
      !within(canonicalPath(r.path), member.collection),
  );
  return elsewhere.flatMap(creator);
}

/** The link from a creator's answer to a route that takes the created member's identifier (and nothing deeper). */
function linkTo(target: RouteDef, c: Creator): Link | undefined {
  const members = membersOf(target);
  const own = members.at(-1);
  if (!own || memberPath(own) !== memberPath(c.member)) return undefined;
  const sourceParams = new Set(pathParams(c.route.path));
  const parameters: Record<string, string> = {};
  for (const m of members) {
    if (m === own) parameters[m.param] = `$response.body#${c.pointer}`;
    else if (sourceParams.has(m.param)) parameters[m.param] = `$request.path.${m.param}`;
    else return undefined;
  }
  return { operationId: operationIdOf(target), parameters, description: target.summary };
}

/** The links of every creating route's success answer, keyed by the target's operationId. */
export function linksOf(routes: readonly RouteDef[]): Map<RouteDef, Record<string, Link>> {
  const members = new Map<string, Member>();
  for (const r of routes) for (const m of membersOf(r)) members.set(memberPath(m), m);
  const links = new Map<RouteDef, Record<string, Link>>();
  for (const member of members.values())
    for (const c of creatorsOf(member, routes))
      for (const target of routes) {
        const link = target === c.route ? undefined : linkTo(target, c);
        if (link) links.set(c.route, { ...links.get(c.route), [link.operationId]: link });
      }
  return links;
}
