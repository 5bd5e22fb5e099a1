import fc from 'fast-check';
import {
  attachmentFqdn,
  cidr4,
  defaultSubnet,
  deriveVpcAddressing,
  formatCidr4,
  overlaps,
  parseCidr4,
  subnetProblems,
  subnetV6Of,
  ulaPrefixOf,
  v6Overlaps,
  v6Within,
  vpcRangeProblems,
  vpnPoolAddresses,
  vpnPoolV4,
  vpnTerminatorV4,
  GATEWAY_KINDS,
  reservedBlock,
  contains,
} from '../../domain/vpc';
import { generateWireguardKeyPair, isWireguardKey, wireguardPublicKey } from '../../domain/wireguard';

const PLATFORM = ['10.42.0.0/16', '10.43.0.0/16'];
const rules = (text: string, platform = PLATFORM) => vpcRangeProblems(text, platform).map((p) => p.rule);

describe('VPC ranges', () => {
  it.each([
    ['10.0.0.0/8', []],
    ['10.224.0.0/16', []],
    ['172.16.0.0/12', []],
    ['172.31.252.0/22', []],
    ['192.168.0.0/16', []],
    ['192.168.252.0/22', []],
  ])('VPC-02 accepts the RFC1918 range %s', (text, expected) => {
    expect(rules(text, [])).toEqual(expected);
  });

  it.each([
    ['11.0.0.0/16'],
    ['9.255.252.0/22'],
    ['172.15.252.0/22'],
    ['172.32.0.0/16'],
    ['192.167.252.0/22'],
    ['192.169.0.0/16'],
    ['100.64.0.0/16'],
    ['8.8.8.0/22'],
    ['0.0.0.0/0'],
    ['172.0.0.0/8'],
    ['192.168.0.0/15'],
    ['10.0.0.0/7'],
  ])('VPC-02 refuses %s: not inside RFC1918', (text) => {
    expect(rules(text)).toContain('rfc1918');
  });

  it.each([
    ['10.0.0.0/22', true],
    ['10.0.0.0/21', true],
    ['10.0.0.0/16', true],
    ['10.0.0.0/23', false],
    ['10.0.0.0/24', false],
    ['192.168.1.0/28', false],
    ['10.0.0.1/32', false],
  ])('VPC-03 %s is accepted by size: %s (/22 is the smallest)', (text, ok) => {
    expect(rules(text).includes('too_small')).toBe(!ok);
  });

  it.each([
    ['10.42.0.0/16', true],
    ['10.42.128.0/22', true],
    ['10.40.0.0/14', true],
    ['10.0.0.0/8', true],
    ['10.44.0.0/16', false],
    ['10.224.0.0/16', false],
    ['10.41.252.0/22', false],
  ])('VPC-04 %s overlaps a platform network: %s', (text, overlapping) => {
    expect(rules(text).includes('platform_network')).toBe(overlapping);
  });

  it('VPC-04 the default range does not overlap the default platform networks', () => {
    expect(rules('10.224.0.0/16')).toEqual([]);
  });

  it('refuses malformed ranges and ranges with host bits set', () => {
    for (const bad of [
      '10.224.0.0',
      '10.224.0.0/33',
      '10.224.0.0/016',
      '010.224.0.0/16',
      '10.224.0.256/24',
      'fd00::/48',
      ' 10.0.0.0/16',
    ]) {
      expect(rules(bad)).toEqual(['format']);
    }
    expect(rules('10.224.1.0/16')).toEqual(['network_address']);
  });

  it('VPC-06 the default subnet is the /24 after the reserved block', () => {
    expect(formatCidr4(defaultSubnet(cidr4('10.224.0.0/16')))).toBe('10.224.1.0/24');
    expect(formatCidr4(defaultSubnet(cidr4('192.168.4.0/22')))).toBe('192.168.5.0/24');
  });

  it('VPC-08 VPC-09 derives resolver (base + 2), VPN pool and a ULA /48', () => {
    const uuid = '6f1d2c3b-4a59-4e87-9d10-a1b2c3d4e5f6';
    const d = deriveVpcAddressing(uuid, '10.224.0.0/16');
    expect(d.resolverV4).toBe('10.224.0.2');
    expect(d.routerV4).toBe('10.224.0.1');
    expect(d.vpnPoolV4).toBe('10.224.0.128/25');
    expect(d.cidrV6).toBe('fdb2:c3d4:e5f6::/48');
    expect(deriveVpcAddressing(uuid, '172.20.8.0/22').resolverV4).toBe('172.20.8.2');
  });

  it('VPC-09 the IPv6 range is stable per VPC across restarts (a function of the uuid only) and differs between VPCs', () => {
    fc.assert(
      fc.property(fc.uuid({ version: 4 }), fc.uuid({ version: 4 }), (a, b) => {
        expect(ulaPrefixOf(a)).toBe(ulaPrefixOf(a));
        expect(ulaPrefixOf(a)).toMatch(/^fd[0-9a-f]{2}:[0-9a-f:]+\/48$/);
        if (a.slice(-10) !== b.slice(-10)) expect(ulaPrefixOf(a)).not.toBe(ulaPrefixOf(b));
      }),
    );
    // A value computed by an earlier process is the value computed now.
    expect(ulaPrefixOf('00000000-0000-4000-8000-0123456789ab')).toBe('fd23:4567:89ab::/48');
  });

  it('VPN pool addresses leave out the first and last address', () => {
    const pool = vpnPoolAddresses(vpnPoolV4(cidr4('10.224.0.0/16')));
    expect(pool[0]).toBe('10.224.0.129');
    expect(pool.at(-1)).toBe('10.224.0.254');
    expect(pool).toHaveLength(126);
  });

  it('VPN terminators follow the router and resolver, one per gateway kind, below the VPN pool', () => {
    const vpc = cidr4('10.224.0.0/16');
    expect(GATEWAY_KINDS.map((k) => vpnTerminatorV4(vpc, k))).toEqual(['10.224.0.3', '10.224.0.4', '10.224.0.5']);
    for (const kind of GATEWAY_KINDS) {
      const at = cidr4(`${vpnTerminatorV4(vpc, kind)}/32`);
      expect(contains(reservedBlock(vpc), at)).toBe(true);
      expect(overlaps(vpnPoolV4(vpc), at)).toBe(false);
    }
  });
});

describe('subnets', () => {
  const vpc = '10.224.0.0/16';
  it.each([
    ['10.224.2.0/24', [], []],
    ['10.224.1.0/24', [], []],
    ['10.224.128.0/17', [], []],
    ['10.224.2.0/29', [], []],
    ['10.225.0.0/24', [], ['outside_vpc']],
    ['10.224.0.0/24', [], ['reserved']],
    ['10.224.0.128/25', [], ['reserved']],
    ['10.224.0.0/16', [], ['reserved']],
    ['10.224.2.0/30', [], ['too_small']],
    ['10.224.2.0/23', ['10.224.3.0/24'], ['overlap']],
    ['10.224.3.128/25', ['10.224.3.0/24'], ['overlap']],
    ['10.224.4.0/24', ['10.224.3.0/24', '10.224.5.0/24'], []],
  ])('SUB-05 %s beside %j: %j', (text, siblings, expected) => {
    expect(subnetProblems(vpc, text, siblings).map((p) => p.rule)).toEqual(expected);
  });

  it('SUB-05 property: no two accepted subnets of a VPC overlap', () => {
    const vpcRange = cidr4('10.224.0.0/16');
    const candidate = fc
      .record({ offset: fc.integer({ min: 0, max: 2 ** 16 - 1 }), prefix: fc.integer({ min: 14, max: 31 }) })
      .map(({ offset, prefix }) => {
        const m = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
        return formatCidr4({ base: ((vpcRange.base + offset) & m) >>> 0, prefix });
      });
    fc.assert(
      fc.property(fc.array(candidate, { maxLength: 40 }), (candidates) => {
        const accepted: string[] = [];
        for (const c of candidates) if (subnetProblems(vpc, c, accepted).length === 0) accepted.push(c);
        for (let i = 0; i < accepted.length; i++) {
          for (let j = i + 1; j < accepted.length; j++)
            expect(overlaps(cidr4(accepted[i]!), cidr4(accepted[j]!))).toBe(false);
          expect(overlaps(cidr4(accepted[i]!), cidr4('10.224.0.0/24'))).toBe(false);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('SUB-03 a subnet /64 is derived inside the VPC /48, distinct for distinct subnets', () => {
    const v6 = ulaPrefixOf('00000000-0000-4000-8000-0123456789ab');
    const a = subnetV6Of(v6, cidr4(vpc), cidr4('10.224.1.0/24'));
    const b = subnetV6Of(v6, cidr4(vpc), cidr4('10.224.2.0/24'));
    expect(a).toBe('fd23:4567:89ab:100::/64');
    expect(v6Within(v6, a)).toBe(true);
    expect(v6Within(v6, b)).toBe(true);
    expect(v6Overlaps(a, b)).toBe(false);
    expect(subnetV6Of(v6, cidr4(vpc), cidr4('10.224.1.0/24'))).toBe(a);
  });

  it('parses strictly', () => {
    expect(parseCidr4('10.1.2.3/8')).toEqual({ base: 0x0a010203, prefix: 8 });
    expect(parseCidr4('1.2.3/8')).toBeNull();
  });
});

describe('attachment names', () => {
  it('ATT-04 an attached workload gets an fqdn; a cron job gets none', () => {
    expect(attachmentFqdn({ name: 'web-x1y2', cronJob: false }, 'default', 'local.berth.localhost')).toBe(
      'web-x1y2.default.vpc.local.berth.localhost',
    );
    expect(attachmentFqdn({ name: 'nightly', cronJob: true }, 'default', 'local.berth.localhost')).toBeNull();
  });
});

describe('WireGuard keys', () => {
  it('VPN-06 real X25519 key pairs: the public key derives from the private key', () => {
    for (let i = 0; i < 20; i++) {
      const pair = generateWireguardKeyPair();
      expect(isWireguardKey(pair.privateKey)).toBe(true);
      expect(isWireguardKey(pair.publicKey)).toBe(true);
      expect(wireguardPublicKey(pair.privateKey)).toBe(pair.publicKey);
    }
  });

  it('matches the RFC 7748 test vector', () => {
    // RFC 7748 section 6.1: Alice's private key and public key.
    const priv = Buffer.from('77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a', 'hex').toString(
      'base64',
    );
    const pub = Buffer.from('8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a', 'hex').toString(
      'base64',
    );
    expect(wireguardPublicKey(priv)).toBe(pub);
  });
});
