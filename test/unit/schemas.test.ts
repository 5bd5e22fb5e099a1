import * as yup from 'yup';
import { arr, bool, obj, str, num } from '../../api/schemas/common';

const schema = obj({ flag: bool(), name: str(), size: num() });

describe('request schema builders', () => {
  it.each([
    [true, true],
    [false, false],
    ['1', true],
    ['0', false],
  ])('ERR-06 a boolean field accepts %p (as %p)', async (sent, expected) => {
    await expect(schema.validate({ flag: sent })).resolves.toEqual({ flag: expected });
  });

  it.each(['true', 'false', 'yes', 1, 0, null, 'on', []])('ERR-06 a boolean field refuses %p', async (sent) => {
    await expect(schema.validate({ flag: sent })).rejects.toBeInstanceOf(yup.ValidationError);
  });

  it("ERR-06 a boolean inside an array of objects accepts '1' and '0' too; the array refuses what is not one", async () => {
    const list = obj({ items: arr(obj({ flag: bool().required(), name: str() })) });
    await expect(list.validate({ items: [{ flag: '1' }, { flag: '0', name: 'x' }] })).resolves.toEqual({
      items: [{ flag: true }, { flag: false, name: 'x' }],
    });
    for (const bad of ['[{"flag":true}]', {}, [1], [{ flag: 'yes' }], [{ flag: true, name: 5 }]]) {
      await expect(list.validate({ items: bad })).rejects.toBeInstanceOf(yup.ValidationError);
    }
  });

  it('ERR-01 fields are strict: a number sent as a string is a shape error, not cast', async () => {
    await expect(schema.validate({ size: '3' })).rejects.toThrow(/number/);
    await expect(schema.validate({ name: 3 })).rejects.toThrow(/string/);
  });

  it('objects refuse keys their shape does not name', async () => {
    await expect(schema.validate({ name: 'x', extra: 1 })).rejects.toThrow(/unknown field: extra/);
    await expect(obj({ inner: obj({ a: str() }) }).validate({ inner: { a: 'x', b: 1 } })).rejects.toThrow(/inner\.b/);
  });
});
