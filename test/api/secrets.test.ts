import { hashToken } from '../../domain/tokens';
import { seedWorkspace, tokenWith, type Workspace } from '../support/fixtures';
import { expectNoSecretLeaks, startStack, type TestStack } from '../support/stack';
import { routes } from '../../api/routes';
import { pathFor } from '../support/routes';

let stack: TestStack;
let ws: Workspace;

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds);
});
afterAll(() => stack.close());

describe('secrets never leave', () => {
  it('no token or token hash appears in any response or log line, across every declared route', async () => {
    const other = await tokenWith(stack.ds, ws.uuid, ['apps:view']);
    await stack.http.post('/api/v1/projects').set('Authorization', `Bearer ${ws.ownerToken}`).send({ name: 'scan' });
    for (const route of routes) {
      for (const token of [ws.ownerToken, other, `${ws.ownerToken}x`]) {
        const req = stack.http[route.method](pathFor(route))
          .set('Authorization', `Bearer ${token}`)
          .set('X-Request-Id', 'scan');
        await (route.body ? req.send({}) : req);
      }
    }
    await stack.http.get('/api/v1/projects').set('Authorization', `Bearer ${ws.ownerToken}`).expect(200);
    expect(stack.responseBodies.length).toBeGreaterThan(routes.length);
    expect(stack.logLines.length).toBeGreaterThan(routes.length);
    expectNoSecretLeaks(stack, [ws.ownerToken, other, hashToken(ws.ownerToken), hashToken(other)]);
  });

  it('a secret put in a log line by mistake is redacted by the logger', () => {
    stack.logger.info(
      {
        token: 'brt_should-not-appear-1234',
        nested: { password: 'hunter2-hunter2' },
        headers: { authorization: 'Bearer xyz-secret-1' },
      },
      'oops',
    );
    expectNoSecretLeaks(stack, ['brt_should-not-appear-1234', 'hunter2-hunter2', 'xyz-secret-1']);
  });
});
