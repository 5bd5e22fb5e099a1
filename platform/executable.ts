import { accessSync, constants } from 'node:fs';

/** Whether `file` exists and this process may execute it (binary resolvers: Temporal, database servers). */
export function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
