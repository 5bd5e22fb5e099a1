import type request from 'supertest';
import { eventually } from '../../support/stack';

/** Attaches a new add-on to the app through the API and answers it once it is healthy (its connection details filled). */
export async function healthyAddon(
  api: ReturnType<typeof request>,
  auth: Record<string, string>,
  appUuid: string,
  body: { type: string; label: string },
): Promise<any> {
  const created = (await api.post(`/api/v1/apps/${appUuid}/addons`).set(auth).send(body).expect(201)).body;
  return eventually(
    async () => {
      const res = await api.get(`/api/v1/apps/${appUuid}/addons/${created.uuid}`).set(auth).expect(200);
      return res.body.state === 'healthy' ? res.body : undefined;
    },
    { what: `the ${body.type} add-on healthy`, timeoutMs: 120_000 },
  );
}
