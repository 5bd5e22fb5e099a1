import pino from 'pino';
import { openWorkloadNetwork } from '../../activities/provider/local/network/open';
import { vpcRangeProblems } from '../../domain/vpc';
import { loadConfig } from '../../platform/config';
import {
  blockAt,
  blockCount,
  gatewayOf,
  ipToNumber,
  parseCidr,
  workloadAddresses,
} from '../../platform/workload-addresses';

describe('BERTH_WORKLOAD_NETWORK', () => {
  it('defaults to 10.200.0.0/13; `off` turns the workload network off; a range that is not one stops the start', () => {
    expect(loadConfig({}).workloadNetwork).toBe('10.200.0.0/13');
    expect(loadConfig({ BERTH_WORKLOAD_NETWORK: '10.64.0.0/16' }).workloadNetwork).toBe('10.64.0.0/16');
    expect(loadConfig({ BERTH_WORKLOAD_NETWORK: 'off' }).workloadNetwork).toBeNull();
    expect(() => loadConfig({ BERTH_WORKLOAD_NETWORK: 'everything' })).toThrow(/BERTH_WORKLOAD_NETWORK/);
    expect(() => loadConfig({ BERTH_WORKLOAD_NETWORK: '10.0.0.0/24' })).toThrow(/from \/8 to \/22/);
  });

  it('VPC-04 the workload network is a platform network: a VPC range overlapping it gets 422', () => {
    const config = loadConfig({});
    expect(config.platformNetworks).toEqual(['10.42.0.0/16', '10.43.0.0/16', '10.200.0.0/13']);
    expect(
      vpcRangeProblems('10.200.0.0/16', config.platformNetworks)
        .map((p) => p.message)
        .join(),
    ).toMatch(/10\.200\.0\.0\/13/);
    expect(vpcRangeProblems('10.224.0.0/16', config.platformNetworks)).toEqual([]);
    expect(loadConfig({ BERTH_WORKLOAD_NETWORK: 'off' }).platformNetworks).toEqual(['10.42.0.0/16', '10.43.0.0/16']);
  });

  it('turned off, the banner says plainly that tenant network isolation is off and why', async () => {
    const net = await openWorkloadNetwork(
      { dataDir: '/nonexistent', workloadNetwork: null },
      pino({ level: 'silent' }),
    );
    expect(net.fabric).toBeNull();
    expect(net.summary).toMatch(/^TENANT NETWORK ISOLATION OFF \(BERTH_WORKLOAD_NETWORK=off\): apps share/);
  });

  it('cuts the range into /22 blocks, each with its gateway first', () => {
    const range = parseCidr('10.200.0.0/13');
    expect(blockCount(range)).toBe(512);
    const last = blockAt(range, 511);
    expect(gatewayOf(blockAt(range, 0))).toBe('10.200.0.1');
    expect(gatewayOf(last)).toBe('10.207.252.1');
    expect(workloadAddresses(last)).toEqual({ first: ipToNumber('10.207.252.2'), last: ipToNumber('10.207.255.254') });
  });
});
