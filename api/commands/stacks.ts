import { randomUUID } from 'node:crypto';
import type { Manifest } from '../../domain/compose';
import { App } from '../../entities/app';
import { ResourceAllocation } from '../../entities/compute-resource';
import { insertReturning, updateReturning } from '../../entities/sql';
import { Stack, StackDeployment, StackItem } from '../../entities/stack';
import { assertProjectVisible, type Scope } from '../access';
import type { Caller } from '../context';
import { checkCredential } from '../git-source';
import { checkPlacement } from '../placement';
import { conflict, notFound, unprocessable } from '../problem';
import { snapshotOf, type Tx } from './audited-write';

/** What POST /stacks stores once the compose file was analyzed (repository already checked, variables complete). */
export interface CreateStackInput {
  name: string;
  label?: string;
  project_id?: string;
  resource_id: string;
  repository: string;
  branch: string;
  compose_path: string;
  credential_id?: string;
  auto_deploy_enabled?: boolean;
  manifest: Manifest;
  variables: Record<string, string>;
}

const nameTaken = (name: string) => conflict(`a stack named "${name}" already exists in this workspace`);

/**
 * What POST /stacks checks before the compose file is analyzed (a clone on a worker): the
 * placement, the credential and the name; the insert checks placement and name again.
 */
export async function checkNewStack(
  scope: Scope,
  input: Pick<CreateStackInput, 'name' | 'project_id' | 'resource_id' | 'credential_id'>,
): Promise<void> {
  const m = scope.deps.dataSource.manager;
  await checkPlacement(scope, m, { resourceId: input.resource_id, projectId: input.project_id });
  await checkCredential(m, scope.caller.workspaceUuid, input.credential_id);
  if (await m.existsBy(Stack, { workspace_uuid: scope.caller.workspaceUuid, name: input.name }))
    throw nameTaken(input.name);
}

/** Every value the compose file requires is given, and no value it does not use. */
export function checkVariables(manifest: Manifest, values: Record<string, string>): void {
  const missing = manifest.required_variables.filter((v) => values[v] === undefined);
  const known = new Set([...manifest.required_variables, ...manifest.optional_variables.map((v) => v.name)]);
  const unknown = Object.keys(values).filter((v) => !known.has(v));
  const errors = [
    ...missing.map((v) => ({ path: `body.variables.${v}`, message: 'required by the compose file' })),
    ...unknown.map((v) => ({ path: `body.variables.${v}`, message: 'not used by the compose file' })),
  ];
  if (errors.length > 0) {
    throw unprocessable(
      missing.length > 0
        ? `the compose file needs values for: ${missing.join(', ')}`
        : `variables not used by the compose file: ${unknown.join(', ')}`,
      errors,
    );
  }
}

/** The stack, locked for the change: in the caller's workspace and in a project open to the caller, else 404. */
async function stackForChange(tx: Tx, caller: Caller, uuid: string): Promise<Stack> {
  const stack = await tx.m.findOne(Stack, {
    where: { uuid, workspace_uuid: caller.workspaceUuid },
    lock: { mode: 'pessimistic_write' },
  });
  if (!stack) throw notFound('stack');
  await assertProjectVisible({ caller, deps: tx.deps }, stack.project_uuid, 'stack');
  return stack;
}

async function deploymentRunning(tx: Tx, stackUuid: string): Promise<boolean> {
  return tx.m
    .createQueryBuilder(StackDeployment, 'd')
    .where("d.stack_uuid = :stackUuid AND d.state NOT IN ('completed', 'failed')", { stackUuid })
    .getExists();
}

/** A deployment of the stack in state pending, its workflow enqueued; 409 while another one runs. */
async function startDeployment(tx: Tx, caller: Caller, stackUuid: string): Promise<void> {
  if (await deploymentRunning(tx, stackUuid)) throw conflict('a deployment of this stack is in progress');
  const deploymentUuid = randomUUID();
  await insertReturning(tx.m, StackDeployment, { uuid: deploymentUuid, stack_uuid: stackUuid });
  await tx.enqueue({
    operation: 'stack-deploy',
    workflow: 'stackDeploy',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: stackUuid,
    subId: deploymentUuid,
    args: [{ stackUuid, deploymentUuid }],
  });
}

/** Records the audit entry of a change to a stack (snapshots of the row before and after). */
async function audited(tx: Tx, action: string, before: Stack | null, after: Stack | null): Promise<void> {
  await tx.audit({
    action,
    resourceUuid: (after ?? before)!.uuid,
    before: snapshotOf(before),
    after: snapshotOf(after),
  });
}

/** POST /stacks: the stack (variables sealed as one document) and its first deployment. */
export async function createStack(tx: Tx, caller: Caller, input: CreateStackInput): Promise<Stack> {
  await checkPlacement({ caller, deps: tx.deps }, tx.m, { resourceId: input.resource_id, projectId: input.project_id });
  // ON CONFLICT DO NOTHING: the uuid is fresh, so the one conflict possible is the name.
  const stack = await insertReturning(
    tx.m,
    Stack,
    {
      uuid: randomUUID(),
      workspace_uuid: caller.workspaceUuid,
      project_uuid: input.project_id ?? null,
      resource_uuid: input.resource_id,
      name: input.name,
      label: input.label ?? input.name,
      compose_path: input.compose_path,
      repository: input.repository,
      branch: input.branch,
      auto_deploy_enabled: input.auto_deploy_enabled ?? false,
      credential_id: input.credential_id ?? null,
      manifest: input.manifest,
      variables_sealed: tx.deps.secretBox.seal(JSON.stringify(input.variables)),
    },
    { ignoreConflict: true },
  );
  if (!stack) throw nameTaken(input.name);
  await startDeployment(tx, caller, stack.uuid);
  await audited(tx, 'stack.create', null, stack);
  return stack;
}

/** PUT /stacks/{uuid}: the label, or the project (placement checked); the codename is fixed. */
export async function updateStack(
  tx: Tx,
  caller: Caller,
  input: { uuid: string; label?: string; project_id?: string | null },
): Promise<Stack> {
  const stack = await stackForChange(tx, caller, input.uuid);
  if (input.project_id !== undefined)
    await checkPlacement({ caller, deps: tx.deps }, tx.m, {
      resourceId: stack.resource_uuid,
      projectId: input.project_id,
    });
  const updated = (await updateReturning(tx.m, Stack, stack.uuid, {
    label: input.label ?? stack.label,
    project_uuid: input.project_id === undefined ? stack.project_uuid : input.project_id,
  }))!;
  await audited(tx, 'stack.update', stack, updated);
  return updated;
}

/** PUT /stacks/{uuid}/deployment: branch, auto-deploy, repository (already checked) and credential of the next deployment. */
export async function updateStackDeployment(
  tx: Tx,
  caller: Caller,
  input: {
    uuid: string;
    branch?: string;
    auto_deploy_enabled?: boolean;
    repository?: string;
    credential_id?: string | null;
  },
): Promise<Stack> {
  await checkCredential(tx.m, caller.workspaceUuid, input.credential_id);
  const stack = await stackForChange(tx, caller, input.uuid);
  const updated = (await updateReturning(tx.m, Stack, stack.uuid, {
    branch: input.branch ?? stack.branch,
    auto_deploy_enabled: input.auto_deploy_enabled ?? stack.auto_deploy_enabled,
    repository: input.repository ?? stack.repository,
    credential_id: input.credential_id === undefined ? stack.credential_id : input.credential_id,
  }))!;
  await audited(tx, 'stack.update_deployment', stack, updated);
  return updated;
}

/** POST /stacks/{uuid}/deployments: the tracked branch again, new variable values merged into the stored ones; 409 while a deployment runs. */
export async function redeployStack(
  tx: Tx,
  caller: Caller,
  input: { uuid: string; variables?: Record<string, string> },
): Promise<Stack> {
  const stack = await stackForChange(tx, caller, input.uuid);
  let updated = stack;
  if (input.variables) {
    const merged = { ...JSON.parse(tx.deps.secretBox.open(stack.variables_sealed)), ...input.variables };
    updated = (await updateReturning(tx.m, Stack, stack.uuid, {
      variables_sealed: tx.deps.secretBox.seal(JSON.stringify(merged)),
    }))!;
  }
  await startDeployment(tx, caller, stack.uuid);
  // The diff shows new variable values as a redacted variables_sealed change; a plain redeploy's diff is empty.
  await audited(tx, 'stack.deploy', stack, updated);
  return updated;
}

/** DELETE /stacks/{uuid}: the stack, its apps and their capacity; its cleanup workflow removes what runs. 409 while a deployment runs. */
export async function deleteStack(tx: Tx, caller: Caller, input: { uuid: string }): Promise<void> {
  const stack = await stackForChange(tx, caller, input.uuid);
  if (await deploymentRunning(tx, stack.uuid))
    throw conflict('a deployment of this stack is in progress; delete it when it has finished');
  const items = await tx.m.find(StackItem, { where: { stack_uuid: stack.uuid }, select: { uuid: true } });
  const uuids = items.map((i) => i.uuid);
  const ofItems = 'CAST(:uuids AS uuid[])';
  await tx.m
    .createQueryBuilder()
    .delete()
    .from(ResourceAllocation)
    .where(`owner_uuid = ANY(${ofItems})`, { uuids })
    .execute();
  await tx.m.createQueryBuilder().delete().from(App).where(`uuid = ANY(${ofItems})`, { uuids }).execute();
  await tx.m.delete(Stack, { uuid: stack.uuid });
  await audited(tx, 'stack.delete', stack, null);
  await tx.enqueue({
    operation: 'stack-delete',
    workflow: 'stackCleanup',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: stack.uuid,
    args: [{ itemUuids: uuids }],
  });
}
