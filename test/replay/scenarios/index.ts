import { domainScenarios } from './domains';
import { previewScenarios } from './previews';
import { dataScenarios } from './data';
import { appScenarios } from './apps';
import { projectScenarios } from './projects';
import { quotaAlertScenarios } from './quota-alerts';
import { storageScenarios } from './storage';
import type { ReplayScenario } from './types';
import { vpcScenarios } from './vpc';
import { webhookScenarios } from './webhooks';

/** Every replay scenario; each area adds its list here (one entry per line). */
export const scenarios: ReplayScenario[] = [
  ...projectScenarios,
  ...vpcScenarios,
  ...webhookScenarios,
  ...storageScenarios,
  ...domainScenarios,
  ...previewScenarios,
  ...dataScenarios,
  ...appScenarios,
  ...quotaAlertScenarios,
];
