import { z } from 'zod';
import type { MerchantOperationType } from './events.ts';
import { Decimal } from './money.ts';

/**
 * Fees of merchant operations: per operation type a flat part and a percentage of the amount. The percentage
 * is rounded up to the asset's unit (ceiling at the asset scale): a positive amount at a positive rate always
 * pays at least one unit, or splitting a payment into small ones would avoid the fee (1.5% of 0.33 is
 * 0.00495, half-up 0.00). A flat part finer than the scale is rounded half up. Distributor operations
 * (cash-in, cash-out-fulfillment) never carry a fee.
 */
const decimalString = z.string().regex(/^\d{1,12}(\.\d{1,8})?$/, 'a non-negative decimal string');
const feeRule = z.object({ flat: decimalString.default('0'), percent: decimalString.default('0') }).strict();
export const feeScheduleSchema = z
  .object({ 'cash-out': feeRule.optional(), 'pay-merchant': feeRule.optional(), 'pay-individual': feeRule.optional() })
  .strict();

export type FeeSchedule = z.infer<typeof feeScheduleSchema>;

export function feeFor(
  schedule: FeeSchedule,
  operationType: MerchantOperationType,
  amount: string,
  scale: number,
): string {
  const rule = schedule[operationType];
  if (!rule) return new Decimal(0).toFixed(scale);
  const percentage = new Decimal(amount).times(rule.percent).dividedBy(100).toDecimalPlaces(scale, Decimal.ROUND_CEIL);
  return new Decimal(rule.flat).plus(percentage).toDecimalPlaces(scale, Decimal.ROUND_HALF_UP).toFixed(scale);
}
