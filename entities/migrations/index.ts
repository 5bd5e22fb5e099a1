import { Foundation1732200000000 } from './1732200000000-foundation';

/** Every migration, in order. Add new ones at the end. */
export const migrations = [Foundation1732200000000];
