import * as yup from 'yup';
import { one } from '../../entities/sql';
import { recordAudit, snapshot } from '../audit';
import { hiddenProjects } from '../access';
import { conflict, notFound, unprocessable } from '../problem';
import { route } from '../route';
import { createAttachmentBody } from '../schemas/vpcs';
import { ATTACHABLES } from '../vpc-attachables';
import { checkAttachment, insertAttachment } from '../vpc-join';
import { ATTACHMENT_COLUMNS, attachmentSchema, attachmentView, type AttachmentRow } from '../views/vpcs';
import { findVpc } from '../commands/vpcs';
import { vpcChildren } from './vpc-children';

const TAG = 'vpcs';

export const vpcAttachmentRoutes = [
  route<{ uuid: string }>({
    method: 'get',
    path: '/vpcs/{uuid}/attachments',
    requires: 'network.read',
    tag: TAG,
    summary: 'List the workloads attached to a VPC, newest first',
    response: yup.array(attachmentSchema),
    async handler(ctx) {
      const found = await vpcChildren<AttachmentRow>(
        ctx,
        ctx.params.uuid,
        `SELECT ${ATTACHMENT_COLUMNS} FROM vpc_attachments`,
      );
      return found.map(attachmentView);
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof createAttachmentBody>>({
    method: 'post',
    path: '/vpcs/{uuid}/attachments',
    requires: 'vpcs.attachments',
    tag: TAG,
    status: 201,
    audit: 'vpc_attachment.create',
    body: createAttachmentBody,
    response: attachmentSchema,
    summary:
      'Attach a workload (App, Service, Addon) to a subnet; the workload restarts once (status attaching, then attached)',
    async handler(ctx) {
      const type = ctx.body.attachable_type;
      const kind = ATTACHABLES[type];
      const { attachment, operation } = await ctx.deps.dataSource.transaction(async (m) => {
        const vpc = await findVpc(ctx, ctx.params.uuid, m, true);
        const workload = kind ? await kind.find(m, ctx.caller.workspaceUuid, ctx.body.attachable_uuid) : null;
        if (!workload || (workload.projectUuid && (await hiddenProjects(ctx)).has(workload.projectUuid))) {
          throw unprocessable(`unknown ${type}: ${ctx.body.attachable_uuid} is not a ${type} of this workspace`, [
            { path: 'body.attachable_uuid', message: `no such ${type}` },
          ]);
        }
        await checkAttachment(m, vpc, ctx.body.subnet_uuid, workload);
        const row = await insertAttachment(m, vpc, ctx.body.subnet_uuid, type, workload, 'attaching');
        await recordAudit(m, ctx, {
          resourceUuid: row.uuid,
          before: null,
          after: await snapshot(m, 'vpc_attachments', row.uuid),
        });
        const op = await ctx.deps.outbox.enqueue(m, {
          operation: 'vpc-attach',
          workflow: 'vpcAttach',
          workspaceUuid: ctx.caller.workspaceUuid,
          resourceUuid: row.uuid,
          args: [{ attachmentUuid: row.uuid }],
        });
        return { attachment: row, operation: op };
      });
      await ctx.deps.outbox.dispatch(operation);
      ctx.koa.set('Location', `/api/v1/vpcs/${attachment.vpc_uuid}/attachments/${attachment.uuid}`);
      return attachmentView(attachment);
    },
  }),
  route<{ uuid: string; attachment_uuid: string }>({
    method: 'delete',
    path: '/vpcs/{uuid}/attachments/{attachment_uuid}',
    requires: 'vpcs.attachments',
    tag: TAG,
    status: 202,
    audit: 'vpc_attachment.delete',
    response: attachmentSchema,
    summary: 'Detach a workload; it restarts once off the VPC (status detaching, then gone)',
    async handler(ctx) {
      const { attachment, operation } = await ctx.deps.dataSource.transaction(async (m) => {
        const vpc = await findVpc(ctx, ctx.params.uuid, m, true);
        const found = await one<AttachmentRow>(
          m,
          `SELECT ${ATTACHMENT_COLUMNS} FROM vpc_attachments WHERE uuid = $1 AND vpc_uuid = $2`,
          [ctx.params.attachment_uuid, vpc.uuid],
        );
        if (!found) throw notFound('attachment');
        const before = await snapshot(m, 'vpc_attachments', found.uuid);
        if (found.status === 'detaching') {
          await recordAudit(m, ctx, { resourceUuid: found.uuid, before, after: before });
          return { attachment: found, operation: null };
        }
        if (found.status === 'attaching')
          throw conflict('the workload is still being attached; detach it once it is attached');
        const updated = await one<AttachmentRow>(
          m,
          `UPDATE vpc_attachments SET status = 'detaching', updated_at = now() WHERE uuid = $1 RETURNING ${ATTACHMENT_COLUMNS}`,
          [found.uuid],
        );
        const op = await ctx.deps.outbox.enqueue(m, {
          operation: 'vpc-detach',
          workflow: 'vpcDetach',
          workspaceUuid: ctx.caller.workspaceUuid,
          resourceUuid: found.uuid,
          args: [{ attachmentUuid: found.uuid }],
        });
        await recordAudit(m, ctx, {
          resourceUuid: found.uuid,
          before,
          after: await snapshot(m, 'vpc_attachments', found.uuid),
        });
        return { attachment: updated!, operation: op };
      });
      if (operation) await ctx.deps.outbox.dispatch(operation);
      return attachmentView(attachment);
    },
  }),
];
