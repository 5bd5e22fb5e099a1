import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import type { WorkerHandle } from '../../worker/main';
import { startStack, type TestStack } from '../support/stack';

/**
 * Issue 29: a client generated from the served document (openapi-typescript types, openapi-fetch
 * calls) compiles, and drives a project from create through show and update to delete, reaching
 * each call by the links of the create's answer (test/fixtures/openapi-client/project-lifecycle.ts).
 * Nothing generated is kept: it is all in a temporary directory.
 */

const run = promisify(execFile);
const ROOT = resolve(__dirname, '../..');

let stack: TestStack;
let ws: Workspace;
let worker: WorkerHandle;
let dir: string;

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds);
  worker = await stack.startWorker();
  dir = await mkdtemp(join(tmpdir(), 'berth-openapi-client-'));
  await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  await copyFile(join(ROOT, 'test/fixtures/openapi-client/project-lifecycle.ts'), join(dir, 'project-lifecycle.ts'));
  await run(
    process.execPath,
    [
      join(ROOT, 'node_modules/openapi-typescript/bin/cli.js'),
      `${stack.config.publicUrl}/api/v1/openapi.json`,
      '-o',
      'schema.ts',
    ],
    { cwd: dir },
  );
});
afterAll(async () => {
  await worker?.shutdown();
  await stack.close();
  await rm(dir, { recursive: true, force: true });
});

/** Type errors of the client and the generated types under the strict options of the project. */
function typeErrors(file: string): string[] {
  const program = ts.createProgram([file], {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2023.d.ts'],
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    esModuleInterop: true,
    skipLibCheck: true,
    types: ['node'],
  });
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const line = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line + 1 : 0;
    return `${d.file?.fileName.split('/').at(-1) ?? ''}:${line}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
  });
}

describe('a client generated from the OpenAPI document (issue 29)', () => {
  it('its types compile, and it creates, shows, updates and deletes a project following the links', async () => {
    const url = stack.config.publicUrl;
    expect(typeErrors(join(dir, 'project-lifecycle.ts'))).toEqual([]);

    const { stdout } = await run(join(ROOT, 'node_modules/.bin/tsx'), ['project-lifecycle.ts'], {
      cwd: dir,
      env: { ...process.env, BERTH_URL: url, BERTH_TOKEN: ws.ownerToken },
      timeout: 90_000,
    });
    const calls = JSON.parse(stdout.trim().split('\n').at(-1)!);
    const uuid = calls.created.body.uuid;
    expect(calls.created).toMatchObject({ status: 201, body: { name: 'generated-client', state: 'active' } });
    expect(calls.shown).toMatchObject({ status: 200, body: { uuid, name: 'generated-client' } });
    expect(calls.updated).toMatchObject({ status: 200, body: { uuid, name: 'generated-client-renamed' } });
    expect(calls.deleted).toMatchObject({ status: 202, body: { uuid, state: 'deleting' } });
    expect(calls.gone).toBe(404);
  });

  it('the compiler rejects a call the document does not declare (the check above can fail)', async () => {
    const misuse = join(dir, 'misuse.ts');
    await writeFile(
      misuse,
      `import createClient from 'openapi-fetch';
import type { paths } from './schema';
const client = createClient<paths>({ baseUrl: 'http://127.0.0.1' });
void client.PUT('/api/v1/projects/{uuid}', { params: { path: { uuid: 'x' } }, body: { name: 42 } });
void client.GET('/api/v1/projects/{project}');
`,
    );
    const errors = typeErrors(misuse);
    expect(errors.find((e) => e.startsWith('misuse.ts:4:'))).toMatch(/'number' is not assignable to type 'string'/);
    expect(errors.find((e) => e.startsWith('misuse.ts:5:'))).toBeDefined();
  });
});
