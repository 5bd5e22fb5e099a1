import * as yup from 'yup';
import { rows } from '../../entities/sql';
import { installCertificate, removeCertificate } from '../commands/app-tls';
import { write } from '../commands/audited-write';
import { route } from '../route';
import { arr, obj, str, timestamp, uuid } from '../schemas/common';
import { isoRequired } from '../views/common';
import { findApp } from './app-support';

const TAG = 'tls_certificates';

const certificateSchema = obj({
  uuid: uuid().required(),
  subject: str().required(),
  issuer: str().required(),
  names: arr(str().required()).required(),
  fingerprint_sha256: str().required(),
  not_before: timestamp().required(),
  not_after: timestamp().required(),
  created_at: timestamp().required(),
});
const certificateBody = obj({
  certificate: str()
    .max(64 * 1024)
    .required(),
  private_key: str()
    .max(64 * 1024)
    .required(),
});

interface CertRow {
  uuid: string;
  subject: string;
  issuer: string;
  names: string[];
  fingerprint_sha256: string;
  not_before: Date;
  not_after: Date;
  created_at: Date;
}
const COLUMNS = 'uuid, subject, issuer, names, fingerprint_sha256, not_before, not_after, created_at';

/** The certificate's public facts; the private key is sealed and never returned. */
function view(c: CertRow) {
  return {
    uuid: c.uuid,
    subject: c.subject,
    issuer: c.issuer,
    names: c.names,
    fingerprint_sha256: c.fingerprint_sha256,
    not_before: isoRequired(c.not_before),
    not_after: isoRequired(c.not_after),
    created_at: isoRequired(c.created_at),
  };
}

export const appTlsRoutes = [
  route<{ uuid: string }>({
    method: 'get',
    path: '/apps/{uuid}/tls_certificates',
    requires: 'apps.read',
    tag: TAG,
    summary: "List an app's TLS certificates (never their private keys)",
    response: yup.array(certificateSchema),
    async handler(ctx) {
      const app = await findApp(ctx, ctx.params.uuid);
      return (
        await rows<CertRow>(
          ctx.deps.dataSource,
          `SELECT ${COLUMNS} FROM app_tls_certificates WHERE app_uuid = $1 ORDER BY created_at DESC`,
          [app.uuid],
        )
      ).map(view);
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof certificateBody>>({
    method: 'post',
    path: '/apps/{uuid}/tls_certificates',
    requires: 'apps.tls',
    tag: TAG,
    status: 201,
    audit: 'tls_certificate.create',
    summary:
      'Add a TLS certificate (PEM chain and the matching private key); an expired certificate or a key that does not match is refused',
    body: certificateBody,
    response: certificateSchema,
    handler: (ctx) =>
      write(ctx, async (tx) =>
        view(await installCertificate(tx, ctx.caller, { ...ctx.body, appUuid: ctx.params.uuid })),
      ),
  }),
  route<{ uuid: string; certificate_uuid: string }>({
    method: 'delete',
    path: '/apps/{uuid}/tls_certificates/{certificate_uuid}',
    requires: 'apps.tls',
    tag: TAG,
    status: 204,
    audit: 'tls_certificate.delete',
    summary: 'Remove a TLS certificate',
    handler: (ctx) =>
      write(ctx, (tx) =>
        removeCertificate(tx, ctx.caller, { appUuid: ctx.params.uuid, certificateUuid: ctx.params.certificate_uuid }),
      ),
  }),
];
