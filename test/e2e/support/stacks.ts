import type request from 'supertest';
import { eventually } from '../../support/stack';

/**
 * Creates a stack from a repository's `main` and waits until its first deployment has
 * ended (completed or failed): answers the stack as the API shows it then.
 */
export async function deployStack(
  api: ReturnType<typeof request>,
  auth: Record<string, string>,
  body: { name: string; resource_id: string; repository_url: string },
  timeoutMs: number,
): Promise<any> {
  const created = (
    await api
      .post('/api/v1/stacks')
      .set(auth)
      .send({ ...body, branch: 'main' })
      .expect(201)
  ).body;
  return eventually(
    async () => {
      const s = (await api.get(`/api/v1/stacks/${created.uuid}`).set(auth).expect(200)).body;
      return s.latest_deployment && ['completed', 'failed'].includes(s.latest_deployment.state) ? s : undefined;
    },
    { what: `the stack ${body.name} deployed`, timeoutMs },
  );
}
