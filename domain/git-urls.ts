/**
 * Repository addresses stacks and static sites accept: a public HTTPS Git URL, or a
 * code-hosting repository written `host/owner/repo` (read as https://host/owner/repo).
 * file:// URLs only where the operator allows them (BERTH_GIT_ALLOW_FILE_URLS).
 */
export function normalizeRepositoryUrl(input: string, allowFile: boolean): { url: string } | { problem: string } {
  const value = input.trim();
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
  if (!url.hostname.includes('.') || url.pathname.split('/').filter(Boolean).length < 1) return { problem: 'must name a repository on a host' };
  return { url: url.toString().replace(/\/$/, '') };
}

/** Branch names git accepts (a practical subset of git-check-ref-format). */
export const BRANCH = /^(?!-)(?!.*\.\.)(?!.*\/\/)(?!.*@\{)[A-Za-z0-9._/-]{1,200}(?<![./])$/;
