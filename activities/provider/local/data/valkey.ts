import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import path from 'node:path';
import type { ClusterSpec } from '../../../../platform/drivers/data';
import { listenAddresses, logTail, pidAlive, serverLog, type Engine, type EngineContext } from './engine';
import { serverAddress } from '../sandbox/launcher';
import { asCluster, clusterOwner, clusterUid, giveTo, run } from './commands';
import type { ClusterRow } from './store';

/** Encodes a command in RESP (the redis/valkey protocol). */
const encode = (args: string[]) =>
  `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;

/**
 * Sends commands over one connection and answers the raw reply lines (`+OK`, `$3`, `bar`,
 * `-ERR ...`): a minimal RESP client, enough for AUTH, PING, SET, GET and FLUSHALL.
 */
export function resp(host: string, port: number, commands: string[][], timeoutMs = 3000): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    let data = '';
    const replies = () => {
      // each command answers one simple line, or a bulk header plus its value line
      const lines = data.split('\r\n');
      const out: string[] = [];
      let i = 0;
      for (let n = 0; n < commands.length; n++) {
        if (i >= lines.length - 1) return null;
        const line = lines[i++]!;
        out.push(line);
        if (line.startsWith('$') && line !== '$-1') {
          if (i >= lines.length - 1) return null;
          out.push(lines[i++]!);
        }
      }
      return out;
    };
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer from ${host}:${port}`));
    }, timeoutMs);
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.on('data', (b) => {
      data += b.toString('utf8');
      const out = replies();
      if (out) {
        clearTimeout(timer);
        socket.end();
        resolve(out);
      }
    });
    socket.write(commands.map(encode).join(''));
  });
}

/**
 * valkey (or redis) servers: `valkey-server <dir>/valkey.conf`, daemonized with a pid file,
 * append-only persistence in `<dir>/data`, the generated password as `requirepass` (user
 * `default`), loopback unless publicly accessible.
 */
export class ValkeyEngine implements Engine {
  constructor(
    private readonly ctx: EngineContext,
    private readonly bin: string,
  ) {}

  private conf(id: string) {
    return path.join(this.ctx.dir(id), 'valkey.conf');
  }

  private async password(id: string): Promise<string> {
    const m = /^requirepass "(.*)"$/m.exec(await readFile(this.conf(id), 'utf8'));
    return m ? m[1]! : '';
  }

  async init(row: ClusterRow, spec: ClusterSpec): Promise<void> {
    if (existsSync(this.conf(row.id))) return;
    const dir = this.ctx.dir(row.id);
    await mkdir(path.join(dir, 'data'), { recursive: true, mode: 0o700 });
    await this.write(row, spec.password ?? '');
    await giveTo(this.ctx.iso, dir, clusterUid(row.id));
    await chmod(dir, 0o700);
  }

  private async write(row: ClusterRow, password: string): Promise<void> {
    const dir = this.ctx.dir(row.id);
    const lines = [
      `port ${row.port}`,
      `bind ${listenAddresses(row.id, row.public_access, this.ctx.host, this.ctx.iso.network?.gateway).join(' ')}`,
      'protected-mode no',
      `requirepass "${password}"`,
      `dir ${path.join(dir, 'data')}`,
      'appendonly yes',
      'daemonize yes',
      `pidfile ${path.join(dir, 'valkey.pid')}`,
      `logfile ${serverLog(this.ctx, row.id)}`,
    ];
    await writeFile(this.conf(row.id), `${lines.join('\n')}\n`, { mode: 0o600 });
    await giveTo(this.ctx.iso, this.conf(row.id), clusterUid(row.id));
  }

  async configure(row: ClusterRow): Promise<void> {
    await this.write(row, await this.password(row.id));
  }

  async setup(): Promise<void> {
    // the password is in the configuration: nothing to create
  }

  alive(row: ClusterRow): boolean {
    return pidAlive(path.join(this.ctx.dir(row.id), 'valkey.pid')) !== null;
  }

  async start(row: ClusterRow): Promise<void> {
    if (this.alive(row)) return;
    await run(asCluster(this.ctx.iso, row, [this.bin, this.conf(row.id)]));
    for (let i = 0; i < 100; i++) {
      if (await this.check(row)) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`valkey ${row.id} did not start: ${logTail(serverLog(this.ctx, row.id))}`);
  }

  async stop(row: ClusterRow): Promise<void> {
    const pid = pidAlive(path.join(this.ctx.dir(row.id), 'valkey.pid'));
    if (!pid) return;
    process.kill(pid, 'SIGTERM');
    for (let i = 0; i < 100 && this.alive(row); i++) await new Promise((r) => setTimeout(r, 100));
  }

  async check(row: ClusterRow): Promise<boolean> {
    try {
      const out = await resp(serverAddress(clusterOwner(row.id), row.port).host, row.port, [
        ['AUTH', 'default', await this.password(row.id)],
        ['PING'],
      ]);
      return out[0] === '+OK' && out[1] === '+PONG';
    } catch {
      return false;
    }
  }

  async reset(row: ClusterRow): Promise<void> {
    const out = await resp(serverAddress(clusterOwner(row.id), row.port).host, row.port, [
      ['AUTH', 'default', await this.password(row.id)],
      ['FLUSHALL'],
    ]);
    if (out[1] !== '+OK') throw new Error(`FLUSHALL failed: ${out[1]}`);
  }
}
