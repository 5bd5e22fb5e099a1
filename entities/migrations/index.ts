import { Foundation1732200000000 } from './1732200000000-foundation';
import { RegistryCredentials1732200000001 } from './1732200000001-registry-credentials';
import { Webhooks1732300000000 } from './1732300000000-webhooks';
import { Apps1732400000000 } from './1732400000000-apps';
import { Vpc1732500000000 } from './1732500000000-vpc';
import { Storage1732600000000 } from './1732600000000-storage';
import { DataServices1732700000000 } from './1732700000000-data-services';
import { Domains1732800000000 } from './1732800000000-domains';
import { Previews1732800000001 } from './1732800000001-previews';
import { Audit1732900000000 } from './1732900000000-audit';
import { ProjectVariables1732950000000 } from './1732950000000-project-variables';
import { VariableSecretFlag1732957000000 } from './1732957000000-variable-secret-flag';
import { AuditApp1732960000000 } from './1732960000000-audit-app';
import { OperationSignal1732965000000 } from './1732965000000-operation-signal';
import { DropSimPreviews1732970000000 } from './1732970000000-drop-sim-previews';
import { LocalData1733000000000 } from './1733000000000-local-data';
import { LocalApps1733100000000 } from './1733100000000-local-apps';
import { LocalStackAddons1733250000000 } from './1733250000000-local-stack-addons';
import { AuthNotify1733300000000 } from './1733300000000-auth-notify';
import { ProjectUuidColumns1733400000000 } from './1733400000000-project-uuid-columns';
import { LocalAppRunSpecs1733500000000 } from './1733500000000-local-app-run-specs';
import { Certificates1733600000000 } from './1733600000000-certificates';
import { LocalVpcRestarts1733700000000 } from './1733700000000-local-vpc-restarts';
import { VpnGatewayPorts1733800000000 } from './1733800000000-vpn-gateway-ports';
import { LocalStackVolumes1733900000000 } from './1733900000000-local-stack-volumes';

/** Every migration, in timestamp order (one entry per line). */
export const migrations = [
  Foundation1732200000000,
  RegistryCredentials1732200000001,
  Webhooks1732300000000,
  Apps1732400000000,
  Vpc1732500000000,
  Storage1732600000000,
  DataServices1732700000000,
  Domains1732800000000,
  Previews1732800000001,
  Audit1732900000000,
  ProjectVariables1732950000000,
  VariableSecretFlag1732957000000,
  AuditApp1732960000000,
  OperationSignal1732965000000,
  DropSimPreviews1732970000000,
  LocalData1733000000000,
  LocalApps1733100000000,
  LocalStackAddons1733250000000,
  AuthNotify1733300000000,
  ProjectUuidColumns1733400000000,
  LocalAppRunSpecs1733500000000,
  Certificates1733600000000,
  LocalVpcRestarts1733700000000,
  VpnGatewayPorts1733800000000,
  LocalStackVolumes1733900000000,
];
