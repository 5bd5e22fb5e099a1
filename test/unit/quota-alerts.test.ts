import { quotaCrossings, type ResourceUsage } from '../../domain/quota-alerts';

const usage = (cpu: number, ram = 0, disk = 0): ResourceUsage => ({
  cpu: { allocated: cpu, total: 2 },
  ram: { allocated: ram, total: 100 },
  disk: { allocated: disk, total: 100 },
});

describe('quota alert crossings', () => {
  it('an allocation rising to or past 80% and 100% crosses each threshold once', () => {
    expect(quotaCrossings(usage(1.5), usage(1.6))).toEqual([
      { dimension: 'cpu', threshold_percent: 80, allocated: 1.6, total: 2 },
    ]);
    expect(quotaCrossings(usage(0), usage(2))).toEqual([
      { dimension: 'cpu', threshold_percent: 80, allocated: 2, total: 2 },
      { dimension: 'cpu', threshold_percent: 100, allocated: 2, total: 2 },
    ]);
    expect(
      quotaCrossings(usage(0, 79, 90), usage(0, 80, 100)).map((c) => `${c.dimension}:${c.threshold_percent}`),
    ).toEqual(['ram:80', 'disk:100']);
  });

  it('staying above a threshold, staying below, or falling crosses nothing', () => {
    expect(quotaCrossings(usage(1.7), usage(1.8))).toEqual([]);
    expect(quotaCrossings(usage(0.2), usage(1.5))).toEqual([]);
    expect(quotaCrossings(usage(2), usage(1))).toEqual([]);
  });

  it('a resource without capacity in a dimension never alerts on it', () => {
    const none: ResourceUsage = {
      cpu: { allocated: 0, total: 0 },
      ram: { allocated: 1, total: 0 },
      disk: { allocated: 0, total: 0 },
    };
    expect(quotaCrossings(none, { ...none, ram: { allocated: 5, total: 0 } })).toEqual([]);
  });
});
