import { Webhook as StandardWebhook } from 'standardwebhooks';
import { generateWebhookSecret, signWebhook, webhookHeaders } from '../../domain/webhook-signature';
import { loadConfig } from '../../platform/config';
import {
  WEBHOOK_MAX_ATTEMPTS,
  WEBHOOK_RETRY_DELAYS_MS,
  webhookAttemptOffsetMs,
  webhookRetryDelayMs,
} from '../../domain/webhooks';

describe('Standard Webhooks signatures', () => {
  it('WH-09 reproduces the published Standard Webhooks test vector byte for byte', () => {
    // standard-webhooks, libraries/javascript/src/webhook.test.ts, "sign function works".
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const signature = signWebhook(secret, 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}');
    expect(signature).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
    expect(
      new StandardWebhook(secret).sign(
        'msg_p5jXN8AQM9LWM0D4loKWxJek',
        new Date(1614265330 * 1000),
        '{"test": 2432232314}',
      ),
    ).toBe(signature);
  });

  it('WH-08 WH-09 a Berth signature verifies with the independent standardwebhooks package; any change breaks it', () => {
    const secret = generateWebhookSecret();
    const body = JSON.stringify({
      id: 'evt-1',
      type: 'deploy_started',
      timestamp: new Date().toISOString(),
      data: { app_id: 'a', message: 'é✓' },
    });
    const now = Math.floor(Date.now() / 1000);
    const headers = webhookHeaders(secret, 'evt-1', now, body);
    expect(Object.keys(headers).sort()).toEqual(['webhook-id', 'webhook-signature', 'webhook-timestamp']);
    expect(new StandardWebhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new StandardWebhook(secret).verify(`${body} `, headers)).toThrow();
    expect(() => new StandardWebhook(secret).verify(body, { ...headers, 'webhook-id': 'evt-2' })).toThrow();
    expect(() => new StandardWebhook(generateWebhookSecret()).verify(body, headers)).toThrow();
  });

  it('WH-10 secrets are whsec_ plus at least 24 random bytes, never the same twice', () => {
    const secrets = new Set(Array.from({ length: 50 }, generateWebhookSecret));
    expect(secrets.size).toBe(50);
    for (const s of secrets) expect(Buffer.from(s.slice('whsec_'.length), 'base64').length).toBeGreaterThanOrEqual(24);
  });
});

describe('the retry schedule', () => {
  it('WH-11 9 attempts: waits of 30 s, 2 m, 8 m, 30 m, 1 h, 3 h, 8 h, 12 h, each jittered within 10 %', () => {
    expect(WEBHOOK_MAX_ATTEMPTS).toBe(9);
    expect(WEBHOOK_RETRY_DELAYS_MS).toEqual([30, 120, 480, 1800, 3600, 10800, 28800, 43200].map((s) => s * 1000));
    expect(webhookAttemptOffsetMs(1)).toBe(0);
    expect(webhookAttemptOffsetMs(9)).toBe(WEBHOOK_RETRY_DELAYS_MS.reduce((a, b) => a + b));
    for (let next = 2; next <= 9; next++) {
      const nominal = WEBHOOK_RETRY_DELAYS_MS[next - 2]!;
      expect(webhookRetryDelayMs(next, 0)).toBe(Math.round(nominal * 0.9));
      expect(webhookRetryDelayMs(next, 0.5)).toBe(nominal);
      expect(webhookRetryDelayMs(next, 0.999999)).toBeLessThanOrEqual(Math.round(nominal * 1.1));
    }
    expect(() => webhookRetryDelayMs(10, 0.5)).toThrow(RangeError);
  });
});

describe('configuration', () => {
  it('a malformed BERTH_WEBHOOK_ALLOW_CIDRS stops the start with a clear message', () => {
    expect(() => loadConfig({ BERTH_WEBHOOK_ALLOW_CIDRS: '127.0.0.2/32,not-a-range' })).toThrow(
      /"not-a-range" is not an address range/,
    );
    expect(loadConfig({ BERTH_WEBHOOK_ALLOW_CIDRS: '127.0.0.2/32, ::1/128' }).webhookAllowCidrs).toEqual([
      '127.0.0.2/32',
      '::1/128',
    ]);
  });
});
