import { createWriteStream, fstatSync, mkdirSync, openSync, renameSync, type WriteStream } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { BERTH_SOURCE, formatLogLine } from '../../../../platform/app-log';
import type { LocalLayout } from '../../../../platform/local-layout';

/**
 * Appends to the apps' log files (format: platform/app-log.ts): each replica's stdout and
 * stderr line by line, and the supervisor's own lines under the source `berth`. The file
 * lies under the private root, out of the apps' reach.
 */
/** Past this size an app's log starts over (the previous part kept as `<file>.1`). */
export const MAX_LOG_BYTES = 32 * 2 ** 20;

export class AppLogWriter {
  private readonly streams = new Map<string, WriteStream>();
  private readonly sizes = new Map<string, number>();
  /** Streams of rotated parts still flushing. */
  private readonly ending = new Set<Promise<void>>();

  constructor(private readonly layout: LocalLayout) {}

  private stream(appUuid: string): WriteStream {
    let s = this.streams.get(appUuid);
    if (!s) {
      const file = this.layout.appLogFile(appUuid);
      mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
      // opened now, so a rotation's rename moves the very file this stream writes
      const fd = openSync(file, 'a', 0o600);
      const size = fstatSync(fd).size;
      s = createWriteStream('', { fd });
      s.on('error', () => {
        /* a deleted app's folder: its lines are dropped */
      });
      this.streams.set(appUuid, s);
      this.sizes.set(appUuid, size);
    }
    return s;
  }

  write(appUuid: string, source: string, message: string): void {
    const line = formatLogLine(source, message);
    const stream = this.stream(appUuid);
    stream.write(line);
    const size = (this.sizes.get(appUuid) ?? 0) + Buffer.byteLength(line);
    this.sizes.set(appUuid, size);
    if (size > MAX_LOG_BYTES) this.rotate(appUuid, stream);
  }

  private rotate(appUuid: string, stream: WriteStream): void {
    const file = this.layout.appLogFile(appUuid);
    this.streams.delete(appUuid);
    this.sizes.delete(appUuid);
    try {
      // the open stream keeps its file: what it still buffers lands in the `.1` part
      renameSync(file, `${file}.1`);
    } catch {
      // gone (app deleted)
    }
    const ended = new Promise<void>((resolve) => stream.end(() => resolve()));
    this.ending.add(ended);
    void ended.then(() => this.ending.delete(ended));
  }

  berth(appUuid: string, message: string): void {
    this.write(appUuid, BERTH_SOURCE, message);
  }

  /** Copies a replica's output, one log line per line; `onLine` sees each (the last stderr line makes failure reasons). */
  pipe(appUuid: string, source: string, output: Readable, onLine?: (line: string) => void): void {
    let partial = '';
    output.setEncoding('utf8');
    output.on('data', (chunk: string) => {
      const texts = (partial + chunk).split('\n');
      partial = texts.pop() ?? '';
      if (partial.length > 16 * 1024) {
        texts.push(partial);
        partial = '';
      }
      for (const t of texts) {
        this.write(appUuid, source, t);
        if (t.trim()) onLine?.(t);
      }
    });
    output.on('end', () => {
      if (partial) {
        this.write(appUuid, source, partial);
        onLine?.(partial);
      }
    });
  }

  /** Closes the app's file (deleted app); a later line opens it again. */
  async close(appUuid?: string): Promise<void> {
    const entries = appUuid ? [[appUuid, this.streams.get(appUuid)] as const] : [...this.streams.entries()];
    await Promise.all([...this.ending]);
    await Promise.all(
      entries.map(([uuid, s]) => {
        this.streams.delete(uuid);
        return s ? new Promise<void>((resolve) => s.end(() => resolve())) : Promise.resolve();
      }),
    );
  }
}
