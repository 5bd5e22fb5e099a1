import { spawn } from 'node:child_process';
import path from 'node:path';

const TSX = path.join(__dirname, '..', 'node_modules', '.bin', 'tsx');

export interface LoadResult {
  ok: number;
  bad: number;
  rps: number;
  cpuUs: number;
}

export interface PacedLoadResult {
  sent: number;
  ok: number;
  bad: number;
  p50: number;
  p99: number;
  max: number;
}

/** Runs a load generator script of bench/ in a process of its own; resolves with the JSON line it prints. */
function fromProcess<T>(script: string, args: string[], url: string): Promise<T> {
  const child = spawn(TSX, [path.join(__dirname, script), ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]!) as T);
    });
    child.once('exit', (code) => reject(new Error(`the load generator for ${url} exited ${code} before answering`)));
  });
}

/** One round of closed-loop load from a process of its own (bench/load.ts); with `caFile`, over HTTPS trusting it. */
export function loadFromProcess(
  url: string,
  headers: Record<string, string>,
  seconds: number,
  concurrency: number,
  caFile?: string,
): Promise<LoadResult> {
  const args = [url, String(seconds), String(concurrency), JSON.stringify(headers), ...(caFile ? [caFile] : [])];
  return fromProcess('load.ts', args, url);
}

/** Fixed-rate GETs for `seconds` from a process of its own (bench/paced-load.ts), with their latencies. */
export function pacedLoadFromProcess(
  url: string,
  headers: Record<string, string>,
  rate: number,
  seconds: number,
): Promise<PacedLoadResult> {
  return fromProcess('paced-load.ts', [url, String(rate), String(seconds), JSON.stringify(headers)], url);
}
