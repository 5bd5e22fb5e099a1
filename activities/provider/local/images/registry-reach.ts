import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';
import { registryHost } from './reference';
import {
  addressVerdict,
  hostnameVerdict,
  resolvedVerdict,
  type AllowList,
  type Verdict,
} from '../../../../domain/webhook-destination';

/**
 * Where a tenant's image may be pulled from. A pull (a container_registry deployment, a
 * stack's `image:` service, a Dockerfile's private `FROM`) runs from the machine's own
 * network, so a registry a tenant names is held to the rule outbound webhooks are: a public
 * address only (domain/webhook-destination.ts: no loopback, private, link-local, CGNAT or
 * reserved address, no `localhost`, `.local`, `.internal` or single-label name), unless the
 * operator lists the range in BERTH_REGISTRY_ALLOW_CIDRS (a registry of their own on the
 * LAN, or on loopback). Otherwise a tenant could make the machine knock on the platform's
 * own ports and read the answer in the pull's error. A name is resolved here and every
 * address must pass; a name that changes its answer between this check and podman's own
 * lookup is the race left (docs/decisions.md).
 */
export async function registryRefusal(registry: string, allow: AllowList): Promise<string | null> {
  const host = registryHost(registry);
  const literal = ipaddr.isValid(host) && (host.includes(':') || ipaddr.IPv4.isValidFourPartDecimal(host));
  let verdict: Verdict = literal ? addressVerdict(host, allow) : hostnameVerdict(host);
  if (verdict.allowed && !literal) {
    const addresses = await lookup(host, { all: true }).then(
      (found) => found.map((a) => a.address),
      () => null, // podman's own lookup fails with the resolver's reason
    );
    if (addresses) verdict = resolvedVerdict(host, addresses, allow);
  }
  if (verdict.allowed) return null;
  return (
    `images are pulled from public registries only, and ${registry} is not one (${verdict.reason}); ` +
    "an operator allows a registry of the platform's own network with BERTH_REGISTRY_ALLOW_CIDRS"
  );
}
