/** Every workflow type the worker runs. */
export { projectDelete } from './project-delete';
export { appLifecycle } from './app';
export { appSendCommand } from './app-command';
export { appDeploy } from './app-deploy';
export { appClone } from './app-clone';
export { appDelete } from './app-delete';
