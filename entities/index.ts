import { Addon, ServiceMount } from './addon';
import { ApiToken } from './api-token';
import { AuditEvent } from './audit-event';
import { App, AppDeployment, AppPort, AppSecretFile, AppTlsCertificate, AppVariable, ResourceEndpoint } from './app';
import { ComputeResource, ResourceAllocation } from './compute-resource';
import { CustomDomain } from './domain';
import { PlatformEvent } from './event';
import { PreviewConfig, PreviewEnvironment } from './preview';
import { IdempotencyKey } from './idempotency-key';
import { LocalApp, LocalAppBuild } from './local-app';
import { Member } from './member';
import { Operation } from './operation';
import { Project, ProjectResource, ProjectRestriction } from './project';
import { Region } from './region';
import { RegistryCredential } from './registry-credential';
import { Role } from './role';
import { User } from './user';
import { Webhook } from './webhook';
import { WebhookDelivery } from './webhook-delivery';
import { Bucket } from './bucket';
import { StaticSite, StaticSiteDeployment } from './static-site';
import { Stack, StackDeployment, StackItem } from './stack';
import { Workspace } from './workspace';
import {
  BillableItem,
  RegionPublicIpv4,
  Vpc,
  VpcAttachment,
  VpcPeerRoute,
  VpcSiteConnection,
  VpcSubnet,
  VpcVpnGateway,
  VpcVpnUser,
} from './vpc';

export {
  Addon,
  ApiToken,
  App,
  AuditEvent,
  ComputeResource,
  ResourceAllocation,
  PlatformEvent,
  IdempotencyKey,
  Member,
  Operation,
  Project,
  ProjectResource,
  ProjectRestriction,
  Region,
  RegistryCredential,
  Role,
  User,
  Workspace,
};
export {
  BillableItem,
  RegionPublicIpv4,
  Vpc,
  VpcAttachment,
  VpcPeerRoute,
  VpcSiteConnection,
  VpcSubnet,
  VpcVpnGateway,
  VpcVpnUser,
};
export { Webhook, WebhookDelivery };
export { Bucket, StaticSite, StaticSiteDeployment, Stack, StackDeployment, StackItem };
export { CustomDomain, PreviewConfig, PreviewEnvironment, ServiceMount };
export { AppDeployment, AppPort, AppSecretFile, AppTlsCertificate, AppVariable, ResourceEndpoint };
export { LocalApp, LocalAppBuild };

/** Every entity class; register new ones here. */
export const entities = [
  ApiToken,
  App,
  AuditEvent,
  ComputeResource,
  ResourceAllocation,
  PlatformEvent,
  IdempotencyKey,
  Member,
  Operation,
  Project,
  ProjectResource,
  ProjectRestriction,
  Region,
  RegistryCredential,
  Role,
  User,
  Workspace,
  BillableItem,
  RegionPublicIpv4,
  Vpc,
  VpcAttachment,
  VpcPeerRoute,
  VpcSiteConnection,
  VpcSubnet,
  VpcVpnGateway,
  VpcVpnUser,
  Webhook,
  WebhookDelivery,
  Bucket,
  StaticSite,
  StaticSiteDeployment,
  Stack,
  StackDeployment,
  StackItem,
  CustomDomain,
  PreviewConfig,
  PreviewEnvironment,
  Addon,
  ServiceMount,
  AppDeployment,
  AppPort,
  AppSecretFile,
  AppTlsCertificate,
  AppVariable,
  ResourceEndpoint,
  LocalApp,
  LocalAppBuild,
];
