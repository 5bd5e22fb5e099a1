/** Pure rules of static sites (contract: Static site). */
export const SITE_STATES = ['pending', 'assigned', 'deploying', 'running', 'failed'] as const;
export type SiteState = (typeof SITE_STATES)[number];

/** The served name: one DNS label, fixed at creation (no suffix is appended). */
export const SITE_NAME = /^[a-z0-9]([a-z0-9-]{1,61}[a-z0-9])$/;

/** Serving is region-less: the URL is built from the name only. */
export function siteHost(name: string, sitesDomain: string): string {
  return `${name}.${sitesDomain}`;
}

/** The site's URL; `httpsPort` where the ingress answers HTTPS, shown unless it is 443 (as an app's public_url). */
export function siteUrl(name: string, sitesDomain: string, httpsPort = 443): string {
  return `https://${siteHost(name, sitesDomain)}${httpsPort === 443 ? '' : `:${httpsPort}`}`;
}

/** Where the published files live inside the site's content bucket. */
export const SITE_PREFIX = 'site/';

/** publish_directory: relative, inside the repository. */
export function publishDirectoryProblem(p: string): string | null {
  if (p.startsWith('/') || p.includes('\\')) return 'must be a relative path inside the repository';
  if (p.split('/').some((s) => s === '..')) return 'must not contain .. segments';
  return null;
}

const TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  htm: 'text/html; charset=utf-8',
  css: 'text/css; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  mjs: 'text/javascript; charset=utf-8',
  json: 'application/json',
  svg: 'image/svg+xml',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  ico: 'image/x-icon',
  txt: 'text/plain; charset=utf-8',
  xml: 'application/xml',
  woff: 'font/woff',
  woff2: 'font/woff2',
  wasm: 'application/wasm',
  map: 'application/json',
  pdf: 'application/pdf',
  avif: 'image/avif',
  ttf: 'font/ttf',
  otf: 'font/otf',
  csv: 'text/csv; charset=utf-8',
  mp4: 'video/mp4',
  webm: 'video/webm',
  mp3: 'audio/mpeg',
  webmanifest: 'application/manifest+json',
};

export function contentType(file: string): string {
  const ext = file.slice(file.lastIndexOf('.') + 1).toLowerCase();
  return TYPES[ext] ?? 'application/octet-stream';
}
