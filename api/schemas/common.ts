import * as yup from 'yup';

/**
 * Schema builders for request and response shapes. Fields are strict (no casting: a
 * number sent as a string is a 400), objects refuse unknown keys, and booleans follow
 * the contract's rule: JSON true/false and the strings '1' and '0', nothing else.
 */
export const str = () => yup.string().strict();
export const num = () => yup.number().strict();
export const int = () => yup.number().strict().integer();
export const uuid = () => yup.string().strict().uuid('${path} must be a UUID');
export const timestamp = () => yup.string().strict();
/** Not strict itself, so its items' own casts (a boolean's '1'/'0', ERR-06) apply; the items stay strict. */
export const arr = <T extends yup.Schema>(of: T) => yup.array(of);
/** Free-form JSON object (keys not shown by the contract). */
export const json = () =>
  yup
    .object()
    .strict()
    .meta({ jsonSchema: { type: 'object', additionalProperties: true } } as never);

export const bool = () =>
  yup
    .mixed<boolean>((v): v is boolean => typeof v === 'boolean')
    .transform((v: unknown) => (v === '1' ? true : v === '0' ? false : v))
    .typeError('${path} must be true, false, "1" or "0"')
    .meta({ jsonSchema: { type: ['boolean', 'string'], enum: [true, false, '1', '0'] } } as never);

/** Query-string booleans: '1'/'0' and 'true'/'false'. */
export const queryBool = () =>
  yup
    .mixed<boolean>((v): v is boolean => typeof v === 'boolean')
    .transform((v: unknown) => (v === '1' || v === 'true' ? true : v === '0' || v === 'false' ? false : v))
    .typeError('${path} must be 1, 0, true or false')
    .meta({ jsonSchema: { type: 'string', enum: ['1', '0', 'true', 'false'] } } as never);

export const oneOf = <T extends string>(values: readonly T[]) =>
  yup
    .string()
    .strict()
    .oneOf(values as T[], '${path} must be one of: ${values}') as unknown as yup.StringSchema<T | undefined>;

/** An object that refuses keys its shape does not name. */
export function obj<S extends yup.ObjectShape>(shape: S) {
  return yup
    .object(shape)
    .test('no-unknown-keys', function check() {
      const original: unknown = this.originalValue;
      if (original === null || typeof original !== 'object' || Array.isArray(original)) return true;
      const fields = (this.schema as yup.ObjectSchema<yup.AnyObject>).fields ?? shape;
      const unknown = Object.keys(original).filter((k) => !(k in fields));
      if (unknown.length === 0) return true;
      const prefix = this.path ? `${this.path}.` : '';
      return this.createError({
        path: this.path || '',
        message: `unknown field${unknown.length > 1 ? 's' : ''}: ${unknown.map((k) => prefix + k).join(', ')}`,
      });
    })
    .meta({ jsonSchema: { additionalProperties: false } } as never);
}

export const pageQuery = {
  page: yup.number().integer('${path} must be an integer').min(1).typeError('${path} must be an integer').default(1),
  per_page: yup
    .number()
    .integer('${path} must be an integer')
    .min(1)
    .max(200)
    .typeError('${path} must be an integer')
    .default(50),
};
