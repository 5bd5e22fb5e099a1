import { projectScenarios } from './projects';
import type { ReplayScenario } from './types';
import { vpcScenarios } from './vpc';

/** Every replay scenario; each area adds its list here. */
export const scenarios: ReplayScenario[] = [...projectScenarios, ...vpcScenarios];
