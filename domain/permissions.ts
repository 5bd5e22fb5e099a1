/**
 * The contract's permission model (platform-api.md, Authentication 4-5).
 * Permissions are flat: holding apps:manage does not imply apps:view; the contract's
 * table names every permission that allows a request.
 */
export const PERMISSIONS = [
  'apps:view',
  'apps:deploy',
  'apps:operate',
  'apps:manage',
  'services:view',
  'services:operate',
  'services:manage',
  'buckets:view',
  'buckets:operate',
  'buckets:manage',
  'projects:view',
  'projects:operate',
  'projects:manage',
  'network:view',
  'network:operate',
  'network:manage',
  'workspace:general',
] as const;

export type Permission = (typeof PERMISSIONS)[number];

export const BUILTIN_ROLES = ['owner', 'admin'] as const;
export type BuiltinRole = (typeof BUILTIN_ROLES)[number];

export function isPermission(value: string): value is Permission {
  return (PERMISSIONS as readonly string[]).includes(value);
}

/**
 * What a route requires:
 * - `anyOf`: the caller holds at least one of these permissions;
 * - `authenticated`: any valid token of the workspace (reads the contract does not guard);
 * - `workspaceAdmin`: the workspace owner or a holder of the built-in admin role.
 */
export type Requirement = { anyOf: readonly Permission[] } | { authenticated: true } | { workspaceAdmin: true };

const any = (...anyOf: Permission[]): Requirement => ({ anyOf });

/**
 * Requirement key (what a route `requires`) -> requirement. Rows marked `contract` transcribe
 * the contract's permission table; the others are Berth's decisions for requests the table
 * does not name (docs/decisions.md). Routes refer to these keys, and the permission-matrix test checks
 * that every route answers 403 exactly when the caller holds none of its permissions.
 */
export const REQUIREMENTS = {
  // contract: apps:view
  'apps.list': any('apps:view'),
  'apps.read': any('apps:view'),
  'apps.activity': any('apps:view'),
  'cronjobs.read': any('apps:view'),
  // decision: the app's runtime log (GET /apps/{uuid}/logs, not in the contract) follows apps:view
  'apps.logs': any('apps:view'),
  // contract: apps:deploy
  'apps.deploy_commit': any('apps:deploy'),
  'apps.change_state': any('apps:deploy'),
  'previews.redeploy': any('apps:deploy'),
  // contract: any of apps:deploy, apps:operate, apps:manage
  'apps.update': any('apps:deploy', 'apps:operate', 'apps:manage'),
  // contract: apps:operate or apps:manage
  'apps.variables': any('apps:operate', 'apps:manage'),
  // contract: apps:operate
  'apps.ports': any('apps:operate'),
  'previews.config': any('apps:operate'),
  'static_sites.update': any('apps:operate'),
  'addons.write': any('apps:operate'),
  'cronjobs.write': any('apps:operate'),
  'addons.public_access': any('apps:operate'),
  'addons.restore': any('apps:operate'),
  // contract: subnets, peer routes, attach/detach are in both the apps:operate and the network:operate rows
  'vpcs.subnets': any('apps:operate', 'network:operate'),
  'vpcs.peer_routes': any('apps:operate', 'network:operate'),
  'vpcs.attachments': any('apps:operate', 'network:operate'),
  // contract: apps:manage
  'apps.clone': any('apps:manage'),
  'previews.delete': any('apps:manage'),
  'addons.delete': any('apps:manage'),
  'addons.reset_database': any('apps:manage'),
  'apps.tls': any('apps:manage'),
  'apps.domains': any('apps:manage'),
  'apps.create': any('apps:manage'),
  // decision: deleting an app is as strong as creating one
  'apps.delete': any('apps:manage'),
  // decision: reads of add-ons, domains, deployments, previews follow apps:view
  'addons.read': any('apps:view'),
  'domains.read': any('apps:view'),
  'previews.read': any('apps:view'),
  'static_sites.read': any('apps:view'),
  'static_sites.create': any('apps:manage'),
  'static_sites.delete': any('apps:manage'),
  // contract: services
  'services.public_access': any('services:operate'),
  'services.reset_database': any('services:manage'),
  // decision: the rest of the services scope
  'services.read': any('services:view'),
  'services.write': any('services:manage'),
  'services.operate': any('services:operate'),
  // contract: buckets
  'buckets.download_url': any('buckets:view'),
  'buckets.update': any('buckets:operate'),
  'buckets.objects': any('buckets:operate'),
  // decision: bucket reads, create and delete
  'buckets.read': any('buckets:view'),
  'buckets.create': any('buckets:manage'),
  'buckets.delete': any('buckets:manage'),
  // contract: projects
  'projects.delete': any('projects:manage'),
  'projects.variables': any('projects:manage', 'projects:operate'),
  // decision: project writes and restriction management need projects:manage; reads any member
  'projects.write': any('projects:manage'),
  'projects.read': { authenticated: true },
  // decision: the compute resource catalog and regions are readable by any member
  'resources.read': { authenticated: true },
  // contract: network
  'network.read': any('network:view'),
  'vpcs.update': any('network:operate'),
  'vpcs.manage': any('network:manage'),
  'vpcs.vpn_gateways': any('network:manage'),
  'vpcs.vpn_users': any('network:manage'),
  'vpcs.site_connections': any('network:manage'),
  // contract: workspace:general for all webhook management
  'webhooks.manage': any('workspace:general'),
  // decision: stacks and registry credentials follow the apps scope
  'stacks.read': any('apps:view'),
  'stacks.write': any('apps:manage'),
  'registry_credentials.read': any('apps:view'),
  'registry_credentials.write': any('apps:manage'),
  // decision: the audit log is for workspace admins (owner or built-in admin)
  'audit.read': { workspaceAdmin: true },
} as const satisfies Record<string, Requirement>;

export type RequirementKey = keyof typeof REQUIREMENTS;

export interface Grants {
  /** owner or admin: every permission, and project restrictions do not apply. */
  builtinRole: BuiltinRole | null;
  permissions: ReadonlySet<Permission>;
}

export function allows(grants: Grants, requirement: Requirement): boolean {
  if ('authenticated' in requirement) return true;
  if ('workspaceAdmin' in requirement) return grants.builtinRole !== null;
  if (grants.builtinRole) return true;
  return requirement.anyOf.some((p) => grants.permissions.has(p));
}

export function describeRequirement(requirement: Requirement): string {
  if ('authenticated' in requirement) return 'any valid token of the workspace';
  if ('workspaceAdmin' in requirement) return 'the workspace owner or admin role';
  return requirement.anyOf.length === 1 ? requirement.anyOf[0]! : `any of ${requirement.anyOf.join(', ')}`;
}
