import { spawn } from 'node:child_process';
import path from 'node:path';

const TSX = path.join(__dirname, '..', 'node_modules', '.bin', 'tsx');

export interface LoadResult {
  ok: number;
  bad: number;
  rps: number;
  cpuUs: number;
}

/** One round of closed-loop load from a process of its own (bench/load.ts). */
export function loadFromProcess(
  url: string,
  headers: Record<string, string>,
  seconds: number,
  concurrency: number,
): Promise<LoadResult> {
  const child = spawn(
    TSX,
    [path.join(__dirname, 'load.ts'), url, String(seconds), String(concurrency), JSON.stringify(headers)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]!) as LoadResult);
    });
    child.once('exit', (code) => reject(new Error(`the load generator for ${url} exited ${code} before answering`)));
  });
}
