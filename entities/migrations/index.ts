import { Foundation1732200000000 } from './1732200000000-foundation';
import { RegistryCredentials1732200000001 } from './1732200000001-registry-credentials';
import { Audit1732900000000 } from './1732900000000-audit';

/** Every migration, in order. Add new ones at the end. */
export const migrations = [
  Foundation1732200000000,
  RegistryCredentials1732200000001,
  Audit1732900000000,
];
