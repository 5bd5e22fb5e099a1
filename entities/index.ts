import { ApiToken } from './api-token';
import { App, AppDeployment, AppPort, AppSecretFile, AppTlsCertificate, AppVariable, ResourceEndpoint } from './app';
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

export { ApiToken, App, ComputeResource, ResourceAllocation, PlatformEvent, IdempotencyKey, Member, Operation, Project,
  ProjectResource, ProjectRestriction, Region, RegistryCredential, Role, User, Workspace };
export { AppDeployment, AppPort, AppSecretFile, AppTlsCertificate, AppVariable, ResourceEndpoint };

/** Every entity class; register new ones here. */
export const entities = [ApiToken, App, ComputeResource, ResourceAllocation, PlatformEvent, IdempotencyKey, Member,
  Operation, Project, ProjectResource, ProjectRestriction, Region, RegistryCredential, Role, User, Workspace,
  AppDeployment, AppPort, AppSecretFile, AppTlsCertificate, AppVariable, ResourceEndpoint];
