import { REQUIREMENTS, allows, PERMISSIONS } from '../../domain/permissions';
import { canReachProject, type CallerIdentity } from '../../domain/projects';

const caller = (over: Partial<CallerIdentity>): CallerIdentity => ({
  builtinRole: null,
  permissions: new Set(),
  userUuid: 'u1',
  roleName: 'dev',
  ...over,
});

describe('the permission table transcribes the contract', () => {
  it.each([
    ['AUTH-04', 'apps.list', ['apps:view']],
    ['AUTH-04', 'apps.activity', ['apps:view']],
    ['AUTH-04', 'cronjobs.read', ['apps:view']],
    ['AUTH-05', 'apps.deploy_commit', ['apps:deploy']],
    ['AUTH-05', 'apps.change_state', ['apps:deploy']],
    ['AUTH-05', 'previews.redeploy', ['apps:deploy']],
    ['AUTH-06', 'apps.update', ['apps:deploy', 'apps:operate', 'apps:manage']],
    ['AUTH-07', 'apps.variables', ['apps:operate', 'apps:manage']],
    ['AUTH-08', 'apps.ports', ['apps:operate']],
    ['AUTH-08', 'previews.config', ['apps:operate']],
    ['AUTH-08', 'static_sites.update', ['apps:operate']],
    ['AUTH-08', 'addons.write', ['apps:operate']],
    ['AUTH-08', 'cronjobs.write', ['apps:operate']],
    ['AUTH-08', 'addons.public_access', ['apps:operate']],
    ['AUTH-08', 'addons.restore', ['apps:operate']],
    ['AUTH-09', 'apps.clone', ['apps:manage']],
    ['AUTH-09', 'previews.delete', ['apps:manage']],
    ['AUTH-09', 'addons.delete', ['apps:manage']],
    ['AUTH-09', 'addons.reset_database', ['apps:manage']],
    ['AUTH-09', 'apps.tls', ['apps:manage']],
    ['AUTH-09', 'apps.domains', ['apps:manage']],
    ['AUTH-09', 'apps.create', ['apps:manage']],
    ['AUTH-10', 'services.public_access', ['services:operate']],
    ['AUTH-10', 'services.reset_database', ['services:manage']],
    ['AUTH-11', 'buckets.download_url', ['buckets:view']],
    ['AUTH-11', 'buckets.update', ['buckets:operate']],
    ['AUTH-11', 'buckets.objects', ['buckets:operate']],
    ['AUTH-12', 'projects.delete', ['projects:manage']],
    ['AUTH-12', 'projects.variables', ['projects:manage', 'projects:operate']],
    ['AUTH-13', 'network.read', ['network:view']],
    ['AUTH-13', 'vpcs.update', ['network:operate']],
    ['AUTH-13', 'vpcs.subnets', ['apps:operate', 'network:operate']],
    ['AUTH-13', 'vpcs.peer_routes', ['apps:operate', 'network:operate']],
    ['AUTH-13', 'vpcs.attachments', ['apps:operate', 'network:operate']],
    ['AUTH-13', 'vpcs.manage', ['network:manage']],
    ['AUTH-13', 'vpcs.vpn_gateways', ['network:manage']],
    ['AUTH-13', 'vpcs.vpn_users', ['network:manage']],
    ['AUTH-13', 'vpcs.site_connections', ['network:manage']],
    ['AUTH-14', 'webhooks.manage', ['workspace:general']],
  ] as const)('%s %s needs any of %j and nothing else', (_rule, key, permissions) => {
    const requirement = REQUIREMENTS[key];
    for (const p of PERMISSIONS) {
      expect([p, allows({ builtinRole: null, permissions: new Set([p]) }, requirement)]).toEqual([
        p,
        (permissions as readonly string[]).includes(p),
      ]);
    }
  });

  it('AUTH-02 owner and admin hold every permission; a token with none holds none', () => {
    for (const requirement of Object.values(REQUIREMENTS)) {
      expect(allows({ builtinRole: 'owner', permissions: new Set() }, requirement)).toBe(true);
      expect(allows({ builtinRole: 'admin', permissions: new Set() }, requirement)).toBe(true);
      if ('anyOf' in requirement || 'workspaceAdmin' in requirement)
        expect(allows({ builtinRole: null, permissions: new Set() }, requirement)).toBe(false);
    }
  });
});

describe('project restrictions', () => {
  it('PRJ-03 no restrictions: open to everyone in the workspace', () => {
    expect(canReachProject(caller({}), [])).toBe(true);
    expect(canReachProject(caller({ userUuid: null, roleName: null }), [])).toBe(true);
  });

  it('PRJ-04 a restriction admits the listed user, the listed role, the owner and admins only', () => {
    const rules = [
      { subject_type: 'user' as const, user_uuid: 'u2', role_name: null },
      { subject_type: 'role' as const, user_uuid: null, role_name: 'ops' },
    ];
    expect(canReachProject(caller({ userUuid: 'u2' }), rules)).toBe(true);
    expect(canReachProject(caller({ roleName: 'ops' }), rules)).toBe(true);
    expect(canReachProject(caller({ builtinRole: 'owner' }), rules)).toBe(true);
    expect(canReachProject(caller({ builtinRole: 'admin' }), rules)).toBe(true);
    expect(canReachProject(caller({}), rules)).toBe(false);
    expect(canReachProject(caller({ userUuid: null, roleName: null }), rules)).toBe(false);
  });

  it('PRJ-05 a custom role never bypasses a restriction, whatever permissions it carries', () => {
    const all = new Set(PERMISSIONS);
    expect(
      canReachProject(caller({ permissions: all, roleName: 'superuser' }), [
        { subject_type: 'user', user_uuid: 'u9', role_name: null },
      ]),
    ).toBe(false);
  });
});
