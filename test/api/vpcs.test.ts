import fc from 'fast-check';
import { SimulatedCore } from '../../activities/provider/simulated';
import { cidr4, formatCidr4, mask, overlaps, ulaPrefixOf } from '../../domain/vpc';
import { createResource, seedWorkspace, tokenWith, type Workspace } from '../support/fixtures';
import { tableCounts } from '../support/db';
import { eventually, startStack, type TestStack } from '../support/stack';
import { activeVpc, auth } from '../support/vpc';
import { useVpcDriver, VPC_DRIVERS, type VpcPlane } from '../support/vpc-drivers';

/**
 * The VPC and subnet rules, on every driver that builds VPCs (test/support/vpc-drivers.ts):
 * the simulated one, and the local one's router namespaces and resolvers in the kernel.
 */
describe.each(VPC_DRIVERS)('on the %s driver', (kind) => {
  let stack: TestStack;
  let ws: Workspace;
  let plane: VpcPlane;

  beforeAll(async () => {
    stack = await startStack();
    ws = await seedWorkspace(stack.ds);
    plane = await useVpcDriver(stack, kind);
    await stack.startWorker();
  });
  afterAll(async () => {
    await plane.close();
    await stack.close();
  });

  const simulatedOnly = kind === 'simulated' ? it : it.skip;

  const post = (body: Record<string, unknown>, token = ws.ownerToken) =>
    stack.http.post('/api/v1/vpcs').set(auth(token)).send(body);

  describe('VPCs', () => {
    let created: any;

    it('VPC-01 VPC-05 VPC-06 VPC-15 VPC-17 POST /vpcs needs only region_id: pending, nulls, name default, 10.224.0.0/16, one default subnet', async () => {
      const res = await post({ region_id: ws.regionId });
      expect(res.status).toBe(201);
      created = res.body;
      expect(res.headers.location).toBe(`/api/v1/vpcs/${created.uuid}`);
      expect(created).toMatchObject({
        name: 'default',
        label: 'default',
        status: 'pending',
        region_code: 'local',
        cidr_v4: '10.224.0.0/16',
        cidr_v6: null,
        resolver_v4: null,
        vpn_pool_v4: null,
        subnet_count: 1,
        attachment_count: 0,
        is_default: true,
      });
      for (const key of [
        'uuid',
        'name',
        'label',
        'status',
        'region_code',
        'cidr_v4',
        'cidr_v6',
        'resolver_v4',
        'vpn_pool_v4',
        'subnet_count',
        'attachment_count',
        'created_at',
      ]) {
        expect(created).toHaveProperty(key);
      }
      const subnets = await stack.http.get(`/api/v1/vpcs/${created.uuid}/subnets`).set(auth(ws.ownerToken));
      expect(subnets.status).toBe(200);
      expect(subnets.body).toHaveLength(1);
      expect(subnets.body[0]).toMatchObject({
        name: 'default',
        cidr_v4: '10.224.1.0/24',
        family: 'dual',
        public: true,
      });
    });

    it('VPC-07 VPC-08 VPC-09 VPC-14 a later GET shows the VPC active with derived cidr_v6 (ULA /48 of its uuid), resolver base + 2 and VPN pool', async () => {
      const active = await eventually(
        async () => {
          const got = await stack.http.get(`/api/v1/vpcs/${created.uuid}`).set(auth(ws.ownerToken));
          return got.body.status === 'active' ? got.body : null;
        },
        { what: 'VPC active' },
      );
      expect(active).toMatchObject({
        cidr_v6: ulaPrefixOf(created.uuid),
        resolver_v4: '10.224.0.2',
        vpn_pool_v4: '10.224.0.128/25',
        subnet_count: 1,
      });
      expect(active.cidr_v6).toMatch(/^fd/);
      const subnets = await stack.http.get(`/api/v1/vpcs/${created.uuid}/subnets`).set(auth(ws.ownerToken));
      expect(subnets.body[0].cidr_v6).toBe(`${ulaPrefixOf(created.uuid).replace('::/48', '')}:100::/64`);
      // The driver holds the VPC's router and its resolver, at the range base plus two.
      expect(await plane.built(created.uuid)).toEqual({ router: true, resolver: '10.224.0.2' });
      const handle = stack.temporal.workflow.getHandle(`vpc-create/${created.uuid}`);
      expect(await handle.query('state')).toBe('active');
    });

    it.each([
      ['8.8.0.0/16', 'VPC-02'],
      ['100.64.0.0/16', 'VPC-02'],
      ['10.1.0.0/23', 'VPC-03'],
      ['192.168.10.0/24', 'VPC-03'],
      ['10.42.0.0/16', 'VPC-04'],
      ['10.43.128.0/22', 'VPC-04'],
    ])('VPC-02 VPC-03 VPC-04 refuses %s with 422 (%s) and writes nothing', async (cidr) => {
      const before = await tableCounts(stack.ds);
      const res = await post({ region_id: ws.regionId, name: 'refused', cidr_v4: cidr });
      expect(res.status).toBe(422);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(res.body.errors[0].path).toBe('body.cidr_v4');
      expect(await tableCounts(stack.ds)).toEqual(before);
    });

    // driver-independent: a configuration read by the API (proved once)
    simulatedOnly('VPC-04 the platform networks are configurable', async () => {
      const other = await startStack({ env: { BERTH_PLATFORM_NETWORKS: '10.224.0.0/12' } });
      try {
        const w = await seedWorkspace(other.ds);
        const res = await other.http.post('/api/v1/vpcs').set(auth(w.ownerToken)).send({ region_id: w.regionId });
        expect(res.status).toBe(422);
        expect(res.body.detail).toContain('10.224.0.0/12');
        expect(
          (
            await other.http
              .post('/api/v1/vpcs')
              .set(auth(w.ownerToken))
              .send({ region_id: w.regionId, cidr_v4: '10.42.0.0/16' })
          ).status,
        ).toBe(201);
      } finally {
        await other.close();
      }
    });

    it('refuses malformed ranges with 400 and unknown regions with 422', async () => {
      expect((await post({ region_id: ws.regionId, cidr_v4: '10.224.0/16' })).status).toBe(400);
      expect((await post({ region_id: '1' })).status).toBe(400);
      expect((await post({})).status).toBe(400);
      expect((await post({ region_id: 999999 })).status).toBe(422);
      const hostBits = await post({ region_id: ws.regionId, name: 'hostbits', cidr_v4: '10.224.1.0/16' });
      expect(hostBits.status).toBe(422);
      expect(hostBits.body.detail).toContain('10.224.0.0/16');
    });

    it('VPC-10 a name is unique per region; a VPC lives in one region', async () => {
      const dup = await post({ region_id: ws.regionId });
      expect(dup.status).toBe(409);
      const second = await seedWorkspace(stack.ds, { regionCode: 'eu-west' });
      // Same workspace, another region: the same name is fine there.
      const resourceInEu = await createResource(stack.ds.manager, ws.uuid, second.regionId, 'eu-res');
      expect(resourceInEu).toBeTruthy();
      const eu = await post({ region_id: second.regionId });
      expect(eu.status).toBe(201);
      expect(eu.body).toMatchObject({
        name: 'default',
        region_code: 'eu-west',
        region_id: second.regionId,
        is_default: true,
      });
    });

    it('VPC-11 PUT changes only label and is_default; name and ranges are fixed (400)', async () => {
      const res = await stack.http
        .put(`/api/v1/vpcs/${created.uuid}`)
        .set(auth(ws.ownerToken))
        .send({ label: 'Production network' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ label: 'Production network', name: 'default', cidr_v4: '10.224.0.0/16' });
      for (const body of [
        { name: 'renamed' },
        { cidr_v4: '10.225.0.0/16' },
        { cidr_v6: 'fd00::/48' },
        { region_id: 1 },
      ]) {
        const refused = await stack.http.put(`/api/v1/vpcs/${created.uuid}`).set(auth(ws.ownerToken)).send(body);
        expect(refused.status).toBe(400);
      }
      expect((await stack.http.get(`/api/v1/vpcs/${created.uuid}`).set(auth(ws.ownerToken))).body.name).toBe('default');
    });

    it('VPC-12 setting is_default while another VPC of the region holds it gets 422; unsetting first works', async () => {
      const second = await activeVpc(stack, ws, { name: 'second', cidr_v4: '10.225.0.0/16' });
      expect(second.is_default).toBe(false);
      const refused = await stack.http
        .put(`/api/v1/vpcs/${second.uuid}`)
        .set(auth(ws.ownerToken))
        .send({ is_default: true });
      expect(refused.status).toBe(422);
      expect(refused.body.detail).toContain('default');
      expect(
        (await stack.http.put(`/api/v1/vpcs/${created.uuid}`).set(auth(ws.ownerToken)).send({ is_default: '0' })).body
          .is_default,
      ).toBe(false);
      const moved = await stack.http
        .put(`/api/v1/vpcs/${second.uuid}`)
        .set(auth(ws.ownerToken))
        .send({ is_default: true });
      expect(moved.status).toBe(200);
      expect(moved.body.is_default).toBe(true);
    });

    it('VPC-16 GET /vpcs lists every VPC of the workspace (GEN-05), newest first; other workspaces never see them', async () => {
      const list = await stack.http.get('/api/v1/vpcs').set(auth(ws.ownerToken));
      expect(list.status).toBe(200);
      expect(Array.isArray(list.body)).toBe(true);
      expect(list.body.map((v: { name: string }) => v.name)).toEqual(['second', 'default', 'default']);
      expect(list.headers['x-total-count']).toBe('3');
      const stranger = await seedWorkspace(stack.ds);
      expect((await stack.http.get('/api/v1/vpcs').set(auth(stranger.ownerToken))).body).toEqual([]);
      expect((await stack.http.get(`/api/v1/vpcs/${created.uuid}`).set(auth(stranger.ownerToken))).status).toBe(404);
    });

    it('VPC-07 a crash between the commit and the workflow start does not strand the VPC: the reconciler starts it', async () => {
      const dispatch = stack.outbox.dispatch;
      stack.outbox.dispatch = async () => undefined; // the API process "dies" right after its commit
      let res;
      try {
        res = await post({ region_id: ws.regionId, name: 'after-crash', cidr_v4: '10.250.0.0/16' });
      } finally {
        stack.outbox.dispatch = dispatch;
      }
      expect(res.status).toBe(201);
      const [op] = await stack.ds.query(`SELECT started_at FROM operations WHERE workflow_id = $1`, [
        `vpc-create/${res.body.uuid}`,
      ]);
      expect(op.started_at).toBeNull();
      await eventually(
        async () =>
          (await stack.http.get(`/api/v1/vpcs/${res.body.uuid}`).set(auth(ws.ownerToken))).body.status === 'active',
        { what: 'reconciled VPC active' },
      );
      const [after] = await stack.ds.query(`SELECT started_at FROM operations WHERE workflow_id = $1`, [
        `vpc-create/${res.body.uuid}`,
      ]);
      expect(after.started_at).not.toBeNull();
    });

    it('VPC-13 DELETE gets 422 while a subnet remains, then removes VPC, router and resolver', async () => {
      const vpc = await activeVpc(stack, ws, { name: 'doomed', cidr_v4: '172.20.0.0/22' });
      const refused = await stack.http.delete(`/api/v1/vpcs/${vpc.uuid}`).set(auth(ws.ownerToken));
      expect(refused.status).toBe(422);
      expect(refused.body.detail).toContain('subnet');
      const [subnet] = (await stack.http.get(`/api/v1/vpcs/${vpc.uuid}/subnets`).set(auth(ws.ownerToken))).body;
      expect(
        (await stack.http.delete(`/api/v1/vpcs/${vpc.uuid}/subnets/${subnet.uuid}`).set(auth(ws.ownerToken))).status,
      ).toBe(204);
      expect((await stack.http.get(`/api/v1/vpcs/${vpc.uuid}`).set(auth(ws.ownerToken))).body.subnet_count).toBe(0);
      const res = await stack.http.delete(`/api/v1/vpcs/${vpc.uuid}`).set(auth(ws.ownerToken));
      expect(res.status).toBe(202);
      expect(res.body.status).toBe('deleting');
      await eventually(
        async () => (await stack.http.get(`/api/v1/vpcs/${vpc.uuid}`).set(auth(ws.ownerToken))).status === 404,
        { what: 'VPC gone' },
      );
      expect(await plane.built(vpc.uuid)).toEqual({ router: false, resolver: null });
      expect(await stack.temporal.workflow.getHandle(`vpc-delete/${vpc.uuid}`).query('state')).toBe('deleted');
    });

    // a fault injected into the simulated driver (the local one's failures are the kernel's)
    simulatedOnly(
      'VPC-14 a VPC whose provisioning the driver refuses is failed, and what was created is removed',
      async () => {
        await SimulatedCore.injectFault(stack.ds, 'network.createResolver', 1, {
          retryable: false,
          message: 'resolver quota exhausted',
        });
        const res = await post({ region_id: ws.regionId, name: 'unlucky', cidr_v4: '172.21.0.0/22' });
        const failed = await eventually(
          async () => {
            const got = await stack.http.get(`/api/v1/vpcs/${res.body.uuid}`).set(auth(ws.ownerToken));
            return got.body.status === 'failed' ? got.body : null;
          },
          { what: 'VPC failed' },
        );
        expect(failed.failure_reason).toContain('resolver quota exhausted');
        expect(failed.cidr_v6).toBeNull();
        expect(
          await stack.ds.query(`SELECT * FROM sim_network_components WHERE vpc_uuid = $1`, [res.body.uuid]),
        ).toEqual([]);
      },
    );
  });

  describe('subnets', () => {
    let vpc: any;
    beforeAll(async () => {
      vpc = await activeVpc(stack, ws, { name: 'subnets', cidr_v4: '10.230.0.0/16' });
    });
    const postSubnet = (body: Record<string, unknown>, token = ws.ownerToken) =>
      stack.http.post(`/api/v1/vpcs/${vpc.uuid}/subnets`).set(auth(token)).send(body);

    it("SUB-01 SUB-03 SUB-04 family defaults to dual, cidr_v6 is derived from the VPC's, public defaults to true", async () => {
      const res = await postSubnet({ cidr_v4: '10.230.2.0/24' });
      expect(res.status).toBe(201);
      const prefix = vpc.cidr_v6.replace('::/48', '');
      expect(res.body).toMatchObject({
        family: 'dual',
        cidr_v4: '10.230.2.0/24',
        cidr_v6: `${prefix}:200::/64`,
        public: true,
        default_route: 'platform',
      });
      const v4 = await postSubnet({ family: 'ipv4', cidr_v4: '10.230.3.0/24', public: false });
      expect(v4.body).toMatchObject({ family: 'ipv4', cidr_v6: null, public: false, default_route: 'vpc' });
      const v6 = await postSubnet({ family: 'ipv6' });
      expect(v6.status).toBe(201);
      expect(v6.body).toMatchObject({ family: 'ipv6', cidr_v4: null, cidr_v6: `${prefix}:ffff::/64` });
      const explicit = await postSubnet({ family: 'ipv6', cidr_v6: `${prefix}:abcd::/64`, name: 'v6-explicit' });
      expect(explicit.body.cidr_v6).toBe(`${prefix}:abcd::/64`);
      expect((await stack.http.get(`/api/v1/vpcs/${vpc.uuid}`).set(auth(ws.ownerToken))).body.subnet_count).toBe(5);
    });

    it('SUB-01 ERR-06 public accepts true/false and "1"/"0"; other values and families are 400', async () => {
      expect((await postSubnet({ cidr_v4: '10.230.4.0/24', public: '0' })).body.public).toBe(false);
      for (const body of [
        { cidr_v4: '10.230.5.0/24', public: 'yes' },
        { cidr_v4: '10.230.5.0/24', family: 'dualstack' },
        { cidr_v4: '10.230.5.0/24', public: 1 },
      ]) {
        expect((await postSubnet(body)).status).toBe(400);
      }
    });

    it('SUB-02 cidr_v4 is required unless the family is ipv6', async () => {
      for (const body of [{}, { family: 'dual' }, { family: 'ipv4' }]) {
        const res = await postSubnet(body);
        expect(res.status).toBe(400);
        expect(res.body.errors[0].path).toBe('body.cidr_v4');
      }
      expect((await postSubnet({ family: 'ipv6', cidr_v4: '10.230.9.0/24' })).status).toBe(400);
    });

    it('SUB-05 a subnet overlapping an existing one gets 422, as do ranges outside the VPC or in its reserved block', async () => {
      const before = await tableCounts(stack.ds);
      for (const cidr of [
        '10.230.2.0/24',
        '10.230.2.128/25',
        '10.230.0.0/22',
        '10.231.0.0/24',
        '10.230.0.0/24',
        '10.230.1.0/24',
      ]) {
        const res = await postSubnet({ cidr_v4: cidr });
        expect(`${cidr} ${res.status}`).toBe(`${cidr} 422`);
      }
      const prefix = vpc.cidr_v6.replace('::/48', '');
      expect((await postSubnet({ family: 'ipv6', cidr_v6: `${prefix}:abcd::/64` })).status).toBe(422);
      expect((await postSubnet({ family: 'ipv6', cidr_v6: 'fd00:1:2:3::/64' })).status).toBe(422);
      expect(await tableCounts(stack.ds)).toEqual(before);
    });

    it('SUB-05 concurrent overlapping creations: the exclusion constraint lets exactly one through', async () => {
      const results = await Promise.all(
        ['10.230.64.0/20', '10.230.72.0/21', '10.230.76.0/22', '10.230.79.0/24'].map((c) => postSubnet({ cidr_v4: c })),
      );
      expect(results.map((r) => r.status).sort()).toEqual([201, 422, 422, 422]);
      const rows = await stack.ds.query(
        `SELECT count(*)::int AS n FROM vpc_subnets a JOIN vpc_subnets b ON a.vpc_uuid = b.vpc_uuid AND a.uuid < b.uuid AND a.cidr_v4 && b.cidr_v4`,
      );
      expect(rows[0].n).toBe(0);
    });

    it('SUB-05 property: whatever mix of ranges is sent at once, the accepted subnets of a VPC never overlap', async () => {
      let run = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.record({ offset: fc.integer({ min: 256, max: 4095 }), prefix: fc.integer({ min: 20, max: 29 }) }),
            {
              minLength: 2,
              maxLength: 8,
            },
          ),
          async (candidates) => {
            run += 1;
            const net = await activeVpc(stack, ws, { name: `prop-${run}`, cidr_v4: `10.${100 + run}.0.0/20` });
            const base = cidr4(net.cidr_v4).base;
            const ranges = candidates.map((c) =>
              formatCidr4({ base: ((base + c.offset * 1) & mask(c.prefix)) >>> 0, prefix: c.prefix }),
            );
            const results = await Promise.all(
              ranges.map((cidr) =>
                stack.http.post(`/api/v1/vpcs/${net.uuid}/subnets`).set(auth(ws.ownerToken)).send({ cidr_v4: cidr }),
              ),
            );
            for (const r of results) expect([201, 409, 422]).toContain(r.status);
            const accepted: string[] = (
              await stack.ds.query(`SELECT cidr_v4::text AS c FROM vpc_subnets WHERE vpc_uuid = $1`, [net.uuid])
            ).map((r: { c: string }) => r.c);
            for (let i = 0; i < accepted.length; i++) {
              for (let j = i + 1; j < accepted.length; j++)
                expect(overlaps(cidr4(accepted[i]!), cidr4(accepted[j]!))).toBe(false);
            }
            // Every refused range really overlaps an accepted one (or the default subnet is among them).
            ranges.forEach((cidr, i) => {
              if (results[i]!.status === 422) expect(accepted.some((a) => overlaps(cidr4(a), cidr4(cidr)))).toBe(true);
            });
          },
        ),
        { numRuns: 8 },
      );
    });

    it('subnets and peer routes need apps:operate or network:operate; reads need network:view (AUTH-13, AUTH-08)', async () => {
      const viewer = await tokenWith(stack.ds, ws.uuid, ['network:view']);
      const networkOperator = await tokenWith(stack.ds, ws.uuid, ['network:operate']);
      const appsOperator = await tokenWith(stack.ds, ws.uuid, ['apps:operate']);
      expect((await stack.http.get(`/api/v1/vpcs/${vpc.uuid}/subnets`).set(auth(viewer))).status).toBe(200);
      expect((await postSubnet({ cidr_v4: '10.230.100.0/24' }, viewer)).status).toBe(403);
      expect((await postSubnet({ cidr_v4: '10.230.100.0/24' }, networkOperator)).status).toBe(201);
      expect((await postSubnet({ cidr_v4: '10.230.101.0/24' }, appsOperator)).status).toBe(201);
    });
  });

  describe('AUTH-13 network permissions', () => {
    it('AUTH-13 network:view reads; network:operate updates a VPC; network:manage creates and deletes it', async () => {
      const viewer = await tokenWith(stack.ds, ws.uuid, ['network:view']);
      const operator = await tokenWith(stack.ds, ws.uuid, ['network:operate']);
      const manager = await tokenWith(stack.ds, ws.uuid, ['network:manage']);
      expect((await stack.http.get('/api/v1/vpcs').set(auth(viewer))).status).toBe(200);
      expect((await stack.http.get('/api/v1/vpcs').set(auth(operator))).status).toBe(403);
      expect(
        (await post({ region_id: ws.regionId, name: 'by-operator', cidr_v4: '10.240.0.0/16' }, operator)).status,
      ).toBe(403);
      expect((await post({ region_id: ws.regionId, name: 'by-viewer', cidr_v4: '10.240.0.0/16' }, viewer)).status).toBe(
        403,
      );
      const made = await post({ region_id: ws.regionId, name: 'by-manager', cidr_v4: '10.240.0.0/16' }, manager);
      expect(made.status).toBe(201);
      expect(
        (await stack.http.put(`/api/v1/vpcs/${made.body.uuid}`).set(auth(manager)).send({ label: 'x' })).status,
      ).toBe(403);
      expect(
        (await stack.http.put(`/api/v1/vpcs/${made.body.uuid}`).set(auth(operator)).send({ label: 'x' })).status,
      ).toBe(200);
      expect((await stack.http.delete(`/api/v1/vpcs/${made.body.uuid}`).set(auth(operator))).status).toBe(403);
      expect((await stack.http.delete(`/api/v1/vpcs/${made.body.uuid}`).set(auth(viewer))).status).toBe(403);
    });
  });
});
