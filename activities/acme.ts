import { readFileSync } from 'node:fs';
import { Agent } from 'node:https';
import * as acme from 'acme-client';
import type { DataSource } from 'typeorm';
import type { SecretBox } from '../domain/secret-box';
import { one } from '../entities/sql';

/** Where the platform's ACME account is and how Berth reaches it. */
export interface AcmeSettings {
  directoryUrl: string;
  email: string | undefined;
  /** PEM bundle to trust for the directory's own HTTPS (a private or test ACME server). */
  caFile: string | undefined;
}

/** What an order yields: the chain (PEM) and its private key (PEM; the caller seals it at once). */
export interface IssuedCertificate {
  chainPem: string;
  keyPem: string;
}

let trustedCaFile: string | undefined;

/**
 * acme-client talks through its own axios instance; a private directory's CA is given to
 * it once per process (the setting is process-wide, as the directory is).
 */
function trustDirectoryCa(caFile: string | undefined): void {
  if (!caFile || trustedCaFile === caFile) return;
  acme.axios.defaults.httpsAgent = new Agent({ ca: readFileSync(caFile) });
  trustedCaFile = caFile;
}

/**
 * The platform's account at the directory: its key is made once and kept sealed in
 * `acme_accounts` (two workers creating it at once keep the first one written).
 */
async function accountClient(ds: DataSource, box: SecretBox, settings: AcmeSettings): Promise<acme.Client> {
  const existing = await one<{ account_key_sealed: string; account_url: string | null }>(
    ds,
    'SELECT account_key_sealed, account_url FROM acme_accounts WHERE directory_url = $1',
    [settings.directoryUrl],
  );
  let sealed = existing?.account_key_sealed;
  if (!sealed) {
    const key = (await acme.crypto.createPrivateEcdsaKey('P-256')).toString();
    await ds.query(
      'INSERT INTO acme_accounts (directory_url, account_key_sealed) VALUES ($1, $2) ON CONFLICT (directory_url) DO NOTHING',
      [settings.directoryUrl, box.seal(key)],
    );
    sealed = (await one<{ account_key_sealed: string }>(
      ds,
      'SELECT account_key_sealed FROM acme_accounts WHERE directory_url = $1',
      [settings.directoryUrl],
    ))!.account_key_sealed;
  }
  const client = new acme.Client({
    directoryUrl: settings.directoryUrl,
    accountKey: box.open(sealed),
    ...(existing?.account_url ? { accountUrl: existing.account_url } : {}),
  });
  if (!existing?.account_url) {
    await client.createAccount({
      termsOfServiceAgreed: true,
      ...(settings.email ? { contact: [`mailto:${settings.email}`] } : {}),
    });
    await ds.query('UPDATE acme_accounts SET account_url = $2 WHERE directory_url = $1', [
      settings.directoryUrl,
      client.getAccountUrl(),
    ]);
  }
  return client;
}

/**
 * One ACME order for `name` (RFC 8555), answered by HTTP-01: the key authorization is
 * written to `acme_challenges`, which the ingress serves at
 * `/.well-known/acme-challenge/<token>` on plain HTTP, and removed once the order is done.
 * The certificate's key is a fresh ECDSA P-256 key. `beat` is called while it waits.
 */
export async function orderCertificate(
  ds: DataSource,
  box: SecretBox,
  settings: AcmeSettings,
  name: string,
  beat: () => void,
): Promise<IssuedCertificate> {
  trustDirectoryCa(settings.caFile);
  const client = await accountClient(ds, box, settings);
  beat();
  const keyPem = (await acme.crypto.createPrivateEcdsaKey('P-256')).toString();
  const [, csr] = await acme.crypto.createCsr({ commonName: name, altNames: [name] }, keyPem);
  const chainPem = await client.auto({
    csr,
    challengePriority: ['http-01'],
    termsOfServiceAgreed: true,
    // the ACME server checks the answer; a check from here would only ask this machine's resolver
    skipChallengeVerification: true,
    challengeCreateFn: async (_authz, challenge, keyAuthorization) => {
      beat();
      await ds.query(
        `INSERT INTO acme_challenges (token, key_authorization, domain_name) VALUES ($1, $2, $3)
         ON CONFLICT (token) DO UPDATE SET key_authorization = EXCLUDED.key_authorization`,
        [challenge.token, keyAuthorization, name],
      );
    },
    challengeRemoveFn: async (_authz, challenge) => {
      beat();
      await ds.query('DELETE FROM acme_challenges WHERE token = $1', [challenge.token]);
    },
  });
  return { chainPem, keyPem };
}

/**
 * An ACME failure in plain words for the domain's record: the problem document's detail
 * when the server sent one (acme-client puts it in the message), without stack or key material.
 */
export function acmeFailureText(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as NodeJS.ErrnoException).code;
  const text = code && !message.includes(code) ? `${message} (${code})` : message;
  return text.replace(/-----BEGIN[^]*?-----END[^-]*-----/g, '[pem]').slice(0, 500);
}
