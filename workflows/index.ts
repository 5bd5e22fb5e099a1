/** Every workflow type the worker runs. */
export { projectDelete } from './project-delete';
export { vpcCreate } from './vpc-create';
export { vpcDelete } from './vpc-delete';
export { vpcAttach } from './vpc-attach';
export { vpcDetach } from './vpc-detach';
export { peerRoutesApply } from './peer-routes-apply';
export { vpnGatewayEnable } from './vpn-gateway-enable';
export { vpnGatewayDisable } from './vpn-gateway-disable';
export { vpnUserCreate } from './vpn-user-create';
export { vpnUserDelete } from './vpn-user-delete';
export { siteConnectionCreate } from './site-connection-create';
export { siteConnectionDelete } from './site-connection-delete';
export { webhookDelivery } from './webhook-delivery';
