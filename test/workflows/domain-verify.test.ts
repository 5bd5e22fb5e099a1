import { randomBytes, randomUUID } from 'node:crypto';
import type { temporal } from '@temporalio/proto';
import { VERIFY_MAX_ATTEMPTS, verifySchedule } from '../../domain/domains';
import { BerthOperation, BerthResource } from '../../domain/search-attributes';
import { insertApp, type AppRow } from '../support/app-rows';
import { startDnsServer, type TestDnsServer } from '../support/dns-server';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { startStack, type TestStack } from '../support/stack';
import { timeSkipping, type TimeSkipping } from '../support/temporal';

let dns: TestDnsServer;
let stack: TestStack;
let ts: TimeSkipping;
let ws: Workspace;
let app: AppRow;

beforeAll(async () => {
  dns = await startDnsServer();
  stack = await startStack({ env: { BERTH_DNS_SERVERS: dns.address } });
  ts = await timeSkipping(stack.activityDeps);
  ws = await seedWorkspace(stack.ds);
  app = await insertApp(stack.ds, ws);
});
afterAll(async () => {
  await ts?.close();
  await stack?.close();
  await dns?.close();
});

/** A domain already moved to in_progress (as POST .../verify leaves it), and its verification run. */
async function startVerification(name: string) {
  const uuid = randomUUID();
  const token = `berth-verify=${randomBytes(24).toString('base64url')}`;
  await stack.ds.query(
    `INSERT INTO domains (uuid, workspace_uuid, app_uuid, name, verification_status, verification_token) VALUES ($1, $2, $3, $4, 'in_progress', $5)`,
    [uuid, ws.uuid, app.uuid, name, token],
  );
  const op = await stack.ds.transaction((m) =>
    ts.outbox.enqueue(m, {
      operation: 'domain-verify',
      workflow: 'domainVerify',
      workspaceUuid: ws.uuid,
      resourceUuid: uuid,
      args: [{ domainUuid: uuid }],
    }),
  );
  return { uuid, token, op };
}

/** The timers the run started, in minutes, in order. */
function timerMinutes(history: temporal.api.history.v1.IHistory): number[] {
  return (history.events ?? [])
    .filter((e) => e.timerStartedEventAttributes)
    .map((e) => Number(e.timerStartedEventAttributes!.startToFireTimeout!.seconds) / 60);
}

/** The workflow's audited moves of a row: `<action> <from>-><to>`, oldest first. */
async function workflowMoves(uuid: string): Promise<string[]> {
  const found = await stack.ds.query(
    `SELECT action, diff, app_uuid FROM audit_events WHERE resource_uuid = $1 AND source = 'workflow' AND actor_type = 'system' ORDER BY created_at`,
    [uuid],
  );
  return found.map(
    (e: { action: string; diff: Record<string, { from: string; to: string }>; app_uuid: string }) =>
      `${e.action} ${e.diff.verification_status!.from}->${e.diff.verification_status!.to} ${e.app_uuid === app.uuid ? 'on the app' : 'elsewhere'}`,
  );
}

async function domain(uuid: string) {
  const [row] = await stack.ds.query(`SELECT * FROM domains WHERE uuid = $1`, [uuid]);
  return row;
}

describe('domainVerify workflow', () => {
  it('DOM-06 DOM-05 retries with Fibonacci delays capped at 60 minutes until the TXT record appears, then verifies', async () => {
    const name = `fib-${randomBytes(3).toString('hex')}.example.com`;
    const { uuid, token, op } = await startVerification(name);
    // The record shows up on the 12th lookup: 11 misses, 11 waits.
    dns.setTxt(`_platformapp-verify.${name}`, { values: ['v=unrelated', token], afterLookups: 11 });
    await ts.withWorker(async () => {
      await ts.outbox.dispatch(op);
      const handle = ts.client.workflow.getHandle(op.workflowId);
      expect(await handle.result()).toBe('verified');
      expect(await handle.query('state')).toBe('verified');
      const description = await handle.describe();
      expect(description.typedSearchAttributes.get(BerthResource)).toBe(uuid);
      expect(description.typedSearchAttributes.get(BerthOperation)).toBe('domain-verify');
      const waits = timerMinutes(await handle.fetchHistory());
      expect(waits).toEqual([1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 60]);
    });
    expect(dns.lookups(`_platformapp-verify.${name}`)).toBe(12);
    const row = await domain(uuid);
    expect(row).toMatchObject({
      verification_status: 'verified',
      verification_token: null,
      check_attempts: 12,
      last_check_error: null,
    });
    expect(row.dns_target).toMatch(new RegExp(`^${app.name}\\.`));
    expect(await workflowMoves(uuid)).toEqual(['domain.verification_status in_progress->verified on the app']);
  });

  it('DOM-06 a wrong token ends failed after every attempt, never waiting more than 60 minutes', async () => {
    const name = `wrong-${randomBytes(3).toString('hex')}.example.com`;
    const { uuid, token, op } = await startVerification(name);
    dns.setTxt(`_platformapp-verify.${name}`, { values: ['berth-verify=not-the-token'] });
    await ts.withWorker(async () => {
      await ts.outbox.dispatch(op);
      const handle = ts.client.workflow.getHandle(op.workflowId);
      expect(await handle.result()).toBe('failed');
      const waits = timerMinutes(await handle.fetchHistory());
      expect(waits).toEqual(verifySchedule());
      expect(Math.max(...waits)).toBe(60);
    });
    expect(dns.lookups(`_platformapp-verify.${name}`)).toBe(VERIFY_MAX_ATTEMPTS);
    const row = await domain(uuid);
    // DOM-03 DOM-04: still needs verification, so the token stays and no dns_target is given.
    expect(row).toMatchObject({
      verification_status: 'failed',
      verification_token: token,
      dns_target: null,
      check_attempts: VERIFY_MAX_ATTEMPTS,
    });
    expect(row.last_check_error).toMatch(/does not hold the verification token/);
    expect(await workflowMoves(uuid)).toEqual(['domain.verification_status in_progress->failed on the app']);
  });

  it('stops at its next check when the domain is deleted meanwhile', async () => {
    const name = `gone-${randomBytes(3).toString('hex')}.example.com`;
    const { uuid, op } = await startVerification(name);
    await ts.withWorker(async () => {
      await ts.outbox.dispatch(op);
      const handle = ts.client.workflow.getHandle(op.workflowId);
      for (;;) {
        if (dns.lookups(`_platformapp-verify.${name}`) >= 1) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      await stack.ds.query(`DELETE FROM domains WHERE uuid = $1`, [uuid]);
      expect(await handle.result()).toBe('stopped');
    });
    expect(dns.lookups(`_platformapp-verify.${name}`)).toBe(1);
  });
});
