import { Foundation1732200000000 } from './1732200000000-foundation';
import { RegistryCredentials1732200000001 } from './1732200000001-registry-credentials';
import { Apps1732400000000 } from './1732400000000-apps';

/** Every migration, in order. Add new ones at the end. */
export const migrations = [Foundation1732200000000, RegistryCredentials1732200000001,
  Apps1732400000000];
