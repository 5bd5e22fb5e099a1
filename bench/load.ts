/**
 * A benchmark's load generator, in a process of its own so the measured process does not
 * also pay for generating load (bench/load-process.ts starts it). Closed loop: CONCURRENCY
 * clients over keep-alive connections each send the next request when the last one answered.
 * argv: url seconds concurrency [headers as JSON] [CA file: HTTPS, SNI from the Host header];
 * prints {"ok": n, "bad": n, "rps": n, "cpuUs": CPU microseconds this process spent}.
 */
import { readFileSync } from 'node:fs';
import { Agent, request } from 'undici';

async function main(): Promise<void> {
  const [url, seconds, concurrency, headersJson, caFile] = process.argv.slice(2) as [
    string,
    string,
    string,
    string | undefined,
    string | undefined,
  ];
  const headers = JSON.parse(headersJson ?? '{}') as Record<string, string>;
  const tls = caFile ? { ca: readFileSync(caFile), servername: (headers.host ?? '').replace(/:\d+$/, '') } : {};
  const dispatcher = new Agent({ connections: Number(concurrency), keepAliveTimeout: 30_000, connect: tls });
  const deadline = Date.now() + Number(seconds) * 1000;
  let ok = 0;
  let bad = 0;
  const cpu = process.cpuUsage();
  await Promise.all(
    Array.from({ length: Number(concurrency) }, async () => {
      while (Date.now() < deadline) {
        const res = await request(url, { headers, dispatcher });
        await res.body.text();
        if (res.statusCode === 200) ok++;
        else bad++;
      }
    }),
  );
  const used = process.cpuUsage(cpu);
  await dispatcher.close();
  process.stdout.write(`${JSON.stringify({ ok, bad, rps: ok / Number(seconds), cpuUs: used.user + used.system })}\n`);
}

main().catch((err) => {
  process.stderr.write(`load failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
