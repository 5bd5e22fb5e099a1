import path from 'node:path';

/** Where the global setup leaves what it started, for every test file to find. */
export const TEST_ENV = {
  pgAdminUrl: 'BERTH_TEST_PG_ADMIN_URL',
  templateDb: 'BERTH_TEST_TEMPLATE_DB',
  temporalAddress: 'BERTH_TEST_TEMPORAL_ADDRESS',
  testServer: 'BERTH_TEST_TEMPORAL_TEST_SERVER',
  cli: 'BERTH_TEST_TEMPORAL_CLI',
  workflowBundle: 'BERTH_TEST_WORKFLOW_BUNDLE',
  auditTally: 'BERTH_TEST_AUDIT_TALLY',
} as const;

export const ROOT = path.resolve(__dirname, '..', '..');
export const TEST_DATA_DIR = path.join(ROOT, '.berth', 'test');
/** Tools (Temporal binaries) are shared with `npm start`. */
export const TOOLS_DATA_DIR = path.join(ROOT, '.berth');

export function testEnv(name: keyof typeof TEST_ENV): string {
  const value = process.env[TEST_ENV[name]];
  if (!value)
    throw new Error(
      `${TEST_ENV[name]} is not set: run the tests with \`npm test\` (jest's global setup starts the stack)`,
    );
  return value;
}
