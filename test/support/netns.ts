import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';

/**
 * Network namespaces a test makes (and removes): a pair joined by a veth link with private
 * test addresses, a TCP echo server inside one, and a probe that connects from the other.
 * Only root can make them.
 */

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();

export const namespaceExists = (name: string) => existsSync(`/run/netns/${name}`);

export interface LinkedNamespaces {
  a: string;
  b: string;
  addressA: string;
  addressB: string;
  /** Deletes both namespaces (and so the veth pair). */
  remove(): void;
}

/** Two namespaces with loopback up and a veth link `addressA/30` <-> `addressB/30`. */
export function linkedNamespaces(
  tag: string,
  addressA = '192.168.226.1',
  addressB = '192.168.226.2',
): LinkedNamespaces {
  const suffix = `${process.pid.toString(36)}${Math.floor(Math.random() * 36 ** 3).toString(36)}`;
  const a = `berth-${tag}-a-${suffix}`;
  const b = `berth-${tag}-b-${suffix}`;
  const vethA = `v${suffix}a`.slice(0, 15);
  const vethB = `v${suffix}b`.slice(0, 15);
  const remove = () => {
    for (const ns of [a, b]) if (namespaceExists(ns)) ip('netns', 'del', ns);
  };
  try {
    for (const ns of [a, b]) {
      ip('netns', 'add', ns);
      ip('-n', ns, 'link', 'set', 'lo', 'up');
    }
    ip('-n', a, 'link', 'add', vethA, 'type', 'veth', 'peer', 'name', vethB, 'netns', b);
    ip('-n', a, 'addr', 'add', `${addressA}/30`, 'dev', vethA);
    ip('-n', b, 'addr', 'add', `${addressB}/30`, 'dev', vethB);
    ip('-n', a, 'link', 'set', vethA, 'up');
    ip('-n', b, 'link', 'set', vethB, 'up');
  } catch (err) {
    remove();
    throw err;
  }
  return { a, b, addressA, addressB, remove };
}

/** A TCP echo server on `port` of every address of the namespace; resolves once it listens. */
export async function tcpEcho(namespace: string, port: number): Promise<{ close(): Promise<void> }> {
  const code = `require('net').createServer((s) => s.pipe(s)).listen(${port}, '0.0.0.0', () => console.log('listening'))`;
  const child: ChildProcess = spawn('ip', ['netns', 'exec', namespace, process.execPath, '-e', code], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once('data', () => resolve());
    child.once('exit', (c) => reject(new Error(`echo server in ${namespace} exited with ${c}`)));
  });
  return {
    async close() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/**
 * Whether a TCP connection from inside the namespace reaches host:port and a line makes
 * the round trip, within `timeoutMs`.
 */
export async function tcpRoundTrip(
  namespace: string,
  host: string,
  port: number,
  timeoutMs = 1500,
  /** The source address to send from (default: the kernel's choice). */
  from?: string,
): Promise<boolean> {
  const target = { port, host, ...(from ? { localAddress: from } : {}) };
  const code = `
    const s = require('net').connect(${JSON.stringify(target)});
    const t = setTimeout(() => process.exit(2), ${timeoutMs});
    s.on('error', () => process.exit(1));
    s.on('connect', () => s.write('through the tunnel\\n'));
    s.on('data', (d) => { if (String(d) === 'through the tunnel\\n') { clearTimeout(t); s.destroy(); process.exit(0); } });`;
  return new Promise((resolve) => {
    const child = spawn('ip', ['netns', 'exec', namespace, process.execPath, '-e', code], { stdio: 'ignore' });
    child.once('exit', (c) => resolve(c === 0));
  });
}

export interface HostLinkedNamespace {
  ns: string;
  /** The machine's end of the link (what the namespace reaches the machine by). */
  hostAddress: string;
  address: string;
  /** Deletes the namespace (and so the veth pair). */
  remove(): void;
}

/**
 * A namespace joined to the machine's own by a veth link `hostAddress/30` <-> `address/30`:
 * a client machine (a laptop, a remote site) that reaches services listening on the machine.
 */
export function hostLinkedNamespace(tag: string, hostAddress: string, address: string): HostLinkedNamespace {
  const suffix = `${process.pid.toString(36)}${Math.floor(Math.random() * 36 ** 3).toString(36)}`;
  const ns = `berth-${tag}-${suffix}`;
  const hostIf = `h${tag.slice(0, 4)}${suffix}`.slice(0, 15);
  const remove = () => {
    if (namespaceExists(ns)) ip('netns', 'del', ns);
  };
  try {
    ip('netns', 'add', ns);
    ip('-n', ns, 'link', 'set', 'lo', 'up');
    ip('link', 'add', hostIf, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns);
    ip('addr', 'add', `${hostAddress}/30`, 'dev', hostIf);
    ip('-n', ns, 'addr', 'add', `${address}/30`, 'dev', 'eth0');
    ip('link', 'set', hostIf, 'up');
    ip('-n', ns, 'link', 'set', 'eth0', 'up');
  } catch (err) {
    remove();
    throw err;
  }
  return { ns, hostAddress, address, remove };
}

/** Resolves `name` (A) at `server` from inside the namespace; the addresses, or null on no answer within `timeoutMs`. */
export async function resolveIn(
  namespace: string,
  server: string,
  name: string,
  timeoutMs = 1500,
): Promise<string[] | null> {
  const code = `
    const r = new (require('dns').promises.Resolver)({ timeout: ${timeoutMs}, tries: 1 });
    r.setServers([${JSON.stringify(server)}]);
    r.resolve4(${JSON.stringify(name)}).then((a) => { console.log(JSON.stringify(a)); process.exit(0); }, () => process.exit(1));`;
  return new Promise((resolve) => {
    const child = spawn('ip', ['netns', 'exec', namespace, process.execPath, '-e', code], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const out: Buffer[] = [];
    child.stdout!.on('data', (b: Buffer) => out.push(b));
    child.once('exit', (c) => resolve(c === 0 ? (JSON.parse(Buffer.concat(out).toString()) as string[]) : null));
  });
}
