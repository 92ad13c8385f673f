import { z } from 'zod';
import { CONTRACT_STATUSES } from '../domain/operation-status.ts';
import { fieldError, type FieldError } from '../http/problems.ts';

/**
 * Query strings of the list endpoints, and the response objects of the contract, as zod schemas: the server
 * validates queries with the first and the OpenAPI document is generated from both.
 */
export const MAX_LIMIT = 1000;
export const DEFAULT_LIMIT = 100;
const MAX_OFFSET = 10_000_000;

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

const limit = wholeNumber('limit', 1, MAX_LIMIT, DEFAULT_LIMIT, `Page size, 1 to ${MAX_LIMIT}; default ${DEFAULT_LIMIT}.`);
const offset = wholeNumber('offset', 0, MAX_OFFSET, 0, 'Items to skip; default 0. Page by adding limit to offset.');

export const listQuery = z.strictObject({ limit, offset });
export const paymentsQuery = z.strictObject({
  limit,
  offset,
  search: z
    .string({ error: notOneString('search') })
    .max(100, 'search must be at most 100 characters')
    .optional()
    .meta({ description: 'Matches the sender phone number (spaces and a leading + are ignored) or the memo, case-insensitively.' }),
});

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

export function parseQuery<T>(schema: z.ZodType<T>, query: unknown): { ok: true; value: T } | { ok: false; errors: FieldError[] } {
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
const amount = z.string().meta({ description: 'Decimal string at the asset scale.', example: '150.00' });
const status = z.enum(CONTRACT_STATUSES).meta({
  description: 'Where the operation is in its lifecycle (the contract leaves this field unnamed; see the README).',
});
const timestamp = z.string().meta({ description: 'ISO 8601.', example: '2026-11-21T10:15:00.000Z' });

export const balanceResponse = z.object({
  balance: z.string().meta({
    description: 'The contract\'s field: the current (executed) balance, credits minus debits that happened on the ledger; a decimal string at the asset scale.',
    example: '150.00',
  }),
  available: z.string().meta({
    description: 'Extension (not in the contract): what a create can spend now, `balance` minus `held`. A create whose amount plus fee is above it is refused with 403 insufficient-balance, whose detail names this amount.',
    example: '120.00',
  }),
  held: z.string().meta({
    description: 'Extension (not in the contract): what pending and approved operations hold (amount plus fee each) until they complete, are rejected or fail.',
    example: '30.00',
  }),
});

export const distributorOperationResponse = z.object({
  operationID: z.string().meta({ example: 'op_3f1c9a0e5b7d4c2a9e8f7a6b5c4d3e2f' }),
  distributorID: z.string(),
  operationType: z.enum(['cash-in', 'cash-out-fulfillment']),
  amount,
  phoneTo: z.string().optional().meta({ description: 'cash-in to an individual.' }),
  merchantTo: z.string().optional().meta({ description: 'cash-in to a merchant: its merchantID.' }),
  merchantName: z.string().optional(),
  merchantShortCode: z.number().int().optional(),
  memo: z.string().optional(),
  phoneFrom: z.string().optional().meta({ description: 'cash-out-fulfillment.' }),
  walletOperationID: z.string().meta({ description: 'wo_…; empty until completed.' }),
  cashOutFulfillmentType: z.string().nullable().optional(),
  cashOutFulfillmentID: z.string().nullable().optional(),
  sequenceNumber: z.number().int().nullable(),
  blockchainID: z.string().meta({ description: 'Empty until completed.' }),
  lastError: z.string().nullable(),
  rejectionReason: z.string().nullable().meta({ description: 'Extension (not in the contract): the reason the operation was rejected (by a checker, or with its API key\'s revocation); null unless `status` is `rejected`.' }),
  status,
  createdAt: timestamp,
  updatedAt: timestamp,
});

export const merchantOperationResponse = z.object({
  operationID: z.string(),
  merchantID: z.string(),
  operationType: z.enum(['cash-in', 'cash-out', 'pay-merchant', 'pay-individual']),
  amount,
  fee: amount,
  distributorTo: z.string().optional(),
  distributorName: z.string().optional(),
  merchantTo: z.string().optional(),
  merchantName: z.string().optional(),
  phoneTo: z.string().optional(),
  memo: z.string().optional(),
  blockchainID: z.string(),
  walletOperationID: z.string().meta({ description: 'Extension (not in the contract): wo_…, the wallet operation it became; empty until completed. For a pay-merchant it is the `operationID` of the payment in the payee\'s payments list; for a received cash-in, of the payment in this merchant\'s own list.' }),
  sequenceNumber: z.number().int().nullable(),
  lastError: z.string().nullable(),
  rejectionReason: z.string().nullable().meta({ description: 'Extension (not in the contract): the reason the operation was rejected (by a checker, or with its API key\'s revocation); null unless `status` is `rejected`.' }),
  status,
  createdAt: timestamp,
  updatedAt: timestamp,
});

export const paymentResponse = z.object({
  operationID: z.string().meta({ description: 'The wallet operation, wo_….' }),
  type: z.enum(['payment', 'cash-in']),
  amount,
  from: z.string(),
  fromType: z.enum(['individual', 'merchant', 'distributor']),
  fromShortCode: z.number().int().optional(),
  memo: z.string().nullable(),
  blockchainID: z.string(),
  createdAt: timestamp.meta({ description: 'When the payment was requested (the operation\'s creation): the same instant as the operation\'s createdAt in every other list.' }),
  completedAt: timestamp.meta({
    description: 'Extension field (not in the contract): when the payment completed, i.e. when it was received and entered this list. The list is ordered by it, newest first.',
  }),
  sourceOperationID: z.string().meta({ description: 'Extension (not in the contract): the operation (op_…) this payment came from, as the payer\'s or the distributor\'s operations list names it (its walletOperationID there is this payment\'s operationID).' }),
});
