import { Addon } from './addon';
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
import { Workspace } from './workspace';

export { Addon, ApiToken, App, ComputeResource, ResourceAllocation, PlatformEvent, IdempotencyKey, Member, Operation, Project,
  ProjectResource, ProjectRestriction, Region, RegistryCredential, Role, User, Workspace };

/** Every entity class; register new ones here. */
export const entities = [Addon, ApiToken, App, ComputeResource, ResourceAllocation, PlatformEvent, IdempotencyKey, Member,
  Operation, Project, ProjectResource, ProjectRestriction, Region, RegistryCredential, Role, User, Workspace];
