import { Resolver } from 'node:dns/promises';
import { txtRecordName } from '../domain/domains';
import { one } from '../entities/sql';
import type { ActivityDeps } from './deps';
import { moveState } from './state';

export type DomainCheck = 'found' | 'absent' | 'stopped';

/** DNS error codes that mean "no such record (yet)" rather than a resolver failure. */
const ABSENT = new Set(['ENOTFOUND', 'ENODATA', 'NXDOMAIN']);

/** A resolver asking the configured servers (`ip`, `ip:port`, `[ipv6]:port`), else the system's. */
export function verificationResolver(servers: readonly string[]): Resolver {
  const resolver = new Resolver({ timeout: 3000, tries: 2 });
  if (servers.length > 0) resolver.setServers([...servers]);
  return resolver;
}

export function createDomainActivities({
  dataSource,
  logger,
  config,
}: Pick<ActivityDeps, 'dataSource' | 'logger' | 'config'>) {
  return {
    /**
     * One verification check: looks up TXT `_platformapp-verify.<domain>` and compares
     * each record with the token. `stopped` when the domain is gone or no longer being
     * verified (deleted, renamed). Records the attempt on the domain.
     */
    async checkDomainTxt(domainUuid: string): Promise<DomainCheck> {
      const domain = await one<{ name: string; verification_token: string | null }>(
        dataSource,
        `SELECT name, verification_token FROM domains WHERE uuid = $1 AND verification_status = 'in_progress'`,
        [domainUuid],
      );
      if (!domain || !domain.verification_token) return 'stopped';
      const record = txtRecordName(domain.name);
      let found = false;
      let error: string | null = null;
      try {
        const txt = await verificationResolver(config.dnsServers).resolveTxt(record);
        found = txt.some((chunks) => chunks.join('').trim() === domain.verification_token);
        if (!found) error = `the TXT record at ${record} does not hold the verification token`;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code ?? 'ERROR';
        error = ABSENT.has(code) ? `no TXT record at ${record}` : `DNS lookup of ${record} failed: ${code}`;
      }
      await dataSource.query(
        `UPDATE domains SET check_attempts = check_attempts + 1, last_checked_at = now(), last_check_error = $2
          WHERE uuid = $1 AND verification_status = 'in_progress'`,
        [domainUuid, error],
      );
      logger.info({ domainUuid, record, found, error }, 'domain verification check');
      return found ? 'found' : 'absent';
    },
    /** in_progress -> verified: dns_target becomes the app's public host, the token is cleared. */
    async completeDomainVerification(domainUuid: string): Promise<boolean> {
      return moveState(
        dataSource,
        { table: 'domains', uuid: domainUuid, from: ['in_progress'], to: 'verified' },
        {
          verification_token: null,
          last_check_error: null,
          // the app's public host: its name under its region's domain
          dns_target:
            () => `(SELECT a.name || '.' || r.domain FROM apps a JOIN compute_resources c ON c.uuid = a.resource_uuid
                               JOIN regions r ON r.id = c.region_id WHERE a.uuid = domains.app_uuid)`,
        },
      );
    },
    /** in_progress -> failed once the attempts are exhausted; the token stays for another try. */
    async failDomainVerification(domainUuid: string): Promise<boolean> {
      return moveState(dataSource, { table: 'domains', uuid: domainUuid, from: ['in_progress'], to: 'failed' });
    },
  };
}
