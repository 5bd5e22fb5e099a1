/** Preview environments: statuses, triggers and naming (pure rules). */

export const PREVIEW_STATUSES = ['creating', 'active', 'updating', 'failed', 'destroying'] as const;
export type PreviewStatus = (typeof PREVIEW_STATUSES)[number];

/** Longest lifetime a configuration may set (decision: 90 days). */
export const MAX_LIFETIME_HOURS = 24 * 90;

/** Signal that tells an environment's workflow to re-read what is wanted of it. */
export const PREVIEW_WAKE_SIGNAL = 'wake';

/**
 * Whether a branch matches a trigger pattern: `*` matches within one path segment,
 * `**` across segments, `?` one character; anything else literally.
 */
export function branchMatches(pattern: string, branch: string): boolean {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*' && pattern[i + 1] === '*') {
      re += '.*';
      i++;
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`).test(branch);
}

/** Why a branch pattern is refused, or null. */
export function branchPatternProblem(pattern: string): string | null {
  if (pattern.length === 0 || pattern.length > 200) return 'a branch pattern has 1 to 200 characters';
  if (/[\s~^:\\]/.test(pattern) || pattern.includes('..'))
    return 'a branch pattern holds only characters allowed in branch names, plus * and ?';
  return null;
}

/** The environment's key, the last part of its workflow id `preview/<app uuid>/<key>`. */
export function previewKey(source: { pullRequest: number } | { branch: string }): string {
  return 'pullRequest' in source ? `pr-${source.pullRequest}` : `branch-${source.branch}`;
}

/** The preview app's name: the parent's name suffixed with the pull request or branch. */
export function previewAppName(parentName: string, source: { pullRequest: number } | { branch: string }): string {
  const suffix =
    'pullRequest' in source
      ? `pr-${source.pullRequest}`
      : source.branch
          .toLowerCase()
          .replace(/[^a-z0-9]+/g, '-')
          .replace(/^-+|-+$/g, '')
          .slice(0, 30) || 'branch';
  return `${parentName}-${suffix}`;
}

/** A preview's app is a clone of its parent with everything the clone flags name. */
export const PREVIEW_CLONE = {
  clone_variables: true,
  clone_secret_files: true,
  clone_scaling_settings: true,
  clone_health_checks: true,
  clone_security: true,
} as const;
