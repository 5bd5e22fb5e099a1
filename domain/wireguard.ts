import { createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';

/**
 * WireGuard keys and configuration files. Keys are real X25519 key pairs (Curve25519, as
 * WireGuard uses), written the way `wg genkey` / `wg pubkey` write them: 32 raw bytes in
 * standard base64.
 */
export interface WireguardKeyPair {
  privateKey: string;
  publicKey: string;
}

/** PKCS#8 prefix of an X25519 private key (RFC 8410): the 32 raw bytes follow. */
const PKCS8_X25519_PREFIX = Buffer.from('302e020100300506032b656e04220420', 'hex');

export function generateWireguardKeyPair(): WireguardKeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('x25519');
  const priv = privateKey.export({ format: 'jwk' }).d!;
  const pub = publicKey.export({ format: 'jwk' }).x!;
  return {
    privateKey: Buffer.from(priv, 'base64url').toString('base64'),
    publicKey: Buffer.from(pub, 'base64url').toString('base64'),
  };
}

/** The public key of a base64 X25519 private key (what `wg pubkey` prints). */
export function wireguardPublicKey(privateKeyBase64: string): string {
  const raw = Buffer.from(privateKeyBase64, 'base64');
  if (raw.length !== 32) throw new Error('a WireGuard private key is 32 bytes');
  const key = createPrivateKey({ key: Buffer.concat([PKCS8_X25519_PREFIX, raw]), format: 'der', type: 'pkcs8' });
  const x = createPublicKey(key).export({ format: 'jwk' }).x!;
  return Buffer.from(x, 'base64url').toString('base64');
}

export function isWireguardKey(value: string): boolean {
  return /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/.test(value) && Buffer.from(value, 'base64').length === 32;
}

export interface WireguardConfigInput {
  privateKey: string;
  /** The device's address with its prefix, e.g. 10.224.0.129/32. */
  address: string;
  dns: string;
  peerPublicKey: string;
  endpoint: string;
  allowedIps: readonly string[];
}

/** A wg-quick configuration file for one device. */
export function wireguardConfig(c: WireguardConfigInput): string {
  return [
    '[Interface]',
    `PrivateKey = ${c.privateKey}`,
    `Address = ${c.address}`,
    `DNS = ${c.dns}`,
    '',
    '[Peer]',
    `PublicKey = ${c.peerPublicKey}`,
    `Endpoint = ${c.endpoint}`,
    `AllowedIPs = ${c.allowedIps.join(', ')}`,
    'PersistentKeepalive = 25',
    '',
  ].join('\n');
}

/** The WireGuard vault holds a device's private key for this long, for one read. */
export const WIREGUARD_VAULT_MS = 15 * 60 * 1000;
export const WIREGUARD_PORT = 51820;
