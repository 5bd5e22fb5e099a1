import { registryRefusal } from '../../activities/provider/local/images/registry-reach';
import { parseAllowList } from '../../domain/webhook-destination';

/**
 * Where a tenant's image may be pulled from (registry-reach.ts): public registries, and the
 * ranges the operator lists in BERTH_REGISTRY_ALLOW_CIDRS.
 */
describe("a tenant's image registry", () => {
  const none = parseAllowList([]);

  it.each([
    ['127.0.0.1:5000', 'is in loopback space'],
    ['[::1]:5000', 'is the loopback address'],
    ['10.1.2.3', 'is in private (RFC1918) space'],
    ['169.254.169.254:80', 'link-local'],
    ['100.64.0.7:443', 'CGNAT'],
    ['localhost:5000', 'is a loopback name'],
    ['registry.internal', 'is an internal (.internal) name'],
    ['registry', 'single-label name'],
  ])('%s is refused, with the reason and the operator setting', async (registry, reason) => {
    const refused = await registryRefusal(registry, none);
    expect(refused).toContain(`${registry} is not one`);
    expect(refused).toContain(reason);
    expect(refused).toContain('BERTH_REGISTRY_ALLOW_CIDRS');
  });

  it('a public address passes; a listed range lets a private one through, and only that range', async () => {
    expect(await registryRefusal('203.0.114.10:443', none)).toBeNull();
    const allow = parseAllowList(['127.0.0.1/32', '10.20.0.0/16']);
    expect(await registryRefusal('127.0.0.1:5000', allow)).toBeNull();
    expect(await registryRefusal('10.20.3.4', allow)).toBeNull();
    expect(await registryRefusal('127.0.0.2:5000', allow)).toMatch(/loopback space/);
    expect(await registryRefusal('10.21.0.1', allow)).toMatch(/RFC1918/);
    // a name is never let through by a range: the operator writes the address
    expect(await registryRefusal('localhost:5000', allow)).toMatch(/loopback name/);
  });

  it('a malformed range stops the start', () => {
    expect(() => parseAllowList(['10.0.0.0/33'], 'BERTH_REGISTRY_ALLOW_CIDRS')).toThrow(
      'BERTH_REGISTRY_ALLOW_CIDRS: "10.0.0.0/33" is not an address range',
    );
  });
});
