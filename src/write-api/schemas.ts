import { z } from 'zod';
import { DomainError } from '../domain/errors.ts';
import { parsePositiveAmount } from '../domain/money.ts';
import { normalizePhone } from '../domain/phone.ts';
import { requiredText, shortCode } from '../domain/text.ts';
import type { CreateOperationInput } from '../commands/operation-handlers.ts';
import { fieldError, type FieldError } from '../http/problems.ts';

/**
 * The create-operation bodies of the contract as zod schemas. The field rules are the domain's own
 * (amounts, phones, short codes, text), wrapped so that each refusal becomes one errors[] item naming its
 * field. Unknown fields are refused: in a payments API a misspelt optional field ("memmo") must not be
 * silently dropped.
 */
function domainRule<T>(field: string, parse: (value: unknown) => T) {
  return z.unknown().transform((value, ctx): T => {
    if (value === undefined) {
      ctx.addIssue({ code: 'custom', message: `${field} is required` });
      return z.NEVER;
    }
    try {
      return parse(value);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: error instanceof DomainError ? error.message : `${field} is invalid` });
      return z.NEVER;
    }
  });
}

const MEMO_MAX = 256;

function buildSchemas(assetScale: number) {
  const amount = domainRule('amount', (v) => parsePositiveAmount('amount', v, assetScale));
  const phone = (field: string) => domainRule(field, (v) => normalizePhone(field, v));
  const code = (field: string) => domainRule(field, (v) => {
    if (typeof v !== 'string') throw new DomainError('INVALID_INPUT', `${field} must be a string of digits`, field);
    return shortCode(field, v);
  });
  const memo = domainRule('memo', (v) => (v === null ? undefined : requiredText('memo', v, MEMO_MAX))).optional();

  const cashIn = z.strictObject({
    operationType: z.literal('cash-in'),
    amount,
    phoneTo: phone('phoneTo').optional(),
    merchantToShortCode: code('merchantToShortCode').optional(),
    memo,
  }).superRefine((body, ctx) => {
    // The contract: exactly one destination, and the error names phoneTo in both cases.
    if (body.phoneTo !== undefined && body.merchantToShortCode !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['phoneTo'], message: 'give either phoneTo or merchantToShortCode, not both' });
    } else if (body.phoneTo === undefined && body.merchantToShortCode === undefined) {
      ctx.addIssue({ code: 'custom', path: ['phoneTo'], message: 'one of phoneTo or merchantToShortCode is required' });
    }
  });
  const cashOutFulfillment = z.strictObject({
    operationType: z.literal('cash-out-fulfillment'),
    amount,
    phoneFrom: phone('phoneFrom'),
    cashOutFulfillmentType: z.literal('cash', { error: 'cashOutFulfillmentType must be "cash", the only type supported' }),
    cashOutFulfillmentID: domainRule('cashOutFulfillmentID', (v) => requiredText('cashOutFulfillmentID', v, 100)),
    memo,
  });
  const cashOut = z.strictObject({ operationType: z.literal('cash-out'), amount, distributorToShortCode: code('distributorToShortCode'), memo });
  const payMerchant = z.strictObject({ operationType: z.literal('pay-merchant'), amount, merchantToShortCode: code('merchantToShortCode'), memo });
  const payIndividual = z.strictObject({ operationType: z.literal('pay-individual'), amount, phoneTo: phone('phoneTo'), memo });

  return {
    distributor: { 'cash-in': cashIn, 'cash-out-fulfillment': cashOutFulfillment },
    merchant: { 'cash-out': cashOut, 'pay-merchant': payMerchant, 'pay-individual': payIndividual },
  } as const;
}

export type OperationSchemas = ReturnType<typeof buildSchemas>;
export const operationSchemas = buildSchemas;

function issuesToFieldErrors(issues: z.core.$ZodIssue[]): FieldError[] {
  const errors: FieldError[] = [];
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) errors.push(fieldError(key, `${key} is not a field of this operation type`));
      continue;
    }
    const field = issue.path.map(String).join('.') || 'body';
    const missing = issue.code === 'invalid_type' && issue.input === undefined;
    errors.push(fieldError(field, missing ? `${field} is required` : issue.message));
  }
  return errors;
}

/**
 * Validates a create-operation body for one kind of party: a JSON object, a known operationType, then the
 * operation type's own fields. Returns the normalized input or the list of field errors.
 */
export function parseCreateOperation(
  schemas: OperationSchemas,
  partyType: 'distributor' | 'merchant',
  body: unknown,
): { ok: true; input: CreateOperationInput } | { ok: false; errors: FieldError[] } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return { ok: false, errors: [fieldError('body', 'the body must be a JSON object')] };
  }
  const forParty = schemas[partyType] as Record<string, z.ZodType<CreateOperationInput>>;
  const operationType = (body as Record<string, unknown>).operationType;
  if (operationType === undefined) return { ok: false, errors: [fieldError('operationType', 'operationType is required')] };
  const schema = typeof operationType === 'string' && Object.hasOwn(forParty, operationType) ? forParty[operationType] : undefined;
  if (!schema) {
    const allowed = Object.keys(forParty).join(', ');
    return { ok: false, errors: [fieldError('operationType', `operationType must be one of ${allowed} for a ${partyType}`)] };
  }
  const result = schema.safeParse(body);
  return result.success ? { ok: true, input: result.data } : { ok: false, errors: issuesToFieldErrors(result.error.issues) };
}
