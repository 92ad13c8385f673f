import { z } from 'zod';
import { CONTRACT_STATUSES } from '../domain/operation-status.ts';
import { fieldError, type FieldError } from '../http/problems.ts';
import { formatAmount } from '../domain/money.ts';
import { NO_CONTROL_CHARACTERS_PATTERN, withoutControlCharacters } from '../domain/text.ts';

/**
 * Query strings of the list endpoints, and the response objects of the contract, as zod schemas: the server
 * validates queries with the first and the OpenAPI document is generated from both.
 */
export const MAX_LIMIT = 1000;
export const DEFAULT_LIMIT = 100;
export const MAX_OFFSET = 10_000_000;

/** A query value that is not one string: repeated (an array) or bracketed (`limit[a]=1`, an object). */
const notOneString = (field: string) => (issue: { input?: unknown }) =>
  Array.isArray(issue.input) ? `${field} must appear at most once` : `${field} must be a single plain value`;

// Query values arrive as strings; a repeated parameter arrives as an array and is refused by z.string().
const wholeNumber = (field: string, min: number, max: number, fallback: number, description: string) =>
  z
    .string({ error: notOneString(field) })
    .regex(/^\d{1,9}$/, `${field} must be a whole number`)
    .transform(Number)
    .pipe(z.number().min(min, `${field} must be at least ${min}`).max(max, `${field} must be at most ${max}`))
    .optional()
    .transform((value) => value ?? fallback)
    .meta({ description });

const limit = wholeNumber(
  'limit',
  1,
  MAX_LIMIT,
  DEFAULT_LIMIT,
  `Page size, 1 to ${MAX_LIMIT}; default ${DEFAULT_LIMIT}.`,
);
const offset = wholeNumber('offset', 0, MAX_OFFSET, 0, 'Items to skip; default 0. Page by adding limit to offset.');

export const listQuery = z.strictObject({ limit, offset });

// Extensions (not in the contract, which names no filter): additive, and every other unknown parameter is still 400.
/**
 * Dates only (midnight UTC) or date-times with their offset: a time without one would mean a different instant per
 * client.
 */
const INSTANT = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/i;
/** Date.parse rolls 2026-02-30 over to March: each part is checked against the calendar instead. */
function isCalendarInstant(value: string): boolean {
  const [year, month, day, hour = 0, minute = 0, second = 0] = (value.match(/\d+/g) ?? [])
    .slice(0, 6)
    .map(Number) as number[];
  const daysInMonth = new Date(Date.UTC(year!, month!, 0)).getUTCDate();
  return month! >= 1 && month! <= 12 && day! >= 1 && day! <= daysInMonth && hour < 24 && minute < 60 && second < 60;
}
const instant = (field: string, description: string) =>
  z
    .string({ error: notOneString(field) })
    .regex(INSTANT, {
      error: `${field} must be an ISO 8601 date (2026-11-21) or date-time with its offset (2026-11-21T10:15:00Z)`,
      abort: true,
    })
    .refine(isCalendarInstant, `${field} is not a calendar date and time`)
    // Stored times are toISOString's form: the same form compares in time order.
    .transform((value) => new Date(value).toISOString())
    .optional()
    .meta({ description, format: 'date-time', example: '2026-11-21T00:00:00Z' });

const createdRange = {
  createdFrom: instant(
    'createdFrom',
    'Extension (not in the contract): only items created at or after this instant (inclusive). An ISO 8601 date ' +
      '(midnight UTC) or date-time with its offset.',
  ),
  createdTo: instant(
    'createdTo',
    'Extension (not in the contract): only items created before this instant (exclusive). An ISO 8601 date ' +
      '(midnight UTC) or date-time with its offset.',
  ),
};
const orderedRange = (range: { createdFrom?: string | undefined; createdTo?: string | undefined }) =>
  range.createdFrom === undefined || range.createdTo === undefined || range.createdFrom < range.createdTo;
const RANGE_ORDER = { error: 'createdTo must be after createdFrom', path: ['createdTo'] };

/** The operation lists' query: the contract's paging, and the extension filters by status and creation time. */
export const operationsQuery = z
  .strictObject({
    limit,
    offset,
    status: z
      .enum(CONTRACT_STATUSES, {
        error: (issue) =>
          typeof issue.input === 'string'
            ? `status must be one of ${CONTRACT_STATUSES.join(', ')}`
            : notOneString('status')(issue),
      })
      .optional()
      .meta({
        description:
          'Extension (not in the contract): only operations in this status ' + `(${CONTRACT_STATUSES.join(', ')}).`,
      }),
    ...createdRange,
  })
  .refine(orderedRange, RANGE_ORDER);

const paymentsShape = {
  limit,
  offset,
  search: z
    .string({ error: notOneString('search') })
    .max(100, 'search must be at most 100 characters')
    .superRefine(withoutControlCharacters('search'))
    .optional()
    .meta({
      description:
        'Matches the sender phone number (spaces and a leading + are ignored) or the memo, case-insensitively. ' +
        'A control character (U+0000-001F, U+007F-009F) is refused with 400, on every store.',
      pattern: NO_CONTROL_CHARACTERS_PATTERN,
    }),
  ...createdRange,
};
export const paymentsQuery = z.strictObject(paymentsShape).refine(orderedRange, RANGE_ORDER);

/**
 * Query parameters whose name starts with `_` are cache busters (`?_=1732312345678`, as jQuery's `cache:
 * false` and many HTTP libraries add them): ignored on every GET, whatever their value or count. Any other
 * unknown parameter is still refused, so that a misspelt `limt` or `ofset` is never silently dropped.
 */
export const isCacheBuster = (name: string) => name.startsWith('_');

const withoutCacheBusters = (query: unknown): unknown =>
  query && typeof query === 'object' && !Array.isArray(query)
    ? Object.fromEntries(Object.entries(query).filter(([name]) => !isCacheBuster(name)))
    : query;

export function parseQuery<T>(
  schema: z.ZodType<T>,
  query: unknown,
): { ok: true; value: T } | { ok: false; errors: FieldError[] } {
  const result = schema.safeParse(withoutCacheBusters(query ?? {}));
  if (result.success) return { ok: true, value: result.data };
  const errors = result.error.issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => fieldError(key, `${key} is not a query parameter of this endpoint`))
      : [fieldError(issue.path.map(String).join('.') || 'query', issue.message)],
  );
  return { ok: false, errors };
}

// Responses ------------------------------------------------------------------------------------------------
/** Amounts on the wire: formatAmount's form at the asset scale (no sign, no exponent, exactly `scale` decimals). */
export const amountPattern = (assetScale: number, signed = false) =>
  `^${signed ? '-?' : ''}(0|[1-9][0-9]*)${assetScale > 0 ? `\\.[0-9]{${assetScale}}` : ''}$`;

const status = z.enum(CONTRACT_STATUSES).meta({
  description: 'Where the operation is in its lifecycle (the contract leaves this field unnamed; see the README).',
});
const timestamp = z
  .string()
  .meta({ description: 'ISO 8601.', format: 'date-time', example: '2026-11-21T10:15:00.000Z' });

/**
 * The response objects of the contract, at an asset scale (amounts carry its pattern). Each resource is a
 * union discriminated by its kind, and each variant lists its own fields, required where every item of that
 * kind has them: fields that do not apply to a kind are absent from its objects, and the variant says so.
 */
export function responseSchemas(assetScale: number) {
  const amount = z.string().meta({
    description: 'Decimal string at the asset scale.',
    pattern: amountPattern(assetScale),
    example: formatAmount(150, assetScale),
  });
  const signedAmount = (description: string, example: number) =>
    z
      .string()
      .meta({ description, pattern: amountPattern(assetScale, true), example: formatAmount(example, assetScale) });

  const balance = z.strictObject({
    balance: signedAmount(
      "The contract's field: the current (executed) balance, credits minus debits that happened on the ledger; a " +
        'decimal string at the asset scale.',
      150,
    ),
    available: signedAmount(
      'Extension (not in the contract): what a create can spend now, `balance` minus `held`. A create whose ' +
        'amount plus fee is above it is refused with 403 insufficient-balance, whose detail names this amount.',
      120,
    ),
    held: signedAmount(
      'Extension (not in the contract): what pending and approved operations hold (amount plus fee each) until ' +
        'they complete, are rejected or fail.',
      30,
    ),
  });

  const lifecycle = {
    blockchainID: z.string().meta({ description: 'Empty until completed.' }),
    sequenceNumber: z.number().int().nullable(),
    lastError: z.string().nullable(),
    rejectionReason: z
      .string()
      .nullable()
      .meta({
        description:
          'Extension (not in the contract): the reason the operation was rejected (by a checker, or with its API ' +
          "key's revocation); null unless `status` is `rejected`.",
      }),
    status,
    createdAt: timestamp,
    updatedAt: timestamp,
  };
  const memo = z.string().optional().meta({ description: 'Absent when the operation has none.' });

  const distributorCommon = {
    operationID: z.string().meta({ example: 'op_3f1c9a0e5b7d4c2a9e8f7a6b5c4d3e2f' }),
    distributorID: z.string(),
    amount,
    memo,
    walletOperationID: z.string().meta({ description: 'wo_…; empty until completed.' }),
    ...lifecycle,
  };
  const distributorOperation = {
    'cash-in': z.strictObject({
      operationType: z.literal('cash-in'),
      ...distributorCommon,
      phoneTo: z
        .string()
        .optional()
        .meta({ description: 'Cash-in to an individual: their phone. Absent for a cash-in to a merchant.' }),
      merchantTo: z
        .string()
        .optional()
        .meta({ description: 'Cash-in to a merchant: its merchantID. Absent for a cash-in to an individual.' }),
      merchantName: z.string().optional().meta({ description: 'Cash-in to a merchant: its name.' }),
      merchantShortCode: z
        .number()
        .int()
        .min(1)
        .max(999_999_999)
        .optional()
        .meta({ description: 'Cash-in to a merchant: its short code.' }),
    }),
    'cash-out-fulfillment': z.strictObject({
      operationType: z.literal('cash-out-fulfillment'),
      ...distributorCommon,
      phoneFrom: z.string().meta({ description: 'The individual whose wallet is debited.' }),
      cashOutFulfillmentType: z.string().nullable().meta({ description: '`cash`.' }),
      cashOutFulfillmentID: z
        .string()
        .nullable()
        .meta({ description: 'Receipt or reference of the cash handed over.' }),
    }),
  };

  const merchantCommon = {
    operationID: z.string(),
    merchantID: z.string(),
    amount,
    fee: amount,
    memo,
    walletOperationID: z.string().meta({
      description:
        'Extension (not in the contract): wo_…, the wallet operation it became; empty until completed. For a ' +
        "pay-merchant it is the `operationID` of the payment in the payee's payments list.",
    }),
    ...lifecycle,
  };
  const merchantOperation = {
    'cash-in': z
      .strictObject({
        operationType: z.literal('cash-in'),
        ...merchantCommon,
        distributorTo: z.string().meta({ description: 'The distributor the funds came from.' }),
        distributorName: z.string(),
      })
      .meta({ description: 'Funds received from a distributor; fee is always 0.' }),
    'cash-out': z
      .strictObject({
        operationType: z.literal('cash-out'),
        ...merchantCommon,
        distributorTo: z.string().meta({ description: 'The distributor withdrawn to.' }),
        distributorName: z.string(),
      })
      .meta({ description: 'Funds withdrawn to a distributor.' }),
    'pay-merchant': z
      .strictObject({
        operationType: z.literal('pay-merchant'),
        ...merchantCommon,
        merchantTo: z.string().meta({ description: 'The merchant paid: its merchantID.' }),
        merchantName: z.string(),
      })
      .meta({ description: 'A payment to another merchant.' }),
    'pay-individual': z
      .strictObject({
        operationType: z.literal('pay-individual'),
        ...merchantCommon,
        phoneTo: z.string().meta({ description: 'The individual paid.' }),
      })
      .meta({ description: 'A payment to an individual wallet.' }),
  };

  const paymentCommon = {
    operationID: z.string().meta({ description: 'The wallet operation, wo_….' }),
    amount,
    memo: z.string().nullable(),
    blockchainID: z.string(),
    createdAt: timestamp.meta({
      description:
        "When the payment was requested (the operation's creation): the same instant as the operation's " +
        'createdAt in every other list.',
      format: 'date-time',
    }),
    completedAt: timestamp.meta({
      description:
        'Extension field (not in the contract): when the payment completed, i.e. when it was received and ' +
        'entered this list. The list is ordered by it, newest first.',
      format: 'date-time',
    }),
    sourceOperationID: z.string().meta({
      description:
        "Extension (not in the contract): the operation (op_…) this payment came from, as the payer's or the " +
        "distributor's operations list names it (its walletOperationID there is this payment's operationID).",
    }),
  };
  const payment = {
    individual: z.strictObject({
      fromType: z.literal('individual'),
      type: z.literal('payment'),
      ...paymentCommon,
      from: z.string().meta({ description: "The individual's phone." }),
    }),
    merchant: z.strictObject({
      fromType: z.literal('merchant'),
      type: z.literal('payment'),
      ...paymentCommon,
      from: z.string().meta({ description: "The paying merchant's name." }),
      fromShortCode: z
        .number()
        .int()
        .min(1)
        .max(999_999_999)
        .optional()
        .meta({ description: "The paying merchant's short code." }),
    }),
    distributor: z.strictObject({
      fromType: z.literal('distributor'),
      type: z.literal('cash-in'),
      ...paymentCommon,
      from: z.string().meta({ description: "The distributor's name." }),
    }),
  };

  const union = <V extends Record<string, z.ZodObject>>(key: string, variants: V) =>
    z.discriminatedUnion(key, Object.values(variants) as [V[keyof V], ...V[keyof V][]]);
  return {
    balance,
    distributorOperation: { variants: distributorOperation, union: union('operationType', distributorOperation) },
    merchantOperation: { variants: merchantOperation, union: union('operationType', merchantOperation) },
    payment: { variants: payment, union: union('fromType', payment) },
  };
}

export type ResponseSchemas = ReturnType<typeof responseSchemas>;
