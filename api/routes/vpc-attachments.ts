import * as yup from 'yup';
import { write } from '../commands/audited-write';
import { attachWorkload, detachWorkload } from '../commands/vpc-attachments';
import { route } from '../route';
import { createAttachmentBody } from '../schemas/vpcs';
import { ATTACHMENT_COLUMNS, attachmentSchema, attachmentView, type AttachmentRow } from '../views/vpcs';
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
      const attachment = await write(ctx, (tx) =>
        attachWorkload(tx, ctx.caller, { ...ctx.body, vpcUuid: ctx.params.uuid }),
      );
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
      const attachment = await write(ctx, (tx) =>
        detachWorkload(tx, ctx.caller, { vpcUuid: ctx.params.uuid, attachmentUuid: ctx.params.attachment_uuid }),
      );
      return attachmentView(attachment);
    },
  }),
];
