import { createHmac, randomBytes } from 'node:crypto';
import type { TestStack } from './stack';

/** A commit id like a code host's. */
export const sha = () => randomBytes(20).toString('hex');

export interface PullRequestEvent {
  action: 'opened' | 'reopened' | 'synchronize' | 'closed' | 'edited' | 'labeled';
  number: number;
  headSha: string;
  branch?: string;
  base?: string;
  title?: string;
  author?: string;
  merged?: boolean;
}

/** A GitHub-shaped pull_request delivery body. */
export function pullRequestPayload(e: PullRequestEvent): Record<string, unknown> {
  return {
    action: e.action,
    number: e.number,
    pull_request: {
      number: e.number,
      title: e.title ?? `Change #${e.number}`,
      html_url: `https://code.example.test/acme/shop/pull/${e.number}`,
      state: e.action === 'closed' ? 'closed' : 'open',
      merged: e.merged ?? false,
      user: { login: e.author ?? 'octocat' },
      head: { ref: e.branch ?? `feature-${e.number}`, sha: e.headSha },
      base: { ref: e.base ?? 'main' },
    },
    repository: { full_name: 'acme/shop', default_branch: 'main' },
  };
}

/** A GitHub-shaped push delivery body. */
export function pushPayload(
  branch: string,
  after: string,
  options: { deleted?: boolean } = {},
): Record<string, unknown> {
  return {
    ref: `refs/heads/${branch}`,
    before: '0'.repeat(40),
    after,
    deleted: options.deleted ?? false,
    pusher: { name: 'octocat' },
    repository: { full_name: 'acme/shop', default_branch: 'main' },
  };
}

/**
 * Delivers an event to the app's code-host endpoint the way a code host does: the raw JSON
 * body signed with HMAC-SHA256 in X-Hub-Signature-256 (computed here independently of the API).
 */
export function deliver(
  stack: TestStack,
  appUuid: string,
  secret: string,
  event: string,
  payload: unknown,
  options: { signature?: string } = {},
) {
  const body = JSON.stringify(payload);
  const signature = options.signature ?? `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
  return stack.http
    .post(`/api/v1/code_host/apps/${appUuid}/events`)
    .set('Content-Type', 'application/json')
    .set('X-GitHub-Event', event)
    .set('X-GitHub-Delivery', randomBytes(8).toString('hex'))
    .set('X-Hub-Signature-256', signature)
    .send(body);
}
