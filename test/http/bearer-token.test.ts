import { describe, expect, it } from 'vitest';
import { bearerToken } from '../../src/http/authenticate.ts';

// The rule the hand-written parser replaced; it must take exactly what this took.
const BEARER = /^Bearer +([^\s]+) *$/i;

describe('the Bearer header', () => {
  it('takes the token after the scheme in any case, with spaces around it', () => {
    expect(bearerToken('Bearer wo_live_k1.s3cret')).toBe('wo_live_k1.s3cret');
    expect(bearerToken('bEaReR   abc  ')).toBe('abc');
  });

  it.each([
    '',
    'Bearer',
    'Bearer ',
    'Bearer  ',
    'Bearerabc',
    'Basic abc',
    'Bearer\tabc',
    'Bearer abc def',
    'Bearer abc\t',
    'Bearer ab\u00a0c',
    ' Bearer abc',
    'Beare abc',
    'B\u0130arer abc',
  ])('refuses %j', (header) => {
    expect(bearerToken(header)).toBeUndefined();
  });

  it('agrees with the regular expression on every header made of a few tricky characters', () => {
    const pieces = ['Bearer', 'bearer', 'BEARER', ' ', '  ', '\t', '\u00a0', '\ufeff', 'a', 'x.y', '\u0085', 'é'];
    let seed = 41;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const pick = (from: string[]) => from[Math.floor(random() * from.length)] ?? '';
    for (let n = 0; n < 5000; n++) {
      let header = random() < 0.8 ? pick(['Bearer', 'bearer', 'BeArEr']) : '';
      const parts = Math.floor(random() * 5);
      for (let p = 0; p < parts; p++) header += pick(pieces);
      expect(bearerToken(header), JSON.stringify(header)).toBe(BEARER.exec(header)?.[1]);
    }
  });
});
