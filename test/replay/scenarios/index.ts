import { appScenarios } from './apps';
import { projectScenarios } from './projects';
import type { ReplayScenario } from './types';

/** Every replay scenario; each area adds its list here. */
export const scenarios: ReplayScenario[] = [...projectScenarios, ...appScenarios];
