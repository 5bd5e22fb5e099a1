import { Foundation1732200000000 } from './1732200000000-foundation';
import { RegistryCredentials1732200000001 } from './1732200000001-registry-credentials';
import { Domains1732800000000 } from './1732800000000-domains';
import { Previews1732800000001 } from './1732800000001-previews';

/** Every migration, in order. Add new ones at the end. */
export const migrations = [Foundation1732200000000, RegistryCredentials1732200000001,
  Domains1732800000000, Previews1732800000001];
