import { routes } from '../../api/routes';

/**
 * Every accepted mutating request records one audit entry: each POST, PUT, PATCH and
 * DELETE of the route table names the action it records (or `false` when it changes
 * nothing). The router's audit check (on in every API test) holds each handler to it, and
 * the suite's teardown fails if a mutating route was never called successfully.
 */
describe('audit declarations of the route table', () => {
  const mutating = routes.filter((r) => r.method !== 'get');

  it('every mutating route declares the audit action it records', () => {
    const undeclared = mutating.filter((r) => r.audit === undefined).map((r) => `${r.method.toUpperCase()} ${r.path}`);
    expect(undeclared).toEqual([]);
  });

  it('actions read <resource type>.<verb>, and reads declare none', () => {
    for (const r of mutating) if (r.audit) expect(`${r.path} ${r.audit}`).toMatch(/ [a-z_]+\.[a-z_]+$/);
    expect(routes.filter((r) => r.method === 'get' && r.audit !== undefined)).toEqual([]);
  });
});
