/**
 * A fixed-rate (open-loop) load generator, in a process of its own so the measured
 * processes do not also pay for generating load (bench/load-process.ts starts it): one GET
 * every 1/rate seconds whether or not the earlier ones answered, each timed from its send
 * to the end of its body, over keep-alive connections.
 * argv: url rate seconds [headers as JSON];
 * prints {"sent": n, "ok": n, "bad": n, "p50": ms, "p99": ms, "max": ms}.
 */
import { Agent, request } from 'undici';

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

async function main(): Promise<void> {
  const [url, rate, seconds, headersJson] = process.argv.slice(2) as [string, string, string, string | undefined];
  const headers = JSON.parse(headersJson ?? '{}') as Record<string, string>;
  const dispatcher = new Agent({ connections: 64, keepAliveTimeout: 30_000 });
  const count = Math.round(Number(rate) * Number(seconds));
  const latencies: number[] = [];
  let bad = 0;
  const inFlight: Array<Promise<void>> = [];
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    const wait = started + (i * 1000) / Number(rate) - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const sent = performance.now();
    inFlight.push(
      request(url, { headers, dispatcher }).then(
        async (res) => {
          await res.body.text();
          if (res.statusCode === 200) latencies.push(performance.now() - sent);
          else bad++;
        },
        () => {
          bad++;
        },
      ),
    );
  }
  await Promise.all(inFlight);
  await dispatcher.close();
  latencies.sort((a, b) => a - b);
  const round = (ms: number) => Math.round(ms * 10) / 10;
  process.stdout.write(
    `${JSON.stringify({
      sent: count,
      ok: latencies.length,
      bad,
      p50: round(percentile(latencies, 50)),
      p99: round(percentile(latencies, 99)),
      max: round(latencies.at(-1) ?? 0),
    })}\n`,
  );
}

main().catch((err) => {
  process.stderr.write(`paced load failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
