/** Every workflow type the worker runs. */
export { projectDelete } from './project-delete';
export { webhookDelivery } from './webhook-delivery';
