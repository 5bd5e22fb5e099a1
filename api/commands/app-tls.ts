import { createPrivateKey, randomUUID, X509Certificate } from 'node:crypto';
import { AppTlsCertificate } from '../../entities/app';
import { deleteReturning, insertReturning } from '../../entities/sql';
import type { Caller } from '../context';
import { conflict, notFound, unprocessable } from '../problem';
import { assertChangeable } from '../routes/app-support';
import { appForChange, ruleScope } from './apps';
import { snapshotOf, type Tx } from './audited-write';

/** The facts of a PEM certificate whose private key matches it and that has not expired; else a 422 naming the field. */
function parseCertificate(input: { certificate: string; private_key: string }) {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(input.certificate);
  } catch {
    throw unprocessable('certificate is not a PEM X.509 certificate', [
      { path: 'body.certificate', message: 'not a PEM certificate' },
    ]);
  }
  let matches = false;
  try {
    matches = cert.checkPrivateKey(createPrivateKey(input.private_key));
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
  return { cert, names };
}

/**
 * POST /apps/{uuid}/tls_certificates: the certificate (once per app and fingerprint), its
 * private key sealed; the audit snapshot holds the sealed key, which the diff shows only as redacted.
 */
export async function installCertificate(
  tx: Tx,
  caller: Caller,
  input: { appUuid: string; certificate: string; private_key: string },
): Promise<AppTlsCertificate> {
  const { cert, names } = parseCertificate(input);
  const app = await appForChange(tx, ruleScope(tx, caller), input.appUuid);
  assertChangeable(app);
  // ON CONFLICT DO NOTHING: the uuid is fresh, so the one conflict possible is the fingerprint
  const row = await insertReturning(
    tx.m,
    AppTlsCertificate,
    {
      uuid: randomUUID(),
      app_uuid: app.uuid,
      subject: cert.subject.replace(/\n/g, ', '),
      issuer: cert.issuer.replace(/\n/g, ', '),
      names,
      fingerprint_sha256: cert.fingerprint256,
      not_before: new Date(cert.validFrom),
      not_after: new Date(cert.validTo),
      certificate_pem: input.certificate,
      private_key_sealed: tx.deps.secretBox.seal(input.private_key),
    },
    { ignoreConflict: true },
  );
  if (!row) throw conflict('this certificate is already installed on the app');
  await tx.audit({ action: 'tls_certificate.create', resourceUuid: row.uuid, after: snapshotOf(row) });
  return row;
}

/** DELETE /apps/{uuid}/tls_certificates/{certificate_uuid}: the certificate is removed. */
export async function removeCertificate(
  tx: Tx,
  caller: Caller,
  input: { appUuid: string; certificateUuid: string },
): Promise<void> {
  const app = await appForChange(tx, ruleScope(tx, caller), input.appUuid, false);
  const [deleted] = await deleteReturning(tx.m, AppTlsCertificate, 'app_uuid = :app AND uuid = :uuid', {
    app: app.uuid,
    uuid: input.certificateUuid,
  });
  if (!deleted) throw notFound('TLS certificate');
  await tx.audit({ action: 'tls_certificate.delete', resourceUuid: deleted.uuid, before: snapshotOf(deleted) });
}
