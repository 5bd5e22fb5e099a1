import type { TestStack } from './stack';

/** The audit entries of a resource through GET /audit_events (newest first), of one action if given. */
export async function auditEntries(
  stack: TestStack,
  token: string,
  resourceUuid: string,
  action?: string,
): Promise<Array<Record<string, any>>> {
  const res = await stack.http
    .get(`/api/v1/audit_events?resource_uuid=${resourceUuid}`)
    .set('Authorization', `Bearer ${token}`);
  expect(res.status).toBe(200);
  const entries = res.body as Array<Record<string, any>>;
  return action ? entries.filter((e) => e.action === action) : entries;
}
