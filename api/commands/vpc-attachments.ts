import type { AttachableType } from '../../domain/vpc';
import { updateReturning } from '../../entities/sql';
import { VpcAttachment } from '../../entities/vpc';
import { hiddenProjects } from '../access';
import type { Caller } from '../context';
import { conflict, notFound, unprocessable } from '../problem';
import { ATTACHABLES } from '../vpc-attachables';
import { checkAttachment, insertAttachment } from '../vpc-join';
import { snapshotOf, type Tx } from './audited-write';
import { findVpc } from './vpcs';

/**
 * POST /vpcs/{uuid}/attachments: a workload of the workspace the caller can see (else 422) is
 * attached to a subnet of the VPC (status attaching); its workflow restarts it inside the VPC.
 */
export async function attachWorkload(
  tx: Tx,
  caller: Caller,
  input: { vpcUuid: string; subnet_uuid: string; attachable_type: AttachableType; attachable_uuid: string },
): Promise<VpcAttachment> {
  const type = input.attachable_type;
  const kind = ATTACHABLES[type];
  const scope = { caller, deps: tx.deps };
  const vpc = await findVpc(scope, input.vpcUuid, tx.m, true);
  const workload = kind ? await kind.find(tx.m, caller.workspaceUuid, input.attachable_uuid) : null;
  if (!workload || (workload.projectUuid && (await hiddenProjects(scope)).has(workload.projectUuid))) {
    throw unprocessable(`unknown ${type}: ${input.attachable_uuid} is not a ${type} of this workspace`, [
      { path: 'body.attachable_uuid', message: `no such ${type}` },
    ]);
  }
  const refusal = tx.deps.capabilities?.vpcAttachable(type, workload) ?? null;
  if (refusal) throw unprocessable(refusal, [{ path: 'body.attachable_type', message: `not on this driver: ${type}` }]);
  await checkAttachment(tx.m, vpc, input.subnet_uuid, workload);
  const attachment = await insertAttachment(tx.m, vpc, input.subnet_uuid, type, workload, 'attaching');
  await tx.audit({
    action: 'vpc_attachment.create',
    resourceUuid: attachment.uuid,
    before: null,
    after: snapshotOf(attachment),
  });
  await tx.enqueue({
    operation: 'vpc-attach',
    workflow: 'vpcAttach',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: attachment.uuid,
    args: [{ attachmentUuid: attachment.uuid }],
  });
  return attachment;
}

/**
 * DELETE /vpcs/{uuid}/attachments/{attachment_uuid}: the attachment moves to detaching and its
 * workflow restarts the workload off the VPC; 409 while attaching. Detaching again changes nothing.
 */
export async function detachWorkload(
  tx: Tx,
  caller: Caller,
  input: { vpcUuid: string; attachmentUuid: string },
): Promise<VpcAttachment> {
  const vpc = await findVpc({ caller, deps: tx.deps }, input.vpcUuid, tx.m, true);
  const found = await tx.m.findOneBy(VpcAttachment, { uuid: input.attachmentUuid, vpc_uuid: vpc.uuid });
  if (!found) throw notFound('attachment');
  const audit = (after: VpcAttachment) =>
    tx.audit({
      action: 'vpc_attachment.delete',
      resourceUuid: found.uuid,
      before: snapshotOf(found),
      after: snapshotOf(after),
    });
  if (found.status === 'detaching') {
    await audit(found);
    return found;
  }
  if (found.status === 'attaching')
    throw conflict('the workload is still being attached; detach it once it is attached');
  const updated = (await updateReturning(tx.m, VpcAttachment, found.uuid, { status: 'detaching' }))!;
  await tx.enqueue({
    operation: 'vpc-detach',
    workflow: 'vpcDetach',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: found.uuid,
    args: [{ attachmentUuid: found.uuid }],
  });
  await audit(updated);
  return updated;
}
