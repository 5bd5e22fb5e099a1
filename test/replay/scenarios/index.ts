import { projectScenarios } from './projects';
import type { ReplayScenario } from './types';
import { webhookScenarios } from './webhooks';

/** Every replay scenario; each area adds its list here. */
export const scenarios: ReplayScenario[] = [...projectScenarios,
  ...webhookScenarios];
