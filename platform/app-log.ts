import { open, stat } from 'node:fs/promises';

/**
 * The app log of the local driver (`layout.appLogFile(appUuid)`): one line per line an
 * app's replica wrote, `<ISO timestamp> <source> <text>`, where source names the replica
 * (`web.1`) or `berth` for the supervisor's own lines. The writer (the apps driver) and
 * the reader (GET /apps/{uuid}/logs) share this file's format.
 */
export interface AppLogLine {
  timestamp: string;
  source: string;
  message: string;
}

export const BERTH_SOURCE = 'berth';

/** One line of the log, newline included (control characters of the text are kept, newlines are not). */
export function formatLogLine(source: string, message: string, at: Date = new Date()): string {
  return `${at.toISOString()} ${source} ${message.replace(/[\r\n]+/g, ' ')}\n`;
}

const LINE = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (\S+) ?(.*)$/;

export function parseLogLine(line: string): AppLogLine | null {
  const m = LINE.exec(line);
  return m ? { timestamp: m[1]!, source: m[2]!, message: m[3]! } : null;
}

const CHUNK = 64 * 1024;

/**
 * The last `tail` lines written at or after `since` (oldest first), read backwards from the
 * end of the file so a long log costs only what is returned. No file: no lines.
 */
export async function readAppLog(
  file: string,
  options: { tail: number; since?: Date | null },
): Promise<{ lines: AppLogLine[]; size: number }> {
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { lines: [], size: 0 };
    throw err;
  }
  try {
    const size = (await handle.stat()).size;
    const since = options.since ? options.since.toISOString() : null;
    const found: AppLogLine[] = [];
    let position = size;
    let rest = Buffer.alloc(0);
    let done = false;
    while (!done && position > 0 && found.length < options.tail) {
      const length = Math.min(CHUNK, position);
      position -= length;
      const buf = Buffer.alloc(length);
      await handle.read(buf, 0, length, position);
      let data = Buffer.concat([buf, rest]);
      // a line is whole once the newline before it was read (or the file's start)
      const cut = position === 0 ? -1 : data.indexOf(10);
      if (position > 0 && cut === -1) {
        rest = data;
        continue;
      }
      rest = position === 0 ? Buffer.alloc(0) : data.subarray(0, cut + 1);
      data = data.subarray(cut + 1);
      const texts = data
        .toString('utf8')
        .split('\n')
        .filter((l) => l.length > 0);
      for (let i = texts.length - 1; i >= 0 && found.length < options.tail; i--) {
        const parsed = parseLogLine(texts[i]!);
        if (!parsed) continue;
        if (since && parsed.timestamp < since) {
          done = true;
          break;
        }
        found.push(parsed);
      }
    }
    return { lines: found.reverse(), size };
  } finally {
    await handle.close();
  }
}

/**
 * Follows the log from byte `offset`: calls `onLine` for each whole line appended later
 * (polling the file's size; a truncated or rotated file is read again from its start).
 * Returns the function that stops following.
 */
export function followAppLog(
  file: string,
  offset: number,
  onLine: (line: AppLogLine) => void,
  intervalMs = 250,
): () => void {
  let position = offset;
  let partial = '';
  let stopped = false;
  let busy = false;
  const tick = async () => {
    if (busy || stopped) return;
    busy = true;
    try {
      const size = await stat(file).then(
        (s) => s.size,
        () => 0,
      );
      if (size < position) {
        position = 0;
        partial = '';
      }
      if (size > position) {
        const handle = await open(file, 'r');
        try {
          const buf = Buffer.alloc(size - position);
          await handle.read(buf, 0, buf.length, position);
          position = size;
          const texts = (partial + buf.toString('utf8')).split('\n');
          partial = texts.pop() ?? '';
          for (const t of texts) {
            const parsed = parseLogLine(t);
            if (parsed && !stopped) onLine(parsed);
          }
        } finally {
          await handle.close();
        }
      }
    } catch {
      // the file went away between stat and open: read again at the next tick
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void tick(), intervalMs);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
