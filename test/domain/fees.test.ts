import { describe, expect, it } from 'vitest';
import { feeFor, type FeeSchedule } from '../../src/domain/fees.ts';

/**
 * Fees of merchant operations: a flat part plus a percentage of the amount. The percentage is rounded up to
 * the asset's unit, so that no positive amount at a positive rate is charged nothing: otherwise splitting a
 * payment into small ones (1.5% of 0.33 is 0.00495) would avoid the fee.
 */
const schedule = (rule: { flat?: string; percent?: string }): FeeSchedule => ({
  'pay-merchant': { flat: rule.flat ?? '0', percent: rule.percent ?? '0' },
});

describe('feeFor', () => {
  it('when 1.5% is taken of 0.33 (0.00495), then the fee is 0.01, not 0.00', () => {
    expect(feeFor(schedule({ percent: '1.5' }), 'pay-merchant', '0.33', 2)).toBe('0.01');
  });

  it('when the smallest amount is charged the smallest rate, then the fee is one unit of the asset', () => {
    expect(feeFor(schedule({ percent: '0.01' }), 'pay-merchant', '0.01', 2)).toBe('0.01');
    expect(feeFor(schedule({ percent: '0.01' }), 'pay-merchant', '0.001', 3)).toBe('0.001');
  });

  it('when the percentage has a fraction of a unit left, then it is rounded up, even below half a unit', () => {
    expect(feeFor(schedule({ percent: '1.5' }), 'pay-merchant', '100.10', 2)).toBe('1.51'); // 1.5015
    expect(feeFor(schedule({ percent: '1' }), 'pay-merchant', '10.01', 2)).toBe('0.11'); // 0.1001
  });

  it('when the percentage falls on a unit, then it is exact', () => {
    expect(feeFor(schedule({ percent: '1.5' }), 'pay-merchant', '100.00', 2)).toBe('1.50');
    expect(feeFor(schedule({ percent: '2' }), 'pay-merchant', '0.50', 2)).toBe('0.01');
  });

  it('when there is a flat part, then it is added to the rounded-up percentage', () => {
    expect(feeFor(schedule({ flat: '0.50', percent: '1.5' }), 'pay-merchant', '0.33', 2)).toBe('0.51');
    expect(feeFor(schedule({ flat: '1.00' }), 'pay-merchant', '0.33', 2)).toBe('1.00');
  });

  it('when the rate is zero, or the operation type has no rule, then the fee is zero at the asset scale', () => {
    expect(feeFor(schedule({ percent: '0' }), 'pay-merchant', '0.33', 2)).toBe('0.00');
    expect(feeFor(schedule({ percent: '1.5' }), 'cash-out', '100.00', 3)).toBe('0.000');
  });

  it('when the asset scale is 0, then the percentage is rounded up to a whole unit', () => {
    expect(feeFor(schedule({ percent: '1.5' }), 'pay-merchant', '10', 0)).toBe('1');
    expect(feeFor(schedule({ percent: '1.5' }), 'pay-merchant', '200', 0)).toBe('3');
  });
});
