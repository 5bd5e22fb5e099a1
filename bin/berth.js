#!/usr/bin/env node
// Runs the TypeScript CLI through tsx, so `npx berth …` works without a build step.
require('tsx/cjs');
require('./berth.ts');
