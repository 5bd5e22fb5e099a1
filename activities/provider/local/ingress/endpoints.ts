import { randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import type { DataSource } from 'typeorm';
import { LOOPBACK } from '../sandbox/launcher';

/**
 * The public endpoint of every compute resource, as this machine really offers it: public
 * ports listen on the ingress host (BERTH_HOST), so the endpoint's addresses are that host's
 * (loopback for the embedded default: 127.0.0.1 and ::1) and its name `<resource uuid>.lb.localhost`
 * (RFC 6761: resolves to loopback). Replaces the documentation-range addresses the API
 * gives a resource it has no endpoint for. Idempotent; run at each start of the driver.
 */
export async function publishLocalEndpoints(ds: DataSource, host: string): Promise<void> {
  const v4 = isIP(host) === 4 && host !== '0.0.0.0' ? host : LOOPBACK;
  const v6 = isIP(host) === 6 && host !== '::' ? host : '::1';
  const resources: Array<{ uuid: string }> = await ds.query(`SELECT uuid FROM compute_resources`);
  for (const { uuid } of resources) {
    await ds.query(
      `INSERT INTO resource_endpoints AS e (resource_uuid, endpoint_id, hostname, ipv4_primary, ipv4_secondary, ipv6_primary, ipv6_secondary)
       VALUES ($1::uuid, $2::uuid, $1::text || '.lb.localhost', $3::inet, $3::inet, $4::inet, $4::inet)
       ON CONFLICT (resource_uuid) DO UPDATE SET hostname = EXCLUDED.hostname, ipv4_primary = EXCLUDED.ipv4_primary, ipv4_secondary = EXCLUDED.ipv4_secondary,
         ipv6_primary = EXCLUDED.ipv6_primary, ipv6_secondary = EXCLUDED.ipv6_secondary`,
      [uuid, randomUUID(), v4, v6],
    );
  }
}
