// Architecture boundaries (DESIGN.md), enforced on every `npm test`.
const tseslint = require('typescript-eslint');

const NODE_BUILTINS = require('node:module').builtinModules.filter((m) => !m.startsWith('_'));
const nodeBuiltins = [...NODE_BUILTINS, ...NODE_BUILTINS.map((m) => `node:${m}`)];

const restrict = (patterns, paths = []) => ({
  'no-restricted-imports': ['error', { paths, patterns }],
});

/**
 * A pattern for relative imports of top-level folders at any depth: `../x`, `../../x/y`,
 * `../../../x` (one rule per layer, whatever the importing file's depth).
 */
const layer = (folders, message) => ({ regex: `^(\\./)?(\\.\\./)+(${folders.join('|')})(/|$)`, message });
const WORKER_MESSAGE =
  'worker/ is the worker process: only bin/ (and test/, bench/, chaos/) import it; shared modules live in platform/';

module.exports = tseslint.config(
  { ignores: ['node_modules/**', '.berth/**', 'dist/**', 'coverage/**', 'test/replay/histories/**'] },
  {
    files: ['**/*.ts'],
    languageOptions: { parser: tseslint.parser, parserOptions: { ecmaVersion: 2022, sourceType: 'module' } },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {},
  },
  {
    // Workflows: deterministic code only. @temporalio/workflow, domain/, and types of activities/ and platform/.
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({
            name,
            message: 'workflows must not use Node built-ins (non-deterministic I/O)',
          })),
          patterns: [
            {
              group: [
                'typeorm',
                'pg',
                'koa',
                '@koa/*',
                'undici',
                'nodemailer',
                'pino',
                'yup',
                '@temporalio/client',
                '@temporalio/worker',
                '@temporalio/activity',
              ],
              message: 'workflows run in the deterministic sandbox: no I/O libraries',
            },
            layer(
              ['api', 'entities', 'worker', 'bin'],
              'workflows import only domain/ and (as types) activities/ and platform/',
            ),
            {
              ...layer(['activities', 'platform'], 'use `import type` for activities/ and platform/'),
              allowTypeImports: true,
            },
          ],
        },
      ],
      'no-restricted-globals': ['error', 'setTimeout', 'setInterval', 'process'],
    },
  },
  {
    // Domain: pure rules, no project imports outside domain/.
    files: ['domain/**/*.ts'],
    rules: restrict([
      layer(
        ['api', 'entities', 'workflows', 'activities', 'worker', 'bin', 'platform'],
        'domain/ is pure: it imports only domain/',
      ),
      { group: ['typeorm', 'pg', 'koa', 'undici'], message: 'domain/ is pure: no I/O libraries' },
    ]),
  },
  {
    files: ['entities/**/*.ts'],
    rules: restrict([
      layer(['api', 'workflows', 'activities', 'worker', 'bin', 'platform'], 'entities/ imports domain/ at most'),
    ]),
  },
  {
    // platform/: the leaf that api/, activities/ and worker/ share (config, logger, outbox, resolver, driver interfaces).
    // One exception, types only: workflow-starts.ts types the outbox's starts from the workflow functions
    // (`import type`, erased: no workflow code is loaded).
    files: ['platform/**/*.ts'],
    rules: restrict([
      layer(
        ['api', 'activities', 'worker', 'bin'],
        'platform/ is a leaf: it imports domain/, entities/ and libraries only',
      ),
      {
        ...layer(['workflows'], 'platform/ is a leaf: it takes only types from workflows/ (`import type`)'),
        allowTypeImports: true,
      },
    ]),
  },
  {
    files: ['activities/**/*.ts'],
    rules: restrict([layer(['api'], 'activities/ never imports api/'), layer(['worker'], WORKER_MESSAGE)]),
  },
  {
    files: ['api/**/*.ts'],
    rules: restrict([
      layer(
        ['activities'],
        'api/ never imports activities/ (not even types): it starts workflows and reads/writes entities; shared types live in platform/ or domain/',
      ),
      layer(['worker', 'bin'], WORKER_MESSAGE),
    ]),
  },
  {
    // Only bin/ and platform/config.ts (and tests) read process.env.
    files: [
      'api/**/*.ts',
      'domain/**/*.ts',
      'entities/**/*.ts',
      'activities/**/*.ts',
      'workflows/**/*.ts',
      'platform/**/*.ts',
    ],
    ignores: ['platform/config.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'configuration comes from platform/config.ts, passed in' },
      ],
    },
  },
);
