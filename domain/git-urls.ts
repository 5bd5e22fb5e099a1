/** `owner/repo` on a code host that the field implies. */
const OWNER_REPO = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;

/**
 * The one rule for a Git repository address the platform fetches from (apps' public_git
 * and github methods, stacks, static sites): a public HTTPS Git URL or a code-hosting
 * repository written `host/owner/repo` (read as https://host/owner/repo), the contract's
 * "a code-hosting repository or a public HTTPS Git URL" (STK-11). No other scheme (the
 * builder fetches https only) and no credentials in the URL (a stored credential serves
 * private repositories; the URL is shown back). file:// only where the operator allows it
 * (BERTH_GIT_ALLOW_FILE_URLS). Where the field names a repository of one code host (an
 * app's `github` method), `owner/repo` means that host's repository.
 */
export function normalizeRepositoryUrl(
  input: string,
  allowFile: boolean,
  options: { ownerRepoHost?: string } = {},
): { url: string } | { problem: string } {
  const value = input.trim();
  if (options.ownerRepoHost && OWNER_REPO.test(value))
    return { url: `https://${options.ownerRepoHost}/${value.replace(/\.git$/, '')}.git` };
  if (/^file:\/\//i.test(value)) {
    return allowFile ? { url: value } : { problem: 'file:// repositories are not allowed on this installation' };
  }
  let url: URL;
  try {
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `https://${value}`);
  } catch {
    return { problem: 'must be an HTTPS Git URL or host/owner/repo' };
  }
  if (url.protocol !== 'https:') return { problem: 'must use https (public HTTPS Git URL)' };
  if (url.username || url.password) return { problem: 'must not carry credentials; use credential_id' };
  if (!url.hostname.includes('.') || url.pathname.split('/').filter(Boolean).length < 1)
    return { problem: 'must name a repository on a host' };
  return { url: url.toString().replace(/\/$/, '') };
}

/**
 * Branch names git accepts (a practical subset of git-check-ref-format): no leading `-` or
 * `/`, no `..`, `//` or `@{`, no trailing `.` or `/`. Apps, stacks and static sites.
 */
export const BRANCH = /^(?![-/])(?!.*\.\.)(?!.*\/\/)(?!.*@\{)[A-Za-z0-9._/-]{1,200}(?<![./])$/;
