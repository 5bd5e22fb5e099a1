import * as yup from 'yup';
import { ATTACHABLE_TYPES, GATEWAY_KINDS } from '../../domain/vpc';
import { arr, bool, int, obj, oneOf, str, uuid } from './common';

/** Request bodies of the VPC area. Range rules (RFC1918, sizes, overlaps) are 422s in the handlers. */
const NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const name = () => str().matches(NAME, '${path} must be lowercase letters, digits and hyphens (at most 63)');
const range = () => str().max(64);

export const createVpcBody = obj({
  region_id: int().min(1).max(2147483647).required(),
  name: name(),
  label: str().trim().min(1).max(100),
  cidr_v4: range(),
});

export const updateVpcBody = obj({
  label: str().trim().min(1).max(100),
  is_default: bool(),
});

export const createSubnetBody = obj({
  name: name(),
  family: oneOf(['dual', 'ipv4', 'ipv6'] as const),
  cidr_v4: range(),
  cidr_v6: range(),
  public: bool(),
});

export const createAttachmentBody = obj({
  subnet_uuid: uuid().required(),
  attachable_type: oneOf(ATTACHABLE_TYPES).required(),
  attachable_uuid: uuid().required(),
});

export const createPeerRouteBody = obj({
  cidr: range().required(),
  gateway_kind: oneOf(GATEWAY_KINDS).required(),
  description: str().max(500),
});

export const createGatewayBody = obj({
  kind: oneOf(GATEWAY_KINDS).required(),
  organization: str().min(1).max(200),
  client_id: str().min(1).max(500),
  client_secret: str().min(1).max(2000),
  auth_key: str().min(1).max(2000),
});

export const createVpnUserBody = obj({
  name: name().required(),
});

export const createSiteConnectionBody = obj({
  name: name().required(),
  gateway_uuid: uuid().required(),
  remote_address: str().max(15).required(),
  remote_cidrs: arr(range().required()).min(1).max(20).required(),
  tunnels: arr(
    obj({
      pre_shared_key: str()
        .min(8)
        .max(64)
        .matches(/^[A-Za-z0-9._]+$/, '${path} may hold letters, digits, dots and underscores')
        .required(),
    }),
  )
    .min(1)
    .max(2)
    .required(),
});

export type CreateVpcBody = yup.InferType<typeof createVpcBody>;
