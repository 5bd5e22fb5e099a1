import { randomBytes, webcrypto } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import * as x509 from '@peculiar/x509';
import type { SecretBox } from '../../../../../domain/secret-box';

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY_MS = 86_400_000;
/** The root lasts ten years; a leaf 30 days and is minted again (in memory) a day before it ends. */
const ROOT_DAYS = 3650;
const LEAF_DAYS = 30;

/** A certificate and its private key, both PEM. */
export interface KeyPair {
  cert: string;
  key: string;
  notAfter: Date;
}

/**
 * The LOCAL CA: a root Berth creates on first start under `<data dir>/tls` (the root
 * certificate in `local-ca.crt`, its private key sealed with the secret keyring in
 * `local-ca.key.sealed`) and signs leaf certificates with, one per host name, for names
 * no public CA can vouch for (`*.localhost`). Leaves and their key live in memory only.
 */
export interface LocalCa {
  /** The root certificate's file, for `curl --cacert` and a browser's trust store. */
  rootPath: string;
  rootPem: string;
  /** A leaf certificate for `name`, valid for LEAF_DAYS. */
  issue(name: string): Promise<KeyPair>;
}

function pem(label: string, der: ArrayBuffer): string {
  const b64 = Buffer.from(der).toString('base64');
  return `-----BEGIN ${label}-----\n${b64.match(/.{1,64}/g)!.join('\n')}\n-----END ${label}-----\n`;
}

function der(pemText: string): Buffer {
  return Buffer.from(pemText.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
}

/** A random positive serial number (RFC 5280: at most 20 octets, here 16). */
function serial(): string {
  const bytes = randomBytes(16);
  bytes[0]! &= 0x7f;
  return bytes.toString('hex');
}

async function createRoot(): Promise<{ cert: x509.X509Certificate; keys: CryptoKeyPair }> {
  const keys = (await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify'])) as CryptoKeyPair;
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=Berth local CA (${hostname().replace(/[,=+<>#;"\\]/g, '-')}), O=Berth`,
    notBefore: new Date(now - DAY_MS),
    notAfter: new Date(now + ROOT_DAYS * DAY_MS),
    signingAlgorithm: ALGORITHM,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert, keys };
}

/**
 * Opens the local CA under `dir`, creating it on first use. The key is written before the
 * certificate and each by a rename, so a certificate on disk always has its key beside it;
 * a key left alone by a crash is replaced.
 */
export async function openLocalCa(dir: string, secretBox: SecretBox): Promise<LocalCa> {
  const rootPath = path.join(dir, 'local-ca.crt');
  const keyPath = path.join(dir, 'local-ca.key.sealed');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  let rootPem: string;
  let signingKey: CryptoKey;
  try {
    rootPem = await readFile(rootPath, 'utf8');
    const sealed = await readFile(keyPath, 'utf8');
    signingKey = await webcrypto.subtle.importKey('pkcs8', der(secretBox.open(sealed.trim())), ALGORITHM, false, [
      'sign',
    ]);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new Error(
        `the local CA in ${dir} cannot be opened (${(err as Error).message}); move the folder away to create a new one`,
      );
    }
    const root = await createRoot();
    rootPem = root.cert.toString('pem') + '\n';
    const keyPem = pem('PRIVATE KEY', await webcrypto.subtle.exportKey('pkcs8', root.keys.privateKey));
    const tmp = `.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
    await writeFile(keyPath + tmp, secretBox.seal(keyPem) + '\n', { mode: 0o600 });
    await rename(keyPath + tmp, keyPath);
    await writeFile(rootPath + tmp, rootPem, { mode: 0o644 });
    await rename(rootPath + tmp, rootPath);
    signingKey = root.keys.privateKey;
  }
  const root = new x509.X509Certificate(rootPem);
  const authorityKey = await x509.AuthorityKeyIdentifierExtension.create(root, false);
  // one key for every leaf of this process: minting a leaf is then one signature
  const leafKeys = (await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify'])) as CryptoKeyPair;
  const leafKeyPem = pem('PRIVATE KEY', await webcrypto.subtle.exportKey('pkcs8', leafKeys.privateKey));

  return {
    rootPath,
    rootPem,
    async issue(name) {
      const now = Date.now();
      const notAfter = new Date(now + LEAF_DAYS * DAY_MS);
      const leaf = await x509.X509CertificateGenerator.create({
        serialNumber: serial(),
        subject: `CN=${name}`,
        issuer: root.subject,
        notBefore: new Date(now - DAY_MS),
        notAfter,
        signingAlgorithm: ALGORITHM,
        publicKey: leafKeys.publicKey,
        signingKey,
        extensions: [
          new x509.BasicConstraintsExtension(false, undefined, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
          new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
          new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: name }]),
          authorityKey,
        ],
      });
      return { cert: leaf.toString('pem') + '\n' + rootPem, key: leafKeyPem, notAfter };
    },
  };
}

/** Names the local CA signs: `localhost` and names under it (RFC 6761: they resolve to loopback only). */
export function isLocalName(name: string): boolean {
  return name === 'localhost' || name.endsWith('.localhost');
}
