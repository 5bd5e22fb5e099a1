import { randomBytes } from 'node:crypto';
import { certificateUntil, insertVerifiedDomain, startAcmeIngress, startCertificateWorkflow } from '../../support/acme';
import { insertApp } from '../../support/app-rows';
import { freePort } from '../../support/ports';
import { startPebble } from '../../support/pebble';
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
  {
    // Recorded against Debian's pebble on the time-skipping server: the certificate is
    // obtained by HTTP-01 through a real ingress, then the renewal timer fires (time skipped)
    // and the run continues as new. The first run's history.
    name: 'domain-certificate',
    async record(stack) {
      const httpPort = await freePort();
      const pebble = await startPebble({ httpPort });
      const config = { ...stack.config, acmeDirectory: pebble.directoryUrl, acmeCaFile: pebble.tlsCaFile };
      const ts = await timeSkipping({ ...stack.activityDeps, config });
      try {
        const ws = await seedWorkspace(stack.ds);
        const app = await insertApp(stack.ds, ws);
        const rig = await startAcmeIngress({ ds: stack.ds, deps: stack.activityDeps, pebble, httpPort, app });
        try {
          const domain = await insertVerifiedDomain(stack.ds, ws.uuid, app);
          return await ts.withWorker(async () => {
            const handle = await startCertificateWorkflow(stack.ds, ts, ws, domain.uuid);
            const issued = await certificateUntil(stack.ds, domain.uuid, (r) => r.state === 'issued', 'not issued');
            const firstRun = (await handle.describe()).runId;
            await ts.env.sleep(issued.renew_at.getTime() - (await ts.env.currentTimeMs()) + 1000);
            await certificateUntil(
              stack.ds,
              domain.uuid,
              (r) => r.certificate_pem !== issued.certificate_pem,
              'not renewed',
            );
            const history = await ts.client.workflow.getHandle(handle.workflowId, firstRun).fetchHistory();
            await handle.terminate('recorded');
            return history;
          });
        } finally {
          await rig.close();
        }
      } finally {
        await ts.close();
        await pebble.close();
      }
    },
  },
];
