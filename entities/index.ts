import { getMetadataArgsStorage } from 'typeorm';
import * as addon from './addon';
import * as apiToken from './api-token';
import * as app from './app';
import * as auditEvent from './audit-event';
import * as bucket from './bucket';
import * as certificate from './certificate';
import * as computeResource from './compute-resource';
import * as domain from './domain';
import * as event from './event';
import * as idempotencyKey from './idempotency-key';
import * as localApp from './local-app';
import * as member from './member';
import * as operation from './operation';
import * as preview from './preview';
import * as project from './project';
import * as region from './region';
import * as registryCredential from './registry-credential';
import * as role from './role';
import * as stack from './stack';
import * as staticSite from './static-site';
import * as user from './user';
import * as vpc from './vpc';
import * as webhook from './webhook';
import * as webhookDelivery from './webhook-delivery';
import * as workspace from './workspace';

/** The modules that declare entities; a new entity file is added here, and each `@Entity` class it exports is registered. */
const modules: object[] = [
  addon,
  apiToken,
  app,
  auditEvent,
  bucket,
  certificate,
  computeResource,
  domain,
  event,
  idempotencyKey,
  localApp,
  member,
  operation,
  preview,
  project,
  region,
  registryCredential,
  role,
  stack,
  staticSite,
  user,
  vpc,
  webhook,
  webhookDelivery,
  workspace,
];

const tables = new Set<unknown>(getMetadataArgsStorage().tables.map((t) => t.target));

/** Every entity class: the `@Entity` classes the modules above export. */
export const entities = modules.flatMap((m) => Object.values(m)).filter((v): v is Function => tables.has(v));
