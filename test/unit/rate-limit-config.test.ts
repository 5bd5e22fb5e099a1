import { loadConfig, parseRateLimit } from '../../platform/config';

describe('BERTH_RATE_LIMIT', () => {
  it('reads requests per window in seconds, minutes or hours, 600 per minute by default', () => {
    expect(loadConfig({}).rateLimit).toEqual({ points: 600, durationSeconds: 60 });
    expect(parseRateLimit('600/60s')).toEqual({ points: 600, durationSeconds: 60 });
    expect(parseRateLimit(' 100 / 1m ')).toEqual({ points: 100, durationSeconds: 60 });
    expect(parseRateLimit('5000/1h')).toEqual({ points: 5000, durationSeconds: 3600 });
  });

  it('stops the start with a clear message for anything else', () => {
    for (const bad of ['600', '600/60', '0/60s', '10/0s', 'x/60s', '600/60d', '-1/60s']) {
      expect(() => parseRateLimit(bad)).toThrow(/BERTH_RATE_LIMIT must read <requests>\/<window>/);
    }
    expect(() => loadConfig({ BERTH_RATE_LIMIT: 'lots' })).toThrow(/BERTH_RATE_LIMIT/);
  });
});
