import { ApiToken } from './api-token';
import { App } from './app';
import { ComputeResource, ResourceAllocation } from './compute-resource';
import { PlatformEvent } from './event';
import { IdempotencyKey } from './idempotency-key';
import { Member } from './member';
import { Operation } from './operation';
import { Project, ProjectResource, ProjectRestriction } from './project';
import { Region } from './region';
import { RegistryCredential } from './registry-credential';
import { Role } from './role';
import { User } from './user';
import { Bucket } from './bucket';
import { StaticSite, StaticSiteDeployment } from './static-site';
import { Stack, StackDeployment, StackItem } from './stack';
import { Workspace } from './workspace';

export { ApiToken, App, ComputeResource, ResourceAllocation, PlatformEvent, IdempotencyKey, Member, Operation, Project,
  ProjectResource, ProjectRestriction, Region, RegistryCredential, Role, User, Workspace };
export { Bucket, StaticSite, StaticSiteDeployment, Stack, StackDeployment, StackItem };

/** Every entity class; register new ones here. */
export const entities = [ApiToken, App, ComputeResource, ResourceAllocation, PlatformEvent, IdempotencyKey, Member,
  Operation, Project, ProjectResource, ProjectRestriction, Region, RegistryCredential, Role, User, Workspace,
  Bucket, StaticSite, StaticSiteDeployment, Stack, StackDeployment, StackItem];
