import { X509Certificate } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { Context } from '@temporalio/activity';
import { CERTIFICATE_OPERATION, renewalTime } from '../domain/certificates';
import { operationStart } from '../domain/search-attributes';
import { one, rows } from '../entities/sql';
import { acmeFailureText, orderCertificate } from './acme';
import type { ActivityDeps } from './deps';

/** What `obtainDomainCertificate` tells its workflow: identifiers and times only, never key material. */
export type CertificateOutcome = { kind: 'stopped'; reason: string } | { kind: 'issued'; renewAt: number };

function beat(): void {
  try {
    Context.current().heartbeat();
  } catch {
    // called outside an activity (a test calling the function directly)
  }
}

export function createCertificateActivities({
  dataSource,
  logger,
  config,
  secretBox,
  temporal,
}: Pick<ActivityDeps, 'dataSource' | 'logger' | 'config' | 'secretBox' | 'temporal'>) {
  return {
    /**
     * Obtains (or renews) the certificate of a verified custom domain by ACME, unless the one
     * it has is for its current name and neither `due` (its workflow's renewal timer fired) nor
     * past its renewal time. The record on the domain says where it
     * stands: `issuing` while the order is open; `issued` with issuer and expiry; `failed`
     * with the reason in plain words, then this activity fails and is retried with backoff
     * (a certificate obtained before is still served meanwhile). `stopped` when there is
     * nothing to obtain: no ACME directory configured, or the domain gone or not verified.
     * The chain and its sealed key go to the database only; the workflow gets the renewal time.
     */
    async obtainDomainCertificate(domainUuid: string, due = false): Promise<CertificateOutcome> {
      if (!config.acmeDirectory) return { kind: 'stopped', reason: 'no ACME directory is configured' };
      const domain = await one<{ name: string; verification_status: string }>(
        dataSource,
        'SELECT name, verification_status FROM domains WHERE uuid = $1',
        [domainUuid],
      );
      if (!domain || domain.verification_status !== 'verified') {
        return { kind: 'stopped', reason: domain ? 'the domain is not verified' : 'the domain no longer exists' };
      }
      const held = await one<{ name: string | null; renew_at: Date | null; certificate_pem: string | null }>(
        dataSource,
        'SELECT name, renew_at, certificate_pem FROM domain_certificates WHERE domain_uuid = $1',
        [domainUuid],
      );
      const renewAt = held?.certificate_pem && held.name === domain.name ? held.renew_at : null;
      if (renewAt && !due && renewAt.getTime() > Date.now()) {
        return { kind: 'issued', renewAt: renewAt.getTime() };
      }
      await dataSource.query(
        `INSERT INTO domain_certificates (domain_uuid, state, attempts, last_attempt_at) VALUES ($1, 'issuing', 1, now())
         ON CONFLICT (domain_uuid) DO UPDATE SET state = 'issuing', attempts = domain_certificates.attempts + 1,
           last_attempt_at = now(), updated_at = now()`,
        [domainUuid],
      );
      let issued;
      try {
        issued = await orderCertificate(
          dataSource,
          secretBox,
          { directoryUrl: config.acmeDirectory, email: config.acmeEmail, caFile: config.acmeCaFile },
          domain.name,
          beat,
        );
      } catch (err) {
        const reason = acmeFailureText(err);
        await dataSource.query(
          `UPDATE domain_certificates SET state = 'failed', last_error = $2, updated_at = now() WHERE domain_uuid = $1`,
          [domainUuid, reason],
        );
        logger.warn({ domainUuid, domain: domain.name, reason }, 'certificate order failed; it is retried');
        throw ApplicationFailure.retryable(
          `the certificate order for ${domain.name} failed: ${reason}`,
          'AcmeOrderFailed',
        );
      }
      const leaf = new X509Certificate(issued.chainPem);
      const notBefore = new Date(leaf.validFrom);
      const notAfter = new Date(leaf.validTo);
      const renewOn = renewalTime(notBefore, notAfter);
      // kept only if the domain still has the name it was ordered for
      const stored = await rows(
        dataSource,
        `UPDATE domain_certificates m SET state = 'issued', name = $2, issuer = $3, not_before = $4, not_after = $5,
           renew_at = $6, certificate_pem = $7, private_key_sealed = $8, attempts = 0, last_error = NULL, updated_at = now()
          FROM domains d WHERE m.domain_uuid = $1 AND d.uuid = m.domain_uuid AND d.name = $2 RETURNING m.domain_uuid`,
        [
          domainUuid,
          domain.name,
          leaf.issuer.replace(/\n/g, ', '),
          notBefore,
          notAfter,
          renewOn,
          issued.chainPem,
          secretBox.seal(issued.keyPem),
        ],
      );
      if (stored.length === 0) return { kind: 'stopped', reason: 'the domain was renamed or deleted during the order' };
      logger.info({ domainUuid, domain: domain.name, notAfter, renewAt: renewOn }, 'certificate issued');
      return { kind: 'issued', renewAt: renewOn.getTime() };
    },

    /**
     * Starts the certificate workflow of a verified domain (`domain-certificate/<domain uuid>`)
     * or, when it runs already, wakes it (a renamed domain verified again needs its new
     * name's certificate now): a signal-with-start. Nothing when no ACME directory is configured.
     */
    async startDomainCertificate(domainUuid: string): Promise<void> {
      if (!config.acmeDirectory) return;
      const domain = await one<{ workspace_uuid: string }>(
        dataSource,
        'SELECT workspace_uuid FROM domains WHERE uuid = $1',
        [domainUuid],
      );
      if (!domain) return;
      await temporal.workflow.signalWithStart('domainCertificate', {
        ...operationStart({
          operation: CERTIFICATE_OPERATION,
          workspaceUuid: domain.workspace_uuid,
          resourceUuid: domainUuid,
        }),
        taskQueue: Context.current().info.taskQueue,
        args: [{ domainUuid }],
        signal: 'renew',
        signalArgs: [],
      });
    },
  };
}
