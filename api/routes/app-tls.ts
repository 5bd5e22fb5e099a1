import { createPrivateKey, randomUUID, X509Certificate } from 'node:crypto';
import * as yup from 'yup';
import { one, rows } from '../../entities/sql';
import { recordAudit, snapshot } from '../audit';
import { conflict, notFound, unprocessable } from '../problem';
import { route } from '../route';
import { arr, obj, str, timestamp, uuid } from '../schemas/common';
import { isoRequired } from '../views/common';
import { assertChangeable, findApp } from './app-support';

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
    async handler(ctx) {
      let cert: X509Certificate;
      try {
        cert = new X509Certificate(ctx.body.certificate);
      } catch {
        throw unprocessable('certificate is not a PEM X.509 certificate', [
          { path: 'body.certificate', message: 'not a PEM certificate' },
        ]);
      }
      let matches = false;
      try {
        matches = cert.checkPrivateKey(createPrivateKey(ctx.body.private_key));
      } catch {
        throw unprocessable('private_key is not a PEM private key', [
          { path: 'body.private_key', message: 'not a PEM private key' },
        ]);
      }
      if (!matches)
        throw unprocessable('private_key does not belong to the certificate', [
          { path: 'body.private_key', message: 'does not match the certificate' },
        ]);
      if (new Date(cert.validTo).getTime() <= Date.now())
        throw unprocessable('the certificate has expired', [{ path: 'body.certificate', message: 'expired' }]);
      const names = (cert.subjectAltName ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s.startsWith('DNS:'))
        .map((s) => s.slice(4));
      return ctx.deps.dataSource.transaction(async (m) => {
        const app = await findApp(ctx, ctx.params.uuid, m, true);
        assertChangeable(app);
        const row = await one<CertRow>(
          m,
          `INSERT INTO app_tls_certificates (uuid, app_uuid, subject, issuer, names, fingerprint_sha256, not_before, not_after, certificate_pem, private_key_sealed)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (app_uuid, fingerprint_sha256) DO NOTHING RETURNING ${COLUMNS}`,
          [
            randomUUID(),
            app.uuid,
            cert.subject.replace(/\n/g, ', '),
            cert.issuer.replace(/\n/g, ', '),
            names,
            cert.fingerprint256,
            new Date(cert.validFrom),
            new Date(cert.validTo),
            ctx.body.certificate,
            ctx.deps.secretBox.seal(ctx.body.private_key),
          ],
        );
        if (!row) throw conflict('this certificate is already installed on the app');
        // the snapshot holds the sealed key; the audit diff shows it only as redacted
        await recordAudit(m, ctx, {
          resourceUuid: row.uuid,
          after: await snapshot(m, 'app_tls_certificates', row.uuid),
        });
        return view(row);
      });
    },
  }),
  route<{ uuid: string; certificate_uuid: string }>({
    method: 'delete',
    path: '/apps/{uuid}/tls_certificates/{certificate_uuid}',
    requires: 'apps.tls',
    tag: TAG,
    status: 204,
    audit: 'tls_certificate.delete',
    summary: 'Remove a TLS certificate',
    async handler(ctx) {
      await ctx.deps.dataSource.transaction(async (m) => {
        const app = await findApp(ctx, ctx.params.uuid, m);
        const deleted = await one<{ s: Record<string, unknown> }>(
          m,
          `DELETE FROM app_tls_certificates t WHERE app_uuid = $1 AND uuid = $2 RETURNING to_jsonb(t) AS s`,
          [app.uuid, ctx.params.certificate_uuid],
        );
        if (!deleted) throw notFound('TLS certificate');
        await recordAudit(m, ctx, { resourceUuid: ctx.params.certificate_uuid, before: deleted.s });
      });
      return undefined;
    },
  }),
];
