/** Every workflow type the worker runs. */
export { projectDelete } from './project-delete';
export { domainVerify } from './domain-verify';
export { previewEnvironment } from './preview-environment';
