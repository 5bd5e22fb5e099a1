import type Koa from 'koa';

export interface Page {
  page: number;
  per_page: number;
}

export function offsetOf(p: Page): number {
  return (p.page - 1) * p.per_page;
}

/** X-Total-Count and an RFC 8288 Link header with first, prev, next and last. */
export function setPageHeaders(ctx: Koa.Context, p: Page, total: number): void {
  const last = Math.max(1, Math.ceil(total / p.per_page));
  const link = (page: number, rel: string) => {
    const url = new URL(ctx.originalUrl, `${ctx.protocol}://${ctx.host}`);
    url.searchParams.set('page', String(page));
    url.searchParams.set('per_page', String(p.per_page));
    return `<${url.pathname}${url.search}>; rel="${rel}"`;
  };
  const links = [link(1, 'first')];
  if (p.page > 1) links.push(link(Math.min(p.page - 1, last), 'prev'));
  if (p.page < last) links.push(link(p.page + 1, 'next'));
  links.push(link(last, 'last'));
  ctx.set('X-Total-Count', String(total));
  ctx.set('Link', links.join(', '));
}
