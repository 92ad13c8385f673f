import { describe, expect, it } from 'vitest';
import {
  DEFAULT_EXPIRY_DAYS,
  MAX_EXPIRY_DAYS,
  parseKeyTerms,
  type KeyTermsInput,
} from '../../src/domain/api-key-terms.ts';

const refusedNaming = (field: string) => expect.objectContaining({ name: 'DomainError', code: 'INVALID_INPUT', field });

const terms = (overrides: Partial<KeyTermsInput> = {}, scale = 2) =>
  parseKeyTerms({ label: 'Payroll integration', permissions: ['read-balance'], ...overrides }, scale);

describe('parseKeyTerms', () => {
  it('when only a label and a permission are given, then the rest takes its defaults', () => {
    expect(terms()).toEqual({
      label: 'Payroll integration',
      permissions: ['Read Balance'],
      maxTransactionAmount: null,
      maxDailyVolume: null,
      allowedIPs: [],
      expiresInDays: 365,
    });
    expect(DEFAULT_EXPIRY_DAYS).toBe(365);
    expect(MAX_EXPIRY_DAYS).toBe(3650);
  });

  it('when every term is given, then each is normalized', () => {
    expect(
      parseKeyTerms(
        {
          label: '  Payroll  ',
          permissions: 'perform-operations, read-balance',
          maxTransactionAmount: '50',
          maxDailyVolume: '1000.5',
          allowedIPs: '10.0.0.1, ::ffff:192.168.0.0/112',
          expiresInDays: '30',
        },
        2,
      ),
    ).toEqual({
      label: 'Payroll',
      permissions: ['Read Balance', 'Perform Operations'],
      maxTransactionAmount: '50.00',
      maxDailyVolume: '1000.50',
      allowedIPs: ['10.0.0.1', '192.168.0.0/16'],
      expiresInDays: 30,
    });
  });

  describe('permissions', () => {
    it.each([
      ['read-balance', 'Read Balance'],
      ['read-transactions', 'Read Transactions'],
      ['perform-operations', 'Perform Operations'],
      ['READ-BALANCE', 'Read Balance'],
      ['  read-transactions  ', 'Read Transactions'],
      ['Read Balance', 'Read Balance'],
      ['Read Transactions', 'Read Transactions'],
      ['Perform Operations', 'Perform Operations'],
    ])('when the permission is written "%s", then it is the contract permission "%s"', (input, expected) => {
      expect(terms({ permissions: [input] }).permissions).toEqual([expected]);
    });

    it('when permissions repeat and are out of order, then they are deduplicated in the contract order', () => {
      expect(
        terms({
          permissions: [
            'perform-operations',
            'Read Transactions',
            'read-balance',
            'Read Balance',
            'perform-operations',
          ],
        }).permissions,
      ).toEqual(['Read Balance', 'Read Transactions', 'Perform Operations']);
    });

    it('when permissions are a comma-separated string, then it is split, trimmed and empty parts ignored', () => {
      expect(terms({ permissions: ' read-transactions ,, read-balance, ' }).permissions).toEqual([
        'Read Balance',
        'Read Transactions',
      ]);
    });

    it.each([
      ['an unknown alias', ['read-everything']],
      ['a contract name in the wrong case', ['read balance']],
      ['an underscore alias', ['read_balance']],
      ['one unknown among known ones', ['read-balance', 'delete-wallet']],
      ['an unknown one in a string', 'read-balance,withdraw'],
    ])('when the permissions contain %s, then they are refused naming the field', (_label, permissions) => {
      expect(() => terms({ permissions })).toThrow(refusedNaming('permissions'));
    });

    it('when a permission is unknown, then the message quotes it and lists the known ones', () => {
      expect(() => terms({ permissions: ['withdraw'] })).toThrow(
        /unknown permission "withdraw".*read-balance, read-transactions, perform-operations/,
      );
    });

    it.each([
      ['an empty array', []],
      ['an empty string', ''],
      ['only commas and spaces', ' , ,'],
      ['an array of blanks', ['', '  ']],
    ])('when the permissions are %s, then they are refused naming the field', (_label, permissions) => {
      expect(() => terms({ permissions })).toThrow(refusedNaming('permissions'));
    });

    it.each([
      ['missing', undefined],
      ['null', null],
      ['a number', 3],
      ['an object', { 'read-balance': true }],
      ['an array with a non-string', ['read-balance', 7]],
    ])('when the permissions are %s, then they are refused naming the field', (_label, permissions) => {
      expect(() => terms({ permissions })).toThrow(refusedNaming('permissions'));
    });
  });

  describe('amount limits', () => {
    it.each([undefined, null, ''])('when a limit is %j, then there is no limit', (value) => {
      const result = terms({ maxTransactionAmount: value, maxDailyVolume: value });
      expect(result.maxTransactionAmount).toBeNull();
      expect(result.maxDailyVolume).toBeNull();
    });

    it('when limits are given, then they are formatted at the asset scale', () => {
      expect(terms({ maxTransactionAmount: '5', maxDailyVolume: '10.5' }, 2)).toMatchObject({
        maxTransactionAmount: '5.00',
        maxDailyVolume: '10.50',
      });
      expect(terms({ maxTransactionAmount: '5', maxDailyVolume: '10.5' }, 3)).toMatchObject({
        maxTransactionAmount: '5.000',
        maxDailyVolume: '10.500',
      });
    });

    it('when a limit has more decimals than the asset scale, then it is refused naming that limit', () => {
      expect(() => terms({ maxTransactionAmount: '1.005' }, 2)).toThrow(refusedNaming('maxTransactionAmount'));
      expect(() => terms({ maxDailyVolume: '1.005' }, 2)).toThrow(refusedNaming('maxDailyVolume'));
    });

    it('when the asset scale allows the decimals, then the same limit is accepted', () => {
      expect(terms({ maxTransactionAmount: '1.005' }, 3).maxTransactionAmount).toBe('1.005');
    });

    it('when the asset scale is 0, then a limit with a fraction is refused', () => {
      expect(() => terms({ maxDailyVolume: '100.5' }, 0)).toThrow(refusedNaming('maxDailyVolume'));
      expect(terms({ maxDailyVolume: '100' }, 0).maxDailyVolume).toBe('100');
    });

    it.each([
      ['zero', '0'],
      ['negative', '-5'],
      ['a number', 5],
      ['in exponent notation', '1e3'],
    ])('when the max transaction amount is %s, then it is refused naming it', (_label, value) => {
      expect(() => terms({ maxTransactionAmount: value })).toThrow(refusedNaming('maxTransactionAmount'));
    });

    it('when the max transaction amount exceeds the max daily volume, then it is refused naming the max transaction amount', () => {
      expect(() => terms({ maxTransactionAmount: '100.01', maxDailyVolume: '100' })).toThrow(
        refusedNaming('maxTransactionAmount'),
      );
    });

    it('when the comparison is numeric rather than textual, then "9" under "10" is accepted and "10" over "9" refused', () => {
      expect(terms({ maxTransactionAmount: '9', maxDailyVolume: '10' })).toMatchObject({
        maxTransactionAmount: '9.00',
        maxDailyVolume: '10.00',
      });
      expect(() => terms({ maxTransactionAmount: '10', maxDailyVolume: '9' })).toThrow(
        refusedNaming('maxTransactionAmount'),
      );
    });

    it('when the max transaction amount equals the max daily volume, then it is accepted', () => {
      expect(terms({ maxTransactionAmount: '100', maxDailyVolume: '100.00' })).toMatchObject({
        maxTransactionAmount: '100.00',
        maxDailyVolume: '100.00',
      });
    });

    it('when only one of the limits is given, then it is not compared', () => {
      expect(terms({ maxTransactionAmount: '1000000' }).maxTransactionAmount).toBe('1000000.00');
      expect(terms({ maxDailyVolume: '0.01' }).maxDailyVolume).toBe('0.01');
    });
  });

  describe('allowed IPs', () => {
    it('when allowed IPs are a comma-separated string, then they are normalized', () => {
      expect(terms({ allowedIPs: ' 10.0.0.1 , 2001:DB8::/32' }).allowedIPs).toEqual(['10.0.0.1', '2001:db8::/32']);
    });

    it('when allowed IPs are an array, then they are normalized', () => {
      expect(terms({ allowedIPs: ['::ffff:10.0.0.1', '192.168.0.0/16'] }).allowedIPs).toEqual([
        '10.0.0.1',
        '192.168.0.0/16',
      ]);
    });

    it.each([undefined, null, '', []])(
      'when allowed IPs are %j, then any address is allowed (empty list)',
      (allowedIPs) => {
        expect(terms({ allowedIPs }).allowedIPs).toEqual([]);
      },
    );

    it('when an allowed IP is not an address, then it is refused naming allowedIPs', () => {
      expect(() => terms({ allowedIPs: '10.0.0.1, my-office' })).toThrow(refusedNaming('allowedIPs'));
    });

    it.each([
      ['a number', 10],
      ['an object', { ip: '10.0.0.1' }],
      ['an array with a non-string', ['10.0.0.1', 7]],
    ])('when allowed IPs are %s, then they are refused naming allowedIPs', (_label, allowedIPs) => {
      expect(() => terms({ allowedIPs })).toThrow(refusedNaming('allowedIPs'));
    });
  });

  describe('expiry', () => {
    it.each([undefined, ''])('when expiresInDays is %j, then it defaults to 365', (expiresInDays) => {
      expect(terms({ expiresInDays }).expiresInDays).toBe(365);
    });

    it.each([
      [1, 1],
      ['1', 1],
      [90, 90],
      ['3650', 3650],
      [3650, 3650],
    ])('when expiresInDays is %j, then it is %i days', (expiresInDays, expected) => {
      expect(terms({ expiresInDays }).expiresInDays).toBe(expected);
    });

    it.each([
      ['zero', 0],
      ['zero as a string', '0'],
      ['negative', -1],
      ['over ten years', 3651],
      ['over ten years as a string', '3651'],
      ['a fraction', 1.5],
      ['a fraction as a string', '1.5'],
      ['not a number', 'abc'],
      ['NaN', Number.NaN],
      ['Infinity', Number.POSITIVE_INFINITY],
      ['null', null],
    ])('when expiresInDays is %s, then it is refused naming the field', (_label, expiresInDays) => {
      expect(() => terms({ expiresInDays })).toThrow(refusedNaming('expiresInDays'));
    });
  });

  describe('label', () => {
    it('when the label has surrounding spaces, then it is trimmed', () => {
      expect(terms({ label: '  Payroll  ' }).label).toBe('Payroll');
    });

    it('when the label is 100 characters, then it is accepted', () => {
      expect(terms({ label: 'L'.repeat(100) }).label).toBe('L'.repeat(100));
    });

    it.each([
      ['missing', undefined],
      ['empty', ''],
      ['blank', '   '],
      ['over 100 characters', 'L'.repeat(101)],
      ['not a string', 42],
      ['multi-line', 'Payroll\nintegration'],
    ])('when the label is %s, then it is refused naming the label', (_label, label) => {
      expect(() => terms({ label })).toThrow(refusedNaming('label'));
    });

    it('when several terms are wrong, then the label is reported first', () => {
      expect(() => parseKeyTerms({ label: '', permissions: [], expiresInDays: 0 }, 2)).toThrow(refusedNaming('label'));
    });
  });
});
