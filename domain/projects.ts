import type { Grants } from './permissions';

/** A project's state: `deleting` once its deletion was accepted. */
export const PROJECT_STATES = ['active', 'deleting'] as const;
export type ProjectState = (typeof PROJECT_STATES)[number];

export interface RestrictionRule {
  subject_type: 'user' | 'role';
  user_uuid: string | null;
  role_name: string | null;
}

export interface CallerIdentity extends Grants {
  /** The member's user uuid; null for a workspace token. */
  userUuid: string | null;
  /** The member's role name; null for a workspace token. */
  roleName: string | null;
}

/**
 * Project access (contract, Project): no restrictions -> open to the workspace; any
 * restriction closes it to everyone but the listed members and roles, the owner and
 * built-in admins. A custom role never bypasses a restriction, whatever it carries.
 */
export function canReachProject(caller: CallerIdentity, restrictions: readonly RestrictionRule[]): boolean {
  if (restrictions.length === 0) return true;
  if (caller.builtinRole) return true;
  return restrictions.some((r) =>
    r.subject_type === 'user'
      ? caller.userUuid !== null && r.user_uuid === caller.userUuid
      : caller.roleName !== null && r.role_name === caller.roleName,
  );
}
