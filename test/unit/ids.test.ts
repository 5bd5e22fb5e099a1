import { isUuid } from '../../domain/ids';

describe('identifiers (domain/ids.ts)', () => {
  it.each([
    ['1b4e28ba-2fa1-41d2-883f-0016d3cca427', true],
    ['1B4E28BA-2FA1-41D2-883F-0016D3CCA427', true],
    ['00000000-0000-0000-0000-000000000000', true],
    ['017f22e2-79b0-7cc3-98c4-dc0c0c07398f', true],
    ['1b4e28ba2fa141d2883f0016d3cca427', false],
    ['{1b4e28ba-2fa1-41d2-883f-0016d3cca427}', false],
    ['1b4e28ba-2fa1-41d2-883f-0016d3cca42', false],
    ['1b4e28ba-2fa1-41d2-883f-0016d3cca4277', false],
    ['1b4e28ba-2fa1-41d2-883f-0016d3cca42g', false],
    [' 1b4e28ba-2fa1-41d2-883f-0016d3cca427', false],
    ['1b4e28ba-2fa1-41d2-883f-0016d3cca427\n', false],
    ['my-workspace', false],
    ['', false],
  ])('GEN-02 %j is a UUID: %s', (value, expected) => {
    expect(isUuid(value)).toBe(expected);
  });
});
