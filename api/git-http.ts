import path from 'node:path';
import type Koa from 'koa';
import { REQUIREMENTS, allows } from '../domain/permissions';
import { one } from '../entities/sql';
import type { LocalLayout } from '../platform/local-layout';
import { assertProjectVisible } from './access';
import type { ApiDeps, Caller } from './context';
import { runHttpBackend } from './git-cgi';
import { HOOK_SECRET_HEADER, POST_RECEIVE_PATH, postReceiveHandler, PushSessions } from './git-push-hook';
import { ensureRepository, GIT_PATH } from './git-repos';
import { callerOfToken, WORKSPACE_HEADER } from './middleware/auth';
import { Problem, forbidden } from './problem';
import { outsideRouteContext } from './route';
import { DEPLOY_ROUTE } from './routes/app-deployments';

/**
 * Git's Smart HTTP for git_push apps: `<origin>/git/<app name>.git`, served by git's own
 * `git http-backend` (CGI) from the app's bare repository (`LocalLayout.gitRepo`), created on
 * first access. Outside the route table and before bearer authentication: git speaks HTTP
 * Basic, so the password is a Berth token (any user name) and it must hold apps:deploy in the
 * app's workspace (X-Workspace-Id selects another workspace of a member's token, as for the
 * API). Without valid credentials 401 with a Basic challenge; an app the caller cannot see
 * (unknown name, another workspace, a closed project) or that is not git_push: 404; a caller
 * without apps:deploy: 403. A push runs the repository's post-receive hook, which reports back
 * through POST_RECEIVE_PATH (api/git-push-hook.ts). The token is never logged nor handed to git.
 */
const REPO_PATH = /^\/git\/([a-z0-9][a-z0-9-]{0,99})\.git(\/.*)$/;
/** The Smart HTTP requests (the dumb protocol is not served). */
const SERVICES: Array<{ method: string; path: string; service?: string }> = [
  { method: 'GET', path: '/info/refs' },
  { method: 'POST', path: '/git-upload-pack', service: 'git-upload-pack' },
  { method: 'POST', path: '/git-receive-pack', service: 'git-receive-pack' },
];
/** How long a push waits for its deployment to end before it leaves (the deployment goes on). */
const PUSH_WAIT_MS = 20 * 60 * 1000;

const challenge = (detail: string) =>
  new Problem(401, detail, { headers: { 'WWW-Authenticate': 'Basic realm="berth"' } });

function basicPassword(ctx: Koa.Context): string {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(ctx.get('authorization'));
  if (!m)
    throw challenge(
      'git needs HTTP Basic credentials: any user name and a Berth token with apps:deploy as the password',
    );
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const i = decoded.indexOf(':');
  const password = i >= 0 ? decoded.slice(i + 1) : '';
  if (!password) throw challenge('the password must be a Berth token');
  return password;
}

async function authorize(deps: ApiDeps, ctx: Koa.Context, token: string): Promise<Caller> {
  try {
    return await callerOfToken(deps.dataSource, token, ctx.get(WORKSPACE_HEADER) || null, deps.tokenCache);
  } catch (err) {
    if (err instanceof Problem && err.status === 401) throw challenge(err.detail.replace('bearer token', 'token'));
    throw err;
  }
}

/** The `http://host:port` this request came in on: the hook calls back there (the same process). */
function localOrigin(ctx: Koa.Context): string {
  const { localAddress, localPort } = ctx.req.socket;
  const address = (localAddress ?? '127.0.0.1').replace(/^::ffff:/, '');
  return `http://${address.includes(':') ? `[${address}]` : address}:${localPort}`;
}

export function gitHttp(deps: ApiDeps & { localLayout: LocalLayout }): Koa.Middleware {
  const sessions = new PushSessions();
  const postReceive = postReceiveHandler(deps, sessions, PUSH_WAIT_MS);
  return async (ctx, next) => {
    if (ctx.path === POST_RECEIVE_PATH && ctx.method === 'POST') return postReceive(ctx, next);
    const m = REPO_PATH.exec(ctx.path);
    if (!m) return next();
    const [, name, rest] = m as unknown as [string, string, string];
    const service = SERVICES.find((s) => s.method === ctx.method && s.path === rest);
    if (!service)
      throw new Problem(
        404,
        `${ctx.method} ${rest} is not a git Smart HTTP request (only info/refs, git-upload-pack and git-receive-pack are served)`,
      );
    if (ctx.method === 'GET' && !['git-upload-pack', 'git-receive-pack'].includes(String(ctx.query.service))) {
      throw new Problem(
        404,
        'info/refs needs ?service=git-upload-pack or ?service=git-receive-pack (the dumb protocol is not served)',
      );
    }

    const caller = await authorize(deps, ctx, basicPassword(ctx));
    if (!allows(caller, REQUIREMENTS['apps.deploy_commit']))
      throw forbidden("pushing to and fetching from an app's repository needs apps:deploy");
    const app = await one<{
      uuid: string;
      project_uuid: string | null;
      deployment_method: string;
      config: { branch?: string };
    }>(
      deps.dataSource,
      `SELECT uuid, project_uuid, deployment_method, deployment_config AS config FROM apps WHERE name = $1 AND workspace_uuid = $2`,
      [name, caller.workspaceUuid],
    );
    if (!app)
      throw new Problem(
        404,
        `no app named ${name} in this workspace (the repository path uses the app's name, with its suffix)`,
      );
    const rctx = outsideRouteContext({
      params: {},
      caller,
      deps,
      koa: ctx,
      requestId: ctx.state.requestId,
      route: DEPLOY_ROUTE,
    });
    await assertProjectVisible(rctx, app.project_uuid, 'app');
    if (app.deployment_method !== 'git_push') {
      throw new Problem(
        404,
        `app ${name} deploys with ${app.deployment_method}, not git_push: it has no repository to push to`,
      );
    }

    const repo = await ensureRepository(deps.localLayout, name, app.config.branch ?? 'main');
    const env: NodeJS.ProcessEnv = {
      PATH: GIT_PATH,
      HOME: path.dirname(repo),
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_PROJECT_ROOT: path.dirname(repo),
      GIT_HTTP_EXPORT_ALL: '1',
      PATH_INFO: `/${name}.git${rest}`,
      REQUEST_METHOD: ctx.method,
      QUERY_STRING: ctx.querystring,
      CONTENT_TYPE: ctx.get('content-type'),
      REMOTE_USER: caller.memberUuid ? `member-${caller.memberUuid}` : `token-${caller.tokenUuid}`,
      REMOTE_ADDR: ctx.ip,
      ...(ctx.get('content-length') ? { CONTENT_LENGTH: ctx.get('content-length') } : {}),
      ...(ctx.get('content-encoding') ? { HTTP_CONTENT_ENCODING: ctx.get('content-encoding') } : {}),
      ...(ctx.get('git-protocol') ? { HTTP_GIT_PROTOCOL: ctx.get('git-protocol') } : {}),
    };
    let end: (() => void) | undefined;
    if (service.service === 'git-receive-pack') {
      const session = sessions.start({ caller, appUuid: app.uuid, koa: ctx });
      end = session.end;
      env.BERTH_GIT_HOOK_URL = `${localOrigin(ctx)}${POST_RECEIVE_PATH}`;
      env.BERTH_GIT_HOOK_SECRET = session.secret;
      env.BERTH_GIT_HOOK_SECRET_HEADER = HOOK_SECRET_HEADER;
    }
    let cgi;
    try {
      cgi = await runHttpBackend(ctx, env, deps.logger, end);
    } catch (err) {
      end?.();
      throw err;
    }
    ctx.status = cgi.status;
    for (const [k, v] of cgi.headers) ctx.set(k, v);
    ctx.body = cgi.body;
  };
}
