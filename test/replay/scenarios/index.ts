import { projectScenarios } from './projects';
import { storageScenarios } from './storage';
import type { ReplayScenario } from './types';

/** Every replay scenario; each area adds its list here. */
export const scenarios: ReplayScenario[] = [...projectScenarios, ...storageScenarios];
