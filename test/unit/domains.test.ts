import {
  dnsTargetOf,
  domainNameProblem,
  txtRecordName,
  verifyDelayMinutes,
  verifySchedule,
  VERIFY_MAX_ATTEMPTS,
  wwwRoot,
} from '../../domain/domains';
import { dnsServer, loadConfig } from '../../platform/config';

describe('domain rules', () => {
  it('DOM-06 waits Fibonacci minutes between checks, capped at 60', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12].map(verifyDelayMinutes)).toEqual([
      1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 60, 60,
    ]);
    expect(verifyDelayMinutes(500)).toBe(60);
    expect(verifySchedule()).toHaveLength(VERIFY_MAX_ATTEMPTS - 1);
    // 30 checks span about 21 hours
    expect(verifySchedule().reduce((a, b) => a + b, 0)).toBe(1283);
  });

  it('DOM-02 the token is published at _platformapp-verify.<domain>', () => {
    expect(txtRecordName('shop.example.com')).toBe('_platformapp-verify.shop.example.com');
  });

  it('accepts host names and explains refusals', () => {
    for (const ok of ['example.com', 'www.example.co.uk', 'a-b.c0.example', 'xn--bcher-kva.example'])
      expect(domainNameProblem(ok)).toBeNull();
    for (const bad of [
      'com',
      'Example.com',
      'exa_mple.com',
      '-a.com',
      'a-.com',
      'a..com',
      '*.a.com',
      '10.0.0.1',
      'a.com.',
      `${'a'.repeat(64)}.com`,
      `${'a.'.repeat(127)}com`,
    ]) {
      expect(`${bad}: ${domainNameProblem(bad) === null ? 'accepted' : 'refused'}`).toBe(`${bad}: refused`);
    }
  });

  it('DOM-08 only a www subdomain inherits its root', () => {
    expect(wwwRoot('www.example.com')).toBe('example.com');
    expect(wwwRoot('www.com')).toBeNull();
    expect(wwwRoot('api.example.com')).toBeNull();
    expect(dnsTargetOf('web-1a2b3c', 'fra.berth.example')).toBe('web-1a2b3c.fra.berth.example');
  });

  it('BERTH_DNS_SERVERS takes ip, ip:port, ipv6 and [ipv6]:port, and refuses anything else', () => {
    expect(loadConfig({ BERTH_DNS_SERVERS: '127.0.0.1:5353, 1.1.1.1,::1,[::1]:53' }).dnsServers).toEqual([
      '127.0.0.1:5353',
      '1.1.1.1',
      '::1',
      '[::1]:53',
    ]);
    for (const bad of [
      'dns.example.com',
      '127.0.0.1:0',
      '127.0.0.1:70000',
      '127.0.0.1:x',
      '[127.0.0.1]:53',
      '1.2.3.4:53:53',
    ]) {
      expect(() => dnsServer(bad)).toThrow(/BERTH_DNS_SERVERS/);
    }
  });
});
