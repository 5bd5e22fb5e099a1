import { randomBytes } from 'node:crypto';
import { insertApp } from '../../support/app-rows';
import { startDnsServer } from '../../support/dns-server';
import { seedWorkspace } from '../../support/fixtures';
import { timeSkipping } from '../../support/temporal';
import type { ReplayScenario } from './types';

export const domainScenarios: ReplayScenario[] = [
  {
    // Recorded on the time-skipping server: the record appears on the 4th lookup, after
    // waits of 1, 1 and 2 minutes; then the domain is verified.
    name: 'domain-verify',
    async record(stack) {
      const dns = await startDnsServer();
      const ts = await timeSkipping({ ...stack.activityDeps, config: { ...stack.config, dnsServers: [dns.address] } });
      try {
        const ws = await seedWorkspace(stack.ds);
        const app = await insertApp(stack.ds, ws);
        const auth = { Authorization: `Bearer ${ws.ownerToken}` };
        const name = `replay-${randomBytes(3).toString('hex')}.example.com`;
        const created = await stack.http
          .post(`/api/v1/apps/${app.uuid}/domains`)
          .set(auth)
          .send({ domain: { name } })
          .expect(201);
        dns.setTxt(`_platformapp-verify.${name}`, { values: [created.body.verification_token], afterLookups: 3 });
        // What POST .../verify writes (in_progress and the outbox row), enqueued for the test server's task queue.
        await stack.ds.query(`UPDATE domains SET verification_status = 'in_progress' WHERE uuid = $1`, [
          created.body.uuid,
        ]);
        const op = await stack.ds.transaction((m) =>
          ts.outbox.enqueue(m, {
            operation: 'domain-verify',
            workflow: 'domainVerify',
            workspaceUuid: ws.uuid,
            resourceUuid: created.body.uuid,
            args: [{ domainUuid: created.body.uuid }],
          }),
        );
        return await ts.withWorker(async () => {
          await ts.outbox.dispatch(op);
          const handle = ts.client.workflow.getHandle(`domain-verify/${created.body.uuid}`);
          await handle.result();
          return handle.fetchHistory();
        });
      } finally {
        await ts.close();
        await dns.close();
      }
    },
  },
];
