import { defineQuery } from '@temporalio/workflow';

/** Every Berth workflow answers `state` with where it is, for operators and tests. */
export const stateQuery = defineQuery<string>('state');
