// Architecture boundaries (DESIGN.md), enforced on every `npm test`.
const tseslint = require('typescript-eslint');

const NODE_BUILTINS = require('node:module').builtinModules.filter((m) => !m.startsWith('_'));
const nodeBuiltins = [...NODE_BUILTINS, ...NODE_BUILTINS.map((m) => `node:${m}`)];

const restrict = (patterns, paths = []) => ({
  'no-restricted-imports': ['error', { paths, patterns }],
});

module.exports = tseslint.config(
  { ignores: ['node_modules/**', '.berth/**', 'dist/**', 'coverage/**', 'test/replay/histories/**'] },
  {
    files: ['**/*.ts'],
    languageOptions: { parser: tseslint.parser, parserOptions: { ecmaVersion: 2022, sourceType: 'module' } },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {},
  },
  {
    // Workflows: deterministic code only. @temporalio/workflow, domain/, and types of activities.
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: nodeBuiltins.map((name) => ({ name, message: 'workflows must not use Node built-ins (non-deterministic I/O)' })),
        patterns: [
          { group: ['typeorm', 'pg', 'koa', '@koa/*', 'undici', 'nodemailer', 'pino', 'yup', '@temporalio/client', '@temporalio/worker', '@temporalio/activity'], message: 'workflows run in the deterministic sandbox: no I/O libraries' },
          { group: ['../api/*', '../entities/*', '../worker/*', '../bin/*', '../api', '../entities', '../worker', '../bin'], message: 'workflows import only domain/ and (as types) activities/' },
          { group: ['../activities', '../activities/*'], allowTypeImports: true, message: 'use `import type` for activities' },
        ],
      }],
      'no-restricted-globals': ['error', 'setTimeout', 'setInterval', 'process'],
    },
  },
  {
    // Domain: pure rules, no project imports outside domain/.
    files: ['domain/**/*.ts'],
    rules: restrict([{ group: ['../api', '../api/*', '../entities', '../entities/*', '../workflows', '../workflows/*', '../activities', '../activities/*', '../worker', '../worker/*', '../bin', '../bin/*', 'typeorm', 'pg', 'koa', 'undici'], message: 'domain/ is pure: it imports only domain/' }]),
  },
  {
    files: ['entities/**/*.ts'],
    rules: restrict([{ group: ['../api', '../api/*', '../../api/*', '../workflows', '../workflows/*', '../activities', '../activities/*', '../../activities/*', '../worker', '../worker/*', '../bin', '../bin/*'], message: 'entities/ imports domain/ at most' }]),
  },
  {
    files: ['activities/**/*.ts'],
    rules: restrict([{ group: ['../api', '../api/*', '../../api/*', '../../../api/*'], message: 'activities/ never imports api/' }]),
  },
  {
    files: ['api/**/*.ts'],
    rules: restrict([{ group: ['../activities', '../activities/*', '../../activities/*', '../../activities'], allowTypeImports: true, message: 'api/ never imports activities/: it starts workflows and reads/writes entities' }]),
  },
  {
    // Only bin/ and worker/ (and tests) read process.env.
    files: ['api/**/*.ts', 'domain/**/*.ts', 'entities/**/*.ts', 'activities/**/*.ts', 'workflows/**/*.ts'],
    rules: {
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'configuration comes from worker/config.ts, passed in' }],
    },
  },
);
