import { dataScenarios } from './data';
import { projectScenarios } from './projects';
import type { ReplayScenario } from './types';

/** Every replay scenario; each area adds its list here. */
export const scenarios: ReplayScenario[] = [...projectScenarios, ...dataScenarios];
