import { z } from 'zod';
import { DomainError } from '../domain/errors.ts';
import { formatAmount, parsePositiveAmount, positiveAmountPattern } from '../domain/money.ts';
import { normalizePhone } from '../domain/phone.ts';
import { cashOutCode } from '../domain/cash-out-codes.ts';
import { requiredText, shortCode } from '../domain/text.ts';
import type { CreateOperationInput } from '../commands/operation-handlers.ts';
import { fieldError, type FieldError } from '../http/problems.ts';

/**
 * The create-operation bodies of the contract as zod schemas. The field rules are the domain's own
 * (amounts, phones, short codes, text), wrapped so that each refusal becomes one errors[] item naming its
 * field. Unknown fields are refused: in a payments API a misspelt optional field ("memmo") must not be
 * silently dropped.
 */
/**
 * A string field checked by a domain rule: the zod type describes it (and the OpenAPI document shows it),
 * the domain function decides, and either refusal becomes one errors[] item for the field.
 */
function rule<T>(
  field: string,
  meta: { description: string; example: string; pattern?: string; maxLength?: number },
  parse: (value: string) => T,
  kind = 'a string',
) {
  return z
    .string({
      error: (issue) =>
        issue.input === undefined ? `${field} is required` : `${field} must be ${kind}, not ${jsonType(issue.input)}`,
    })
    .meta(meta)
    .transform(byDomainRule(field, parse));
}

/** A domain rule as a zod transform: its refusal becomes the field's issue, with the rule's own words. */
const byDomainRule =
  <V, T>(field: string, parse: (value: V) => T) =>
  (value: V, ctx: z.core.$RefinementCtx<V>): T => {
    try {
      return parse(value);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: error instanceof DomainError ? error.message : `${field} is invalid` });
      return z.NEVER;
    }
  };

/** The JSON name of a value's type, for "must be a string, not a number". */
function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'number') return 'a number';
  if (typeof value === 'boolean') return 'a boolean';
  return typeof value;
}

/**
 * An optional field: absent, or `null` (what Jackson, System.Text.Json and Go send for an unset field), both mean
 * absent.
 */
const absentOrNull = <S extends z.ZodType>(schema: S) => schema.nullish().transform((value) => value ?? undefined);

const MEMO_MAX = 256;

function buildSchemas(assetScale: number) {
  // The patterns are what the domain rules accept (a phone's validity beyond its characters is the domain's alone).
  const amount = rule(
    'amount',
    {
      description: `Decimal amount greater than 0, at most ${assetScale} decimal places, no sign or exponent.`,
      example: formatAmount(150, assetScale),
      pattern: positiveAmountPattern(assetScale),
    },
    (v) => parsePositiveAmount('amount', v, assetScale),
    `a string (a decimal in quotes, e.g. "${formatAmount(10, assetScale)}")`,
  );
  const phone = (field: string, description: string) =>
    rule(
      field,
      {
        description: `${description}, in international format.`,
        example: '+2348123456781',
        pattern: '^\\s*\\+[0-9][0-9 ()\\-.]*\\s*$',
        maxLength: 40,
      },
      (v) => normalizePhone(field, v),
      'a string of digits in international format (e.g. "+2348123456781")',
    );
  // The contract sends short codes as strings, where responses carry merchantShortCode as an integer: both are
  // accepted (an extension), so that a client may send back the number it was given.
  const code = (field: string, description: string) =>
    z
      .union([
        rule(
          field,
          {
            description: 'A string of digits, as the contract sends it.',
            example: '4521',
            pattern: '^[1-9][0-9]{0,8}$',
          },
          (v) => shortCode(field, v),
          'a string of digits or a whole number (e.g. "4521" or 4521)',
        ),
        z
          .number()
          .int({ error: `${field} must be a string of digits or a whole number (e.g. "4521" or 4521)` })
          .meta({
            description:
              'Extension (not in the contract): the same short code as a whole number, as responses carry ' +
              'merchantShortCode.',
            example: 4521,
          })
          .transform(byDomainRule(field, (v: number) => shortCode(field, String(v)))),
      ])
      .meta({ description });
  const memo = rule(
    'memo',
    {
      description: `Optional reference note, at most ${MEMO_MAX} characters once trimmed, not blank.`,
      example: 'invoice 1042',
      pattern: '\\S',
    },
    (v) => requiredText('memo', v, MEMO_MAX),
  ).nullish();

  const cashIn = z.strictObject({
    operationType: z.literal('cash-in'),
    amount,
    phoneTo: absentOrNull(
      phone('phoneTo', 'Registered individual to credit (not with merchantToShortCode; null is absent)'),
    ),
    merchantToShortCode: absentOrNull(
      code('merchantToShortCode', 'Short code of the merchant to credit (not with phoneTo; null is absent)'),
    ),
    memo,
  });
  const cashOutFulfillment = z.strictObject({
    operationType: z.literal('cash-out-fulfillment'),
    amount,
    phoneFrom: phone('phoneFrom', 'The individual whose wallet is debited'),
    cashOutFulfillmentType: z.literal('cash', {
      error: 'cashOutFulfillmentType must be "cash", the only type supported',
    }),
    cashOutFulfillmentID: rule(
      'cashOutFulfillmentID',
      {
        description: 'Receipt or reference of the cash handed over, at most 100 characters once trimmed, not blank.',
        example: 'RCPT-0091',
        pattern: '\\S',
      },
      (v) => requiredText('cashOutFulfillmentID', v, 100),
    ),
    memo,
    // An extension of the contract: required, and used once, where the platform runs with
    // CASH_OUT_CONSENT=individual-code.
    authorizationCode: absentOrNull(
      rule(
        'authorizationCode',
        {
          description:
            `Extension of the contract: the individual's one-time cash-out code (8 digits, from their wallet ` +
            'app; valid 10 minutes, once, up to the amount it was issued for). Required where the platform runs ' +
            'with CASH_OUT_CONSENT=individual-code (otherwise ignored); a missing, wrong, expired or used code ' +
            'is refused 403 /problems/cash-out-not-authorized. null is absent.',
          example: '48213907',
          pattern: '^ *(?:[0-9] *){8}$',
        },
        (v) => cashOutCode('authorizationCode', v),
        'a string of 8 digits (e.g. "48213907")',
      ),
    ),
  });
  const cashOut = z.strictObject({
    operationType: z.literal('cash-out'),
    amount,
    distributorToShortCode: code('distributorToShortCode', 'Short code of the distributor to withdraw to'),
    memo,
  });
  const payMerchant = z.strictObject({
    operationType: z.literal('pay-merchant'),
    amount,
    merchantToShortCode: code('merchantToShortCode', 'Short code of the merchant to pay'),
    memo,
  });
  const payIndividual = z.strictObject({
    operationType: z.literal('pay-individual'),
    amount,
    phoneTo: phone('phoneTo', 'Registered individual to pay'),
    memo,
  });

  return {
    distributor: { 'cash-in': cashIn, 'cash-out-fulfillment': cashOutFulfillment },
    merchant: { 'cash-out': cashOut, 'pay-merchant': payMerchant, 'pay-individual': payIndividual },
  } as const;
}

export type OperationSchemas = ReturnType<typeof buildSchemas>;
export const operationSchemas = buildSchemas;

/**
 * zod issues to errors[] items. Whether a field is missing is read from the body itself (zod's final issues
 * do not carry the input): "is required" only for a field that is really absent, never for a wrong type.
 */
function issuesToFieldErrors(issues: z.core.$ZodIssue[], body: Record<string, unknown>): FieldError[] {
  const errors: FieldError[] = [];
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) errors.push(fieldError(key, `${key} is not a field of this operation type`));
      continue;
    }
    const field = issue.path.map(String).join('.') || 'body';
    if (issue.code === 'invalid_union') {
      // A short code (string or number): the refusal of the branch of the value's own type, else of the first.
      const branch =
        issue.errors.find((branchIssues) => branchIssues[0]?.code !== 'invalid_type') ?? issue.errors[0] ?? [];
      const missing = issue.path.length === 1 && !Object.hasOwn(body, issue.path[0] as PropertyKey);
      errors.push(fieldError(field, missing ? `${field} is required` : (branch[0]?.message ?? `${field} is invalid`)));
      continue;
    }
    const missing = issue.path.length === 1 && !Object.hasOwn(body, issue.path[0] as PropertyKey);
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
  if (operationType === undefined)
    return { ok: false, errors: [fieldError('operationType', 'operationType is required')] };
  if (typeof operationType !== 'string') {
    const allowed = Object.keys(forParty).join(', ');
    return {
      ok: false,
      errors: [
        fieldError(
          'operationType',
          `operationType must be a string, one of ${allowed}, not ${jsonType(operationType)}`,
        ),
      ],
    };
  }
  const schema =
    typeof operationType === 'string' && Object.hasOwn(forParty, operationType) ? forParty[operationType] : undefined;
  if (!schema) {
    const allowed = Object.keys(forParty).join(', ');
    return {
      ok: false,
      errors: [fieldError('operationType', `operationType must be one of ${allowed} for a ${partyType}`)],
    };
  }
  const crossField = operationType === 'cash-in' ? cashInDestinationErrors(body as Record<string, unknown>) : [];
  const result = schema.safeParse(body);
  if (result.success && crossField.length === 0) return { ok: true, input: result.data };
  const errors = [
    ...crossField,
    ...(result.success ? [] : issuesToFieldErrors(result.error.issues, body as Record<string, unknown>)),
  ];
  // One item per field: the rule across fields speaks first for the field it names.
  return {
    ok: false,
    errors: errors.filter((error, i) => errors.findIndex((other) => other.field === error.field) === i),
  };
}

/**
 * The contract's rule 5, checked on the raw body beside the field rules (a zod refinement would run only
 * once every field is valid, and a client would learn of its errors one at a time): exactly one destination,
 * and the error names phoneTo in both cases.
 */
function cashInDestinationErrors(body: Record<string, unknown>): FieldError[] {
  const hasPhone = body.phoneTo !== undefined && body.phoneTo !== null;
  const hasMerchant = body.merchantToShortCode !== undefined && body.merchantToShortCode !== null;
  if (hasPhone && hasMerchant) return [fieldError('phoneTo', 'give either phoneTo or merchantToShortCode, not both')];
  if (!hasPhone && !hasMerchant) return [fieldError('phoneTo', 'one of phoneTo or merchantToShortCode is required')];
  return [];
}
