import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startEmbeddedObjectStore, type EmbeddedObjectStore } from '../../platform/object-store';

/** A real S3-compatible server (the embedded object store) on loopback, data in a temp dir. */
export async function startObjectStore(): Promise<EmbeddedObjectStore & { dispose(): Promise<void> }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'berth-s3-'));
  const store = await startEmbeddedObjectStore({ directory: dir });
  return {
    ...store,
    async dispose() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
