import { PassThrough } from 'node:stream';
import * as yup from 'yup';
import { followAppLog, readAppLog, type AppLogLine } from '../../platform/app-log';
import { route } from '../route';
import { obj, str, timestamp } from '../schemas/common';
import { findApp } from './app-support';

export const appLogLineSchema = obj({
  timestamp: timestamp().required(),
  source: str().required(),
  message: str().defined(),
});

const logQuery = obj({
  tail: yup
    .number()
    .integer('${path} must be an integer')
    .min(1)
    .max(10_000)
    .typeError('${path} must be an integer')
    .default(100),
  since: timestamp().test(
    'iso',
    '${path} must be an ISO 8601 date-time',
    (v) => v === undefined || !Number.isNaN(Date.parse(v)),
  ),
});
type LogQuery = yup.InferType<typeof logQuery>;

const HEARTBEAT_MS = 15_000;

const sse = (line: AppLogLine) => `data: ${JSON.stringify(line)}\n\n`;

export const appLogRoutes = [
  route<{ uuid: string }, LogQuery>({
    method: 'get',
    path: '/apps/{uuid}/logs',
    requires: 'apps.logs',
    tag: 'apps',
    query: logQuery,
    summary:
      "The app's runtime log: its replicas' output and the platform's lines about them (source `berth`), oldest first. " +
      'With `Accept: text/event-stream` the selected lines are sent as events, then each new line until the client goes.',
    response: yup.array(appLogLineSchema),
    async handler(ctx) {
      const app = await findApp(ctx, ctx.params.uuid);
      const layout = ctx.deps.localLayout;
      const file = layout ? layout.appLogFile(app.uuid) : null;
      const since = ctx.query.since ? new Date(ctx.query.since) : null;
      const { lines, size } = file ? await readAppLog(file, { tail: ctx.query.tail, since }) : { lines: [], size: 0 };
      if (!(ctx.koa.get('accept') ?? '').includes('text/event-stream')) return lines;

      const koa = ctx.koa;
      const stream = new PassThrough();
      koa.req.socket.setTimeout(0);
      koa.set({
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
      });
      koa.body = stream;
      stream.write(': berth app log\n\n');
      for (const line of lines) stream.write(sse(line));
      const unfollow = file ? followAppLog(file, size, (line) => stream.write(sse(line))) : () => {};
      const heartbeat = setInterval(() => stream.write(': keep-alive\n\n'), HEARTBEAT_MS);
      const end = () => {
        unfollow();
        clearInterval(heartbeat);
        stream.end();
      };
      koa.req.once('close', end);
      koa.res.once('close', end);
      return undefined;
    },
  }),
];
