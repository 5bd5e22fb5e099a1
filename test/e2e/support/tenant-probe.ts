import type request from 'supertest';
import { eventually } from '../../support/stack';
import { workingCopy, type WorkingCopy } from '../../support/working-copy';
import type { BerthDev } from './berth-dev';

/**
 * The tenant probe (test/fixtures/apps/tenant-probe) on `npm start`'s platform: an app a
 * test pushes with git, then asks (through the ingress) to try something from the inside.
 */
export interface ProbeHost {
  berth: BerthDev;
  api: ReturnType<typeof request>;
  auth: Record<string, string>;
  resource: string;
  /** Working copies to dispose of after the tests. */
  copies: WorkingCopy[];
}

/** Creates an app and pushes the probe to it; resolves once it serves. */
export async function deployProbe(host: ProbeHost, name: string, body: Record<string, unknown> = {}): Promise<any> {
  const app = (
    await host.api
      .post('/api/v1/apps')
      .set(host.auth)
      .send({ name, resource_id: host.resource, deployment_method: 'git_push', ...body })
      .expect(201)
  ).body;
  const copy = workingCopy('tenant-probe');
  host.copies.push(copy);
  expect(host.berth.push(copy.dir, app.git_url)).toMatch(/deployed: /);
  return app;
}

/**
 * Asks the app (through the ingress) to try something from the inside; the answer's text.
 * A replica being restarted answers 502/503 a moment: asked again, up to 60 s.
 */
export async function ask(
  host: Pick<ProbeHost, 'berth'>,
  app: { public_url: string },
  pathname: string,
): Promise<string> {
  const answer = await eventually(
    async () => {
      const res = await host.berth.viaPublicUrl(app.public_url, pathname);
      return res.status === 200 ? { text: res.text.trim() } : undefined;
    },
    { what: `${pathname} answered`, timeoutMs: 60_000 },
  );
  return answer.text;
}
