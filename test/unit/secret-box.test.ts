import { randomBytes } from 'node:crypto';
import { SecretBox } from '../../domain/secret-box';
import { generateToken, hashToken, looksLikeToken } from '../../domain/tokens';

describe('secret box (AES-256-GCM at rest)', () => {
  const k1 = randomBytes(32);
  const k2 = randomBytes(32);

  it('seals and opens; the same plaintext seals differently each time', () => {
    const box = new SecretBox([{ kid: 'k1', key: k1 }]);
    const a = box.seal('whsec_secret');
    const b = box.seal('whsec_secret');
    expect(a).not.toEqual(b);
    expect(a).not.toContain('whsec_secret');
    expect(box.open(a)).toBe('whsec_secret');
  });

  it('rotates keys: the first key seals, every key of the ring opens', () => {
    const old = new SecretBox([{ kid: 'k1', key: k1 }]);
    const sealed = old.seal('value');
    const rotated = SecretBox.fromKeyring(`k2:${k2.toString('base64')},k1:${k1.toString('base64')}`);
    expect(rotated.open(sealed)).toBe('value');
    expect(rotated.isStale(sealed)).toBe(true);
    expect(rotated.isStale(rotated.seal('value'))).toBe(false);
  });

  it('refuses a tampered value and an unknown key', () => {
    const box = new SecretBox([{ kid: 'k1', key: k1 }]);
    const sealed = box.seal('value');
    const parts = sealed.split('.');
    parts[4] = Buffer.from('tampered').toString('base64url');
    expect(() => box.open(parts.join('.'))).toThrow();
    expect(() => new SecretBox([{ kid: 'k9', key: k2 }]).open(sealed)).toThrow(/no key "k1"/);
    expect(() => new SecretBox([{ kid: 'short', key: randomBytes(16) }])).toThrow(/32 bytes/);
  });
});

describe('API tokens', () => {
  it('are brt_ + 32 random bytes, stored as SHA-256 only', () => {
    const t = generateToken();
    expect(looksLikeToken(t)).toBe(true);
    expect(Buffer.from(t.slice(4), 'base64url')).toHaveLength(32);
    expect(hashToken(t)).toMatch(/^[0-9a-f]{64}$/);
    expect(generateToken()).not.toEqual(t);
  });
});
