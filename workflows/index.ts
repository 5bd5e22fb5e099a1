/** Every workflow type the worker runs. */
export { projectDelete } from './project-delete';
export { bucketProvision } from './bucket-provision';
export { storageCleanup } from './storage-cleanup';
export { stackAnalyze } from './stack-analyze';
export { stackDeploy } from './stack-deploy';
export { stackCleanup } from './stack-cleanup';
export { staticSiteProvision } from './static-site-provision';
export { staticSiteDeploy } from './static-site-deploy';
