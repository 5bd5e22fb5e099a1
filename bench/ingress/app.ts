/**
 * The app of `npm run bench:ingress`: a real Node HTTP server in a process of its own, as
 * an app of the local driver runs (listens on PORT, answers a small JSON document). WORK_MS
 * spends that much CPU per request first, as a handler that renders something would.
 * GET /__cpu answers the CPU microseconds the process has used (the benchmark reads it
 * around each round to report the app's CPU per request).
 */
import { createServer } from 'node:http';

const body = JSON.stringify({ ok: true, items: Array.from({ length: 8 }, (_, i) => ({ id: i, name: `item ${i}` })) });
const workMs = Number(process.env.WORK_MS ?? 0);
const server = createServer((req, res) => {
  if (req.url === '/__cpu') {
    const { user, system } = process.cpuUsage();
    return void res.end(String(user + system));
  }
  for (const until = performance.now() + workMs; performance.now() < until;);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1', () => process.stdout.write('ready\n'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
