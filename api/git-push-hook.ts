import { execFile } from 'node:child_process';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { open } from 'node:fs/promises';
import { PassThrough } from 'node:stream';
import { promisify } from 'node:util';
import type Koa from 'koa';
import { APP_PROVISIONING_STATES } from '../domain/apps';
import { one } from '../entities/sql';
import type { ApiDeps, Caller } from './context';
import { GIT_PATH } from './git-repos';
import { Problem } from './problem';
import { outsideRouteContext } from './route';
import { createDeployment } from './commands/app-deployments';
import { write } from './commands/audited-write';
import { DEPLOY_ROUTE } from './routes/app-deployments';
import { loadApp } from './views/apps';

/**
 * The post-receive callback of a git push (api/git-http.ts). The push's request opens a
 * session: a one-time secret that only the `git http-backend` of that request (and so the
 * repository's hook, which inherits its environment) knows. The hook (bin/git-post-receive.js)
 * posts the pushed `old new ref` lines with it; a push to the tracked branch creates a
 * deployment of the pushed commit exactly as POST /apps/{uuid}/deployments does, attributed to
 * the pusher's token, and the answer streams the deployment's progress as text lines the
 * hook prints (git shows them as `remote: ...`).
 */
export const POST_RECEIVE_PATH = '/git/-/post-receive';
export const HOOK_SECRET_HEADER = 'X-Berth-Hook-Secret';
const ZERO_SHA = /^0+$/;
const MAX_BODY = 256 * 1024;
const POLL_MS = 500;
const RETRY_MS = 1000;
/** App states a push waits out before it deploys (the app is being provisioned, deployed, cloned, moved). */
const WAIT_STATES: readonly string[] = APP_PROVISIONING_STATES.filter((s) => s !== 'stopped' && s !== 'blocked');
const run = promisify(execFile);

export interface PushSession {
  caller: Caller;
  appUuid: string;
  /** The push's own request (its id, client address and user agent go into the audit entry). */
  koa: Koa.Context;
}

/** One-time secrets of pushes in flight (this process: the hook calls back the address the push came in on). */
export class PushSessions {
  private readonly open = new Map<string, PushSession>();

  start(session: PushSession): { secret: string; end(): void } {
    const secret = randomBytes(32).toString('hex');
    this.open.set(secret, session);
    return {
      secret,
      end: () => {
        this.open.delete(secret);
      },
    };
  }

  /** The session of a secret, once: a second use finds nothing. */
  take(secret: string): PushSession | null {
    for (const [key, session] of this.open) {
      if (key.length === secret.length && timingSafeEqual(Buffer.from(key), Buffer.from(secret))) {
        this.open.delete(key);
        return session;
      }
    }
    return null;
  }
}

async function textBody(ctx: Koa.Context): Promise<string> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new Problem(413, `the post-receive report is larger than ${MAX_BODY} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export function postReceiveHandler(deps: ApiDeps, sessions: PushSessions, maxWaitMs: number): Koa.Middleware {
  return async (ctx) => {
    const session = sessions.take(ctx.get(HOOK_SECRET_HEADER));
    if (!session) throw new Problem(401, 'the post-receive secret is not valid (it serves one push, once)');
    const updates = (await textBody(ctx))
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .filter((p) => p.length === 3) as Array<[string, string, string]>;
    const out = new PassThrough();
    ctx.status = 200;
    ctx.type = 'text/plain; charset=utf-8';
    ctx.body = out;
    void report(deps, session, updates, out, maxWaitMs).catch((err: Error) => {
      deps.logger.error({ err, appUuid: session.appUuid }, 'git push report failed');
      out.end(`failed: ${err.message}\n`);
    });
  };
}

async function report(
  deps: ApiDeps,
  session: PushSession,
  updates: Array<[string, string, string]>,
  out: PassThrough,
  maxWaitMs: number,
): Promise<void> {
  const say = (line: string) => {
    if (!out.destroyed) out.write(`${line}\n`);
  };
  const app = await one<{ name: string; config: { branch?: string } }>(
    deps.dataSource,
    `SELECT name, deployment_config AS config FROM apps WHERE uuid = $1`,
    [session.appUuid],
  );
  if (!app) return void out.end('not deployed: the app no longer exists\n');
  const branch = app.config.branch ?? 'main';
  let target: string | null = null;
  for (const [, next, ref] of updates) {
    if (ref !== `refs/heads/${branch}`) {
      say(
        `${ref}: nothing deployed: ${app.name} deploys only pushes to its branch ${branch} (deployment_config.branch)`,
      );
    } else if (ZERO_SHA.test(next)) {
      say(`${ref}: the branch was deleted: nothing deployed; the running release stays`);
    } else {
      target = next;
    }
  }
  if (!target) return void out.end();
  const ctx = outsideRouteContext({
    params: { uuid: session.appUuid },
    caller: session.caller,
    deps,
    koa: session.koa,
    requestId: session.koa.state.requestId,
    route: DEPLOY_ROUTE,
  });
  const deadline = Date.now() + maxWaitMs;
  let deploymentUuid: string | null = null;
  let waiting = false;
  while (!deploymentUuid) {
    if (waiting && (await branchHead(deps.localLayout!.gitRepo(app.name), branch)) !== target) {
      return void out.end(`not deployed: a newer push to ${branch} supersedes this one\n`);
    }
    try {
      deploymentUuid = (
        await write(ctx, (tx) =>
          createDeployment(tx, session.caller, { appUuid: session.appUuid, commit_sha: target, branch }),
        )
      ).uuid;
    } catch (err) {
      if (!(err instanceof Problem)) throw err;
      // Busy (provisioning, another deployment under way): the push waits its turn, within its bound.
      const state = (
        await one<{ state: string }>(deps.dataSource, `SELECT state FROM apps WHERE uuid = $1`, [session.appUuid])
      )?.state;
      if (!state || !WAIT_STATES.includes(state) || Date.now() > deadline || out.destroyed)
        return void out.end(`not deployed: ${err.detail}\n`);
      if (!waiting) say(`waiting: ${err.detail} (the app is ${state}); this push deploys once it can`);
      waiting = true;
      await new Promise((r) => setTimeout(r, RETRY_MS));
    }
  }
  say(`deploying ${target.slice(0, 12)} of ${branch}: deployment ${deploymentUuid}`);
  await follow(deps, session, deploymentUuid, say, Math.max(deadline - Date.now(), 0), () => out.destroyed);
  out.end();
}

/** The commit a branch of the app's repository points at now (null: no such branch). */
async function branchHead(repo: string, branch: string): Promise<string | null> {
  try {
    const { stdout } = await run(
      'git',
      ['--git-dir', repo, 'rev-parse', '--verify', '--quiet', `refs/heads/${branch}`],
      { env: { PATH: GIT_PATH, GIT_CONFIG_NOSYSTEM: '1' } },
    );
    return stdout.trim() || null;
  } catch {
    return null;
  }
}

/** Prints the deployment's state moves and build log lines until it ends (or the wait is over). */
async function follow(
  deps: ApiDeps,
  session: PushSession,
  deploymentUuid: string,
  say: (line: string) => void,
  maxWaitMs: number,
  gone: () => boolean,
): Promise<void> {
  const deadline = Date.now() + maxWaitMs;
  const log = deps.localLayout!.buildLogFile(deploymentUuid);
  let offset = 0;
  let partial = '';
  let last = '';
  const readLog = async () => {
    const file = await open(log, 'r').catch(() => null);
    if (!file) return;
    try {
      const buf = Buffer.alloc(64 * 1024);
      for (;;) {
        const { bytesRead } = await file.read(buf, 0, buf.length, offset);
        if (bytesRead === 0) break;
        offset += bytesRead;
        const lines = (partial + buf.subarray(0, bytesRead).toString('utf8')).split('\n');
        partial = lines.pop()!;
        for (const line of lines) say(line);
      }
    } finally {
      await file.close();
    }
  };
  while (!gone()) {
    const d = await one<{ state: string; message: string | null }>(
      deps.dataSource,
      `SELECT state, message FROM app_deployments WHERE uuid = $1`,
      [deploymentUuid],
    );
    if (!d) return say('failed: the deployment no longer exists');
    if (d.state !== last) {
      last = d.state;
      say(`deployment ${d.state}`);
    }
    await readLog();
    if (['completed', 'failed', 'cancelled'].includes(d.state)) {
      if (partial) say(partial);
      if (d.state !== 'completed') return say(`failed: ${d.message ?? `the deployment was ${d.state}`}`);
      const view = await loadApp(deps.dataSource, session.caller.workspaceUuid, session.appUuid, deps.config);
      return say(`deployed: ${view?.public_url ?? '(the app no longer exists)'}`);
    }
    if (Date.now() > deadline) {
      return say(
        `still ${d.state} after ${Math.round(maxWaitMs / 60_000)} minutes; follow it at GET /api/v1/apps/${session.appUuid}/deployments/${deploymentUuid}`,
      );
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
