/**
 * The format of a deployment's build log (`LocalLayout.buildLogFile`): one line per output
 * line, `<ISO timestamp> <text>`. The builder writes it; GET /apps/{uuid}/deployments/{d}/logs
 * reads it back as `{ timestamp, message }` entries.
 */
export interface BuildLogEntry {
  timestamp: string;
  message: string;
}

/** One log line (newline included); line breaks inside `text` are flattened. */
export function buildLogLine(text: string, at: Date = new Date()): string {
  return `${at.toISOString()} ${text.replace(/\r?\n|\r/g, ' ')}\n`;
}

const LINE = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z) ?(.*)$/;

/** The entries of a build log; a line without a timestamp continues under the previous one's. */
export function parseBuildLog(content: string): BuildLogEntry[] {
  const entries: BuildLogEntry[] = [];
  for (const line of content.split('\n')) {
    if (line === '') continue;
    const m = LINE.exec(line);
    if (m) entries.push({ timestamp: m[1]!, message: m[2]! });
    else entries.push({ timestamp: entries.at(-1)?.timestamp ?? new Date(0).toISOString(), message: line });
  }
  return entries;
}
