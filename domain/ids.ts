/**
 * Identifiers are UUID strings (GEN-02): 8-4-4-4-12 hexadecimal digits, any case, any
 * version. What PostgreSQL's uuid type accepts in its canonical form, so a value that
 * passes never fails a query; anything else is answered before the database is asked.
 */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID.test(value);
}
