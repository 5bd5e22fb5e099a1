import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { LocalLayout } from '../../../../platform/local-layout';

/** A build's state, kept beside its log so it outlives a restart of Berth. */
export interface BuildRecord {
  deploymentUuid: string;
  appUuid: string;
  commitSha: string;
  status: 'building' | 'succeeded' | 'failed' | 'cancelled';
  releaseId: string | null;
  reason: string | null;
  startedAt: string;
  finishedAt: string | null;
  /** The build's current step (the leader of its process group) and when it started: a restart kills what is left of it. */
  pid?: number | null;
  pidStartTime?: string | null;
}

export function buildRecordFile(layout: LocalLayout, deploymentUuid: string): string {
  return path.join(layout.privateRoot, 'builds', `${deploymentUuid}.json`);
}

export function readBuildRecord(layout: LocalLayout, deploymentUuid: string): BuildRecord | null {
  try {
    return JSON.parse(readFileSync(buildRecordFile(layout, deploymentUuid), 'utf8')) as BuildRecord;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** Written whole (a temporary file renamed over the old one): a reader never sees half a record. */
export function writeBuildRecord(layout: LocalLayout, record: BuildRecord): void {
  const file = buildRecordFile(layout, record.deploymentUuid);
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(`${file}.tmp`, JSON.stringify(record, null, 2), { mode: 0o600 });
  renameSync(`${file}.tmp`, file);
}
