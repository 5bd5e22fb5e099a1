import { isIP } from 'node:net';

/** Checks shared by the VPN building blocks: nothing malformed reaches a command or a file. */

const NAMESPACE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** An address with its prefix (IPv4 or IPv6), e.g. 10.224.0.128/25. */
export function isRange(text: string): boolean {
  const [address, prefix, ...rest] = text.split('/');
  const family = isIP(address ?? '');
  if (rest.length > 0 || family === 0 || !/^\d{1,3}$/.test(prefix ?? '')) return false;
  return Number(prefix) <= (family === 4 ? 32 : 128);
}

export function checkNamespace(namespace: string): void {
  if (!NAMESPACE.test(namespace)) throw new Error(`not a network namespace name: ${namespace}`);
}
