import { getMetadataArgsStorage, type ValueTransformer } from 'typeorm';

/** An entity class (anything TypeORM's decorators were applied to). */
export type EntityClass<E> = abstract new (...args: never[]) => E;

interface ColumnOptions<E> {
  /** Columns left out (e.g. a sealed secret a statement has no business reading). */
  except?: ReadonlyArray<keyof E & string>;
  /** Each column is answered as `<prefix><name>` (two entities joined in one row; see `Prefixed`). */
  prefix?: string;
}

/** The row type of a `columnsOf(..., { prefix })` select: the entity's fields under prefixed names. */
export type Prefixed<T, P extends string> = { [K in keyof T & string as `${P}${K}`]: T[K] };

interface DeclaredColumn {
  name: string;
  type: unknown;
  array: boolean;
  transformer?: ValueTransformer | ValueTransformer[];
}

/**
 * A `cidr[]` / `inet[]` column read through TypeORM (a find; `hydrated` rows of a RETURNING *):
 * node-postgres leaves those arrays as their text (`{10.0.0.0/8,192.168.1.0/24}`), whose
 * elements never need quoting; an array already parsed (a `columnsOf` select) is kept.
 */
export const addressArray: ValueTransformer = {
  to: (value: unknown) => value,
  from: (value: unknown) => (typeof value === 'string' ? (value === '{}' ? [] : value.slice(1, -1).split(',')) : value),
};

/** Read once per entity: the decorators ran when its class (and its parents) were defined. */
const declaredOf = new WeakMap<Function, DeclaredColumn[]>();

function declared<E>(target: EntityClass<E>): DeclaredColumn[] {
  const known = declaredOf.get(target);
  if (known) return known;
  const chain: Function[] = [];
  for (let t: Function | null = target; t && t !== Function.prototype; t = Object.getPrototypeOf(t) as Function | null)
    chain.unshift(t);
  const columns = getMetadataArgsStorage()
    .filterColumns(chain)
    .map((c) => ({
      name: c.options.name ?? c.propertyName,
      type: c.options.type,
      array: c.options.array === true,
      transformer: c.options.transformer,
    }));
  if (columns.length === 0) throw new Error(`${target.name} declares no columns (is it an entity?)`);
  declaredOf.set(target, columns);
  return columns;
}

/** The column names an entity declares (its own and inherited), in declaration order. */
export function columnNames<E>(target: EntityClass<E>, options: ColumnOptions<E> = {}): string[] {
  const except = new Set<string>(options.except ?? []);
  return declared(target)
    .map((c) => c.name)
    .filter((n) => !except.has(n));
}

/**
 * The select list of an entity for a raw SELECT or RETURNING (`alias.col, ...`, bare names
 * without an alias), read from its decorators, so a raw statement never repeats the table.
 * The rows come back as the entity's type: an `inet` column is read as its host address
 * (`host()`, what the API shows), a `cidr[]` / `inet[]` column as text[] (node-postgres
 * leaves those arrays unparsed).
 */
export function columnsOf<E>(target: EntityClass<E>, alias?: string, options: ColumnOptions<E> = {}): string {
  const except = new Set<string>(options.except ?? []);
  const prefix = options.prefix ?? '';
  return declared(target)
    .filter((c) => !except.has(c.name))
    .map((c) => {
      const ref = alias ? `${alias}.${c.name}` : c.name;
      const as = `${prefix}${c.name}`;
      if (c.array && (c.type === 'cidr' || c.type === 'inet')) return `${ref}::text[] AS ${as}`;
      if (c.type === 'inet') return `host(${ref}) AS ${as}`;
      return prefix ? `${ref} AS ${as}` : ref;
    })
    .join(', ');
}

/** Each transformed column's name and its `from` steps in the order TypeORM applies them (the last transformer first). */
const fromStepsOf = new WeakMap<Function, Array<{ name: string; steps: ValueTransformer[] }>>();

function fromSteps<E>(target: EntityClass<E>): Array<{ name: string; steps: ValueTransformer[] }> {
  let steps = fromStepsOf.get(target);
  if (!steps) {
    steps = declared(target)
      .filter((c) => c.transformer)
      .map((c) => ({
        name: c.name,
        steps: Array.isArray(c.transformer) ? [...c.transformer].reverse() : [c.transformer!],
      }));
    fromStepsOf.set(target, steps);
  }
  return steps;
}

/**
 * Raw rows of a `columnsOf` select made the entity's type: each column's transformer (e.g.
 * a bigint read as a number) is applied as TypeORM would on a find. Rows are changed in place.
 */
export function hydrated<E, R extends object>(target: EntityClass<E>, rows: R[], prefix = ''): R[] {
  const transformed = fromSteps(target);
  for (const row of rows) {
    const r = row as Record<string, unknown>;
    for (const c of transformed) {
      const key = `${prefix}${c.name}`;
      if (!(key in r)) continue;
      r[key] = c.steps.reduce((v, t) => t.from(v), r[key]);
    }
  }
  return rows;
}
