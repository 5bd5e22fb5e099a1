/** Every workflow type the worker runs. */
export { projectDelete } from './project-delete';
export { addonProvision } from './addon-provision';
export { addonSync } from './addon-sync';
export { addonRestore } from './addon-restore';
export { addonDestroy } from './addon-destroy';
export { cronjobSync } from './cronjob-sync';
export { cronjobRun } from './cronjob-run';
export { addonHealthSweep } from './addon-health-sweep';
