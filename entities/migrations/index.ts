import { Foundation1732200000000 } from './1732200000000-foundation';
import { RegistryCredentials1732200000001 } from './1732200000001-registry-credentials';
import { Webhooks1732300000000 } from './1732300000000-webhooks';

/** Every migration, in order. Add new ones at the end. */
export const migrations = [Foundation1732200000000, RegistryCredentials1732200000001,
  Webhooks1732300000000];
