import type Koa from 'koa';
import type { ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { rows, type Db } from '../entities/sql';

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

/** What a paginated list selects: rows of `from` matching `where` (with `params`), in `order`. */
export interface PageQuery {
  /** The table counted, with its alias when `where` uses one (`buckets b`). */
  from: string;
  /** The statement listing rows, up to its WHERE (`SELECT ... FROM buckets b JOIN ...`). */
  select: string;
  where: string;
  params: unknown[];
  order: string;
}

/**
 * One page of a list: counts the matching rows (X-Total-Count and Link headers) and selects
 * the page; LIMIT and OFFSET take the parameters after the where clause's own.
 */
export async function selectPage<T>(
  ctx: { koa: Koa.Context; query: Page; deps: { dataSource: Db } },
  q: PageQuery,
): Promise<T[]> {
  const db = ctx.deps.dataSource;
  const n = q.params.length;
  const [total] = await rows<{ n: number }>(db, `SELECT count(*)::int AS n FROM ${q.from} WHERE ${q.where}`, q.params);
  const list = await rows<T>(db, `${q.select} WHERE ${q.where} ORDER BY ${q.order} LIMIT $${n + 1} OFFSET $${n + 2}`, [
    ...q.params,
    ctx.query.per_page,
    offsetOf(ctx.query),
  ]);
  setPageHeaders(ctx.koa, ctx.query, total!.n);
  return list;
}

/**
 * One page of a query builder's entities (ordered by the caller): counts the matching rows
 * (X-Total-Count and Link headers), then reads the page with LIMIT and OFFSET.
 */
export async function pageOf<E extends ObjectLiteral>(
  ctx: { koa: Koa.Context; query: Page },
  qb: SelectQueryBuilder<E>,
): Promise<E[]> {
  const total = await qb.getCount();
  const list = await qb.offset(offsetOf(ctx.query)).limit(ctx.query.per_page).getMany();
  setPageHeaders(ctx.koa, ctx.query, total);
  return list;
}
