import { z } from 'zod';
import type { MerchantOperationType } from './events.ts';
import { Decimal } from './money.ts';

/**
 * Fees of merchant operations: per operation type a flat part and a percentage of the amount, rounded half
 * up to the asset scale. Distributor operations (cash-in, cash-out-fulfillment) never carry a fee.
 */
const decimalString = z.string().regex(/^\d{1,12}(\.\d{1,8})?$/, 'a non-negative decimal string');
const feeRule = z.object({ flat: decimalString.default('0'), percent: decimalString.default('0') }).strict();
export const feeScheduleSchema = z
  .object({ 'cash-out': feeRule.optional(), 'pay-merchant': feeRule.optional(), 'pay-individual': feeRule.optional() })
  .strict();

export type FeeSchedule = z.infer<typeof feeScheduleSchema>;

export function feeFor(schedule: FeeSchedule, operationType: MerchantOperationType, amount: string, scale: number): string {
  const rule = schedule[operationType];
  if (!rule) return new Decimal(0).toFixed(scale);
  const fee = new Decimal(rule.flat).plus(new Decimal(amount).times(rule.percent).dividedBy(100));
  return fee.toDecimalPlaces(scale, Decimal.ROUND_HALF_UP).toFixed(scale);
}
