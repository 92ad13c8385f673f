import type { z } from 'zod';
import { DomainError, invalidInput } from '../domain/errors.ts';
import { formatAmount } from '../domain/money.ts';
import { problemOfClientError } from '../http/client-errors.ts';
import {
  accessForbidden,
  problemOfDomainError,
  rateLimited,
  storeCorruptedProblem,
  storeUnavailableProblem,
  unauthorized,
  validationProblem,
  type Problem,
} from '../http/problems.ts';
import { EventStoreUnavailableError } from '../ports/event-store.ts';
import { StoreCorruptedError } from '../ports/store-corrupted.ts';
import { BODY_LIMIT } from '../write-api/routes.ts';
import { operationSchemas, parseCreateOperation } from '../write-api/schemas.ts';
import { componentSchemas, jsonSchema, ref, webhooks, type JsonSchema } from './openapi-schemas.ts';
import {
  DEFAULT_LIMIT,
  listQuery,
  MAX_LIMIT,
  MAX_OFFSET,
  operationsQuery,
  parseQuery,
  paymentsQuery,
  type ResponseSchemas,
} from './schemas.ts';

/**
 * The OpenAPI 3.1 description of the seven endpoints and the webhooks, generated from the zod schemas the
 * server validates with (openapi-schemas.ts), so that the document cannot drift from the validation. The
 * problem examples are made by the same functions that make the real responses. Served as JSON and as an
 * HTML page (renderDocsPage) by the app; committed as openapi.json at the repository's root (for the
 * default configuration) and printed by `wallet-ops openapi`.
 */
export type { JsonSchema } from './openapi-schemas.ts';
type Example = { summary?: string; value: unknown };
type Content = Record<string, { schema: JsonSchema; examples?: Record<string, Example> }>;
type Header = { description: string; required?: boolean; schema: JsonSchema };

export interface OpenApiParameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  description?: string;
  schema: JsonSchema;
  example?: unknown;
}

export interface OpenApiResponse {
  description: string;
  headers: Record<string, Header>;
  content?: Content;
}

export interface OpenApiOperation {
  operationId: string;
  tags: string[];
  summary: string;
  description: string;
  'x-permission': string;
  security: Array<Record<string, string[]>>;
  parameters: OpenApiParameter[];
  requestBody?: { required: boolean; description: string; content: Content };
  responses: Record<string, OpenApiResponse>;
}

export interface OpenApiDocument {
  openapi: string;
  info: {
    title: string;
    version: string;
    description: string;
    license: { name: string; identifier?: string; url?: string };
  };
  servers: Array<{
    url: string;
    description: string;
    variables?: Record<string, { default: string; description?: string }>;
  }>;
  security: Array<Record<string, string[]>>;
  tags: Array<{ name: string; description: string }>;
  paths: Record<string, Partial<Record<'get' | 'post', OpenApiOperation>>>;
  webhooks: Record<string, { post: JsonSchema }>;
  components: { securitySchemes: Record<string, JsonSchema>; schemas: Record<string, JsonSchema> };
}

const PHONE = '+2348123456781';
const OPERATION_ID = 'op_3f1c9a0e5b7d4c2a9e8f7a6b5c4d3e2f';
const DISTRIBUTOR_ID = '0b6f4f5e-7a51-4c6d-9a43-2d1f0f6c8e21';
const MERCHANT_ID = '5d2c7e90-18b4-4f3a-b6a1-7c9e0d4f2b13';
const AT = '2026-11-21T10:15:00.000Z';
const LATER = '2026-11-21T10:17:42.000Z';

function requestExamples(amount: string) {
  return {
    distributor: {
      cashInToIndividual: {
        summary: 'cash-in to an individual',
        value: { operationType: 'cash-in', amount, phoneTo: PHONE, memo: 'invoice 1042' },
      },
      cashInToMerchant: {
        summary: 'cash-in to a merchant',
        value: { operationType: 'cash-in', amount, merchantToShortCode: '4521' },
      },
      cashOutFulfillment: {
        summary: 'cash-out-fulfillment',
        value: {
          operationType: 'cash-out-fulfillment',
          amount,
          phoneFrom: PHONE,
          cashOutFulfillmentType: 'cash',
          cashOutFulfillmentID: 'RCPT-0091',
        },
      },
    },
    merchant: {
      cashOut: {
        summary: 'cash-out to a distributor',
        value: { operationType: 'cash-out', amount, distributorToShortCode: '1001' },
      },
      payMerchant: {
        summary: 'pay a merchant',
        value: { operationType: 'pay-merchant', amount, merchantToShortCode: '4521', memo: 'supplies' },
      },
      payIndividual: {
        summary: 'pay an individual',
        value: { operationType: 'pay-individual', amount, phoneTo: PHONE },
      },
    },
  } as const;
}

function responseExamples(amount: string, zero: string, assetScale: number) {
  const distributorOperation: z.input<ResponseSchemas['distributorOperation']['union']> = {
    operationID: OPERATION_ID,
    distributorID: DISTRIBUTOR_ID,
    operationType: 'cash-in',
    amount,
    phoneTo: PHONE,
    memo: 'invoice 1042',
    walletOperationID: 'wo_81d2c4e6f0a24b9c8d7e6f5a4b3c2d1e',
    sequenceNumber: 48213,
    blockchainID: '9f3b2c1d0e4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c',
    lastError: null,
    rejectionReason: null,
    status: 'completed',
    createdAt: AT,
    updatedAt: LATER,
  };
  const merchantOperation: z.input<ResponseSchemas['merchantOperation']['union']> = {
    operationID: OPERATION_ID,
    merchantID: MERCHANT_ID,
    operationType: 'pay-individual',
    amount,
    fee: zero,
    phoneTo: PHONE,
    blockchainID: '',
    walletOperationID: '',
    sequenceNumber: null,
    lastError: null,
    rejectionReason: null,
    status: 'pending',
    createdAt: AT,
    updatedAt: AT,
  };
  const payment: z.input<ResponseSchemas['payment']['union']> = {
    operationID: 'wo_81d2c4e6f0a24b9c8d7e6f5a4b3c2d1e',
    type: 'payment',
    amount,
    from: 'Corner Shop',
    fromType: 'merchant',
    fromShortCode: 4521,
    memo: 'supplies',
    blockchainID: '9f3b2c1d0e4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c',
    createdAt: AT,
    completedAt: LATER,
    sourceOperationID: OPERATION_ID,
  };
  const balance: z.input<ResponseSchemas['balance']> = {
    balance: amount,
    available: formatAmount(120, assetScale),
    held: formatAmount(30, assetScale),
  };
  return { distributorOperation, merchantOperation, payment, balance };
}

/** The field errors the server gives for a body, by the server's own parser. */
function bodyProblem(
  assetScale: number,
  partyType: 'distributor' | 'merchant',
  body: Record<string, unknown>,
): Problem {
  const parsed = parseCreateOperation(operationSchemas(assetScale), partyType, body);
  if (parsed.ok) throw new Error('an invalid-body example parsed: the examples are out of date');
  return validationProblem(parsed.errors).problem;
}

function queryProblem(schema: z.ZodType, query: Record<string, string>): Problem {
  const parsed = parseQuery(schema, query);
  if (parsed.ok) throw new Error('an invalid-query example parsed: the examples are out of date');
  return validationProblem(parsed.errors).problem;
}

const refused = (...error: ConstructorParameters<typeof DomainError>) =>
  problemOfDomainError(new DomainError(...error));
/** A problem as the server words it, for the examples no server function makes. */
const problem = (type: string, status: number, title: string, detail: string) => ({
  type: `/problems/${type}`,
  status,
  title,
  detail,
});
/** The request id of the 5xx examples, whose detail quotes it. */
const FAILED_REQUEST_ID = '5f0c6a8e-1d2b-4c3d-9e8f-0a1b2c3d4e5f';
/** Every problem carries its request's id (src/http/problems.ts): the examples too. */
const EXAMPLE_REQUEST_ID = '7d9f2c4e-1b3a-4f6e-9c8d-2a5b7e0f1c3d';
const problemContent = (examples: Record<string, Example>): Content => ({
  'application/problem+json': {
    schema: ref('Problem'),
    examples: Object.fromEntries(
      Object.entries(examples).map(([name, example]) => [
        name,
        { ...example, value: { ...(example.value as object), requestId: EXAMPLE_REQUEST_ID } },
      ]),
    ),
  },
});

/** Headers of every response, whoever answers it (the app, or the server for a request it could not parse). */
const EVERY_RESPONSE: Record<string, Header> = {
  'X-Request-Id': {
    description:
      "The request's id (the client's X-Request-Id when it is 1 to 64 of `A-Za-z0-9._:-`, else a new UUID): " +
      'quote it to support.',
    required: true,
    schema: { type: 'string' },
  },
  'RateLimit-Policy': {
    description:
      'Where rate limits are on (draft-ietf-httpapi-ratelimit-headers), the limit: `"per-key";q=<requests>;w=1` ' +
      'per API key, or `"failed-auth";q=<failures>;w=60` per client address. On every authenticated response, ' +
      'and on refusals of authentication.',
    schema: { type: 'string' },
  },
  RateLimit: {
    description: 'What is left of it: `"per-key";r=<remaining>;t=<seconds until more>` (t absent on a full bucket).',
    schema: { type: 'string' },
  },
};
const ETAG: Header = {
  description: 'A weak validator of the body: send it back as If-None-Match to get 304 while nothing changed.',
  required: true,
  schema: { type: 'string' },
};
const NO_STORE: Header = {
  description: '`no-store`: an answer about a wallet is never cached by intermediaries or browsers.',
  required: true,
  schema: { type: 'string', const: 'no-store' },
};
const RETRY_AFTER: Header = {
  description: 'Seconds to wait before retrying.',
  required: true,
  schema: { type: 'integer', minimum: 0 },
};

function respond(
  description: string,
  content: Content | undefined,
  headers: Record<string, Header> = {},
): OpenApiResponse {
  return { description, headers: { ...EVERY_RESPONSE, ...headers }, ...(content ? { content } : {}) };
}

const UNAUTHORIZED = respond(
  'The Authorization header is missing or not `Bearer <API key>`, or the key is unknown, wrong, revoked, expired ' +
    'or not yet approved.',
  problemContent({
    invalidKey: {
      summary: 'wrong, revoked or unknown key',
      value: unauthorized('The API key is not valid, or has been revoked.', true).problem,
    },
    expired: { summary: 'expired key', value: unauthorized('The API key has expired.', true).problem },
  }),
  {
    'WWW-Authenticate': { description: 'The Bearer challenge (RFC 6750).', required: true, schema: { type: 'string' } },
  },
);

const TOO_MANY_REQUESTS = respond(
  'The API key made more requests than its rate allows (per second, with a burst), or this address failed ' +
    'authentication too often. Wait Retry-After seconds; nothing was done.',
  problemContent({
    perKey: {
      summary: 'the key is over its rate',
      value: rateLimited('This API key has made more requests than its limit allows; retry after 1 s.', 'per-key', {})
        .problem,
    },
    failedAuthentication: {
      summary: 'too many failed authentications from this address',
      value: rateLimited('Too many failed authentications from this address; retry after 2 s.', 'failed-auth', {})
        .problem,
    },
  }),
  { 'Retry-After': RETRY_AFTER },
);

const REQUEST_TIMEOUT = respond(
  'The client did not send its whole request within HTTP_REQUEST_TIMEOUT_MS (its headers within ' +
    'HTTP_HEADERS_TIMEOUT_MS); the connection is closed.',
  problemContent({ timeout: { value: problemOfClientError('ERR_HTTP_REQUEST_TIMEOUT') } }),
);
const HEADERS_TOO_LARGE = respond(
  'The request line and headers together are larger than 16 KiB (a URL or a header too long); the connection is ' +
    'closed.',
  problemContent({ tooLarge: { value: problemOfClientError('HPE_HEADER_OVERFLOW') } }),
);
const INTERNAL_ERROR = respond(
  "An unexpected failure on the server's side; the detail carries the request id. Whether a create took effect " +
    'is unknown: retry it with the same Idempotency-Key.',
  problemContent({
    internal: {
      value: problem(
        'internal-error',
        500,
        'Internal Server Error',
        `Something went wrong on our side. Request id ${FAILED_REQUEST_ID}.`,
      ),
    },
  }),
);

const unavailable = (detail: string) => problem('service-unavailable', 503, 'Service Unavailable', detail);
const STORE_UNAVAILABLE: Record<string, Example> = {
  unreachable: {
    summary: 'a store cannot be reached',
    value: unavailable(`The service cannot reach its store; retry later. Request id ${FAILED_REQUEST_ID}.`),
  },
  corrupted: {
    summary: 'a store failed its integrity checks',
    value: storeCorruptedProblem(
      new StoreCorruptedError('read-models.sqlite', 'database disk image is malformed (SQLITE_CORRUPT)'),
      FAILED_REQUEST_ID,
    ),
  },
};
const RETRY_AFTER_UNLESS_CORRUPTED: Header = {
  description: 'Seconds to wait before retrying (absent for a corrupted store).',
  schema: { type: 'integer', minimum: 0 },
};

const WRITE_UNAVAILABLE = respond(
  "A store cannot be reached, or did not answer within the create's deadline (`/problems/service-unavailable`, " +
    'with Retry-After: retry then, with the same Idempotency-Key; when the detail says the outcome is unknown, the ' +
    'create may have been recorded, and the retry answers it), or a store failed its integrity checks ' +
    '(`/problems/store-corrupted`, no Retry-After: an operator must restore it).',
  problemContent({
    ...STORE_UNAVAILABLE,
    outcomeUnknown: {
      summary: 'the write was sent but not confirmed in time',
      value: storeUnavailableProblem(
        new EventStoreUnavailableError('no answer in time', { outcomeUnknown: true }),
        FAILED_REQUEST_ID,
      ),
    },
  }),
  { 'Retry-After': RETRY_AFTER_UNLESS_CORRUPTED },
);

const READ_UNAVAILABLE = respond(
  'Nothing is served rather than figures that may be wrong: the read model is not built yet (no checkpoint while ' +
    'events exist) or is more than READ_MAX_LAG_EVENTS (1,000) events behind the history ' +
    '(`/problems/service-unavailable`, with Retry-After: retry then), a store cannot be reached (the same), or a ' +
    'store failed its integrity checks (`/problems/store-corrupted`, no Retry-After: an operator must restore it).',
  problemContent({
    notBuilt: {
      summary: 'the read model is not built yet',
      value: unavailable(
        'The balances read model has not been built yet (it has no checkpoint while events exist); retry later.',
      ),
    },
    behind: {
      summary: 'the read model is too far behind',
      value: unavailable('The balances read model is more than 1000 events behind the history; retry later.'),
    },
    ...STORE_UNAVAILABLE,
  }),
  { 'Retry-After': RETRY_AFTER_UNLESS_CORRUPTED },
);

function forbidden(permission: string, partyType: string, extra: Record<string, Example> = {}): OpenApiResponse {
  return respond(
    `The key lacks ${permission}, is bound to another ${partyType}, or the request comes from an address the key ` +
      'does not ' +
      `allow.${
        Object.keys(extra).length
          ? ' Also: the transaction limit, the daily volume limit, or the payer balance refuses the operation.'
          : ''
      }`,
    problemContent({
      missingPermission: {
        summary: `key lacks ${permission}`,
        value: accessForbidden(`This API key lacks the ${permission} permission.`).problem,
      },
      otherParty: {
        summary: `path ${partyType}ID is not the key's`,
        value: accessForbidden(`This API key is not bound to this ${partyType}.`).problem,
      },
      addressNotAllowed: {
        summary: 'source IP not allowed',
        value: accessForbidden('Requests from this source address are not allowed for this API key.').problem,
      },
      ...extra,
    }),
  );
}

const CONTRACT_SUMMARY = [
  'Distributors and merchants read their wallet balance, list their operations and payments, and create ' +
    'operations, with an API key bound to exactly one distributor or one merchant.',
  'Operations created through the API are not executed at once: they are saved as `pending`, a checker approves ' +
    'them in the web interface, and then they are executed on the blockchain (`completed`, or `failed` with ' +
    '`lastError`).',
  'Amounts are decimal strings at the asset scale; phone numbers are in international format; times are ISO ' +
    "8601. Every response carries an `X-Request-Id` header (the client's, when it sent a sane one).",
  'API keys are created, approved and revoked in the web interface (Settings, API Keys), with maker-checker; no ' +
    'endpoint manages them.',
].join('\n\n');

/**
 * The service is not open source: the document grants no licence (the repository has no LICENSE file). OpenAPI 3.1
 * wants a licence to carry a url or an SPDX identifier: `LicenseRef-` is SPDX's form for a licence of one's own.
 */
const LICENSE = { name: 'Proprietary: all rights reserved', identifier: 'LicenseRef-Proprietary' };

const titled = (partyType: 'distributor' | 'merchant') => (partyType === 'distributor' ? 'Distributor' : 'Merchant');

export function buildOpenApiDocument(assetScale: number): OpenApiDocument {
  const amount = formatAmount(150, assetScale);
  const zero = formatAmount(0, assetScale);
  const requests = requestExamples(amount);
  const responses = responseExamples(amount, zero, assetScale);

  const components: OpenApiDocument['components'] = {
    securitySchemes: {
      apiKey: {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'wo_live_<keyID>.<secret>',
        description:
          'The API key as shown once after approval, `wo_live_<keyID>.<secret>` (`wo_test_…` from a sandbox: the ' +
          'prefix tells people and secret scanners which deployment issued it; keys issued before it, ' +
          '`<keyID>.<secret>`, keep working), sent as `Authorization: Bearer <API key>`. A key is bound to one ' +
          'distributor or one merchant and carries permissions (Read Balance, Read Transactions, Perform ' +
          'Operations); it may also limit the amount per operation, the daily volume and the source addresses, ' +
          'and it expires (default 365 days).',
      },
    },
    schemas: componentSchemas(assetScale),
  };

  const pathParameter = (partyType: 'distributor' | 'merchant'): OpenApiParameter => ({
    name: `${partyType}ID`,
    in: 'path',
    required: true,
    description: `The ${partyType} the API key is bound to; any other is refused with 403.`,
    schema: { type: 'string' },
    example: partyType === 'distributor' ? DISTRIBUTOR_ID : MERCHANT_ID,
  });
  // Query values travel as strings, but the server takes limit and offset as whole numbers: integers here.
  const integers: Record<string, JsonSchema> = {
    limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT },
    offset: { type: 'integer', minimum: 0, maximum: MAX_OFFSET, default: 0 },
  };
  const queryParameters = (schema: z.ZodType, examples: Record<string, number | string>): OpenApiParameter[] => {
    const json = jsonSchema(schema, 'input');
    const required = new Set((json.required ?? []) as string[]);
    return Object.entries((json.properties ?? {}) as Record<string, JsonSchema>).map(
      ([name, { description, ...rest }]) => ({
        name,
        in: 'query' as const,
        required: required.has(name),
        ...(typeof description === 'string' ? { description } : {}),
        schema: integers[name] ?? rest,
        ...(examples[name] !== undefined ? { example: examples[name] } : {}),
      }),
    );
  };
  const idempotencyKey: OpenApiParameter = {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description:
      'Optional, 1 to 255 visible ASCII characters. A repeat with the same key and the same request is answered ' +
      'with the first response and `Idempotent-Replayed: true`, and creates nothing (the key is kept at least 24 ' +
      'hours); the same key with a different request is refused with 422.',
    schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$' },
    example: 'c0a8f3e2-5b1d-4e7a-9f00-1d2e3f4a5b6c',
  };
  const security = [{ apiKey: [] }];

  function createOperation(partyType: 'distributor' | 'merchant'): OpenApiOperation {
    const description =
      partyType === 'distributor'
        ? 'A distributor creates a cash-in (credit an individual wallet, with phoneTo, or a merchant wallet, ' +
          "with merchantToShortCode) or a cash-out-fulfillment (debit an individual's wallet when cash is handed " +
          'over). Rules: the key has Perform Operations and is bound to the path distributor; amount is a valid ' +
          "decimal greater than 0 and not above the key's max transaction amount; the day's operations plus this " +
          "one do not exceed the key's max daily volume; the payer (the distributor for cash-in, the individual " +
          'for cash-out-fulfillment) has a sufficient balance; a cash-in names exactly one of phoneTo and ' +
          'merchantToShortCode. Extension of the contract: where the platform runs with ' +
          'CASH_OUT_CONSENT=individual-code, a cash-out-fulfillment must also carry authorizationCode, the ' +
          "individual's one-time code (valid 10 minutes, once, up to the amount it was issued for; used even if " +
          'the operation is later rejected), checked before the other rules; otherwise 403 ' +
          '/problems/cash-out-not-authorized.'
        : 'A merchant creates a cash-out (withdraw to a distributor, by distributorToShortCode), a pay-merchant ' +
          '(by merchantToShortCode) or a pay-individual (by phoneTo). The same rules on the key, the amount, the ' +
          'daily volume and the balance apply; merchant operations may carry a fee, debited with the amount.';
    return {
      operationId: `create${titled(partyType)}Operation`,
      tags: [`${titled(partyType)}s`],
      summary: `Create a ${partyType} operation`,
      description:
        `${description} The operation is saved as pending; a checker approves it in the web interface before it ` +
        'is executed.',
      'x-permission': 'Perform Operations',
      security,
      parameters: [pathParameter(partyType), idempotencyKey],
      requestBody: {
        required: true,
        description:
          `JSON (\`Content-Type: application/json\`, UTF-8, at most ${BODY_LIMIT}). ` + 'Unknown fields are refused.',
        content: {
          'application/json': {
            schema: ref(partyType === 'distributor' ? 'DistributorOperationRequest' : 'MerchantOperationRequest'),
            examples: requests[partyType],
          },
        },
      },
      responses: {
        '200': respond(
          'Created, pending approval; or the first response again for a repeated Idempotency-Key.',
          {
            'application/json': {
              schema: ref('OperationCreated'),
              examples: { created: { value: { operationID: OPERATION_ID } } },
            },
          },
          {
            'Idempotent-Replayed': {
              description:
                '`true` when this is the stored response of an earlier request with the same Idempotency-Key.',
              schema: { type: 'string', const: 'true' },
            },
          },
        ),
        '400': respond(
          'Validation errors: a field is missing or invalid (amount not a valid decimal, unknown short code, ' +
            'both phoneTo and merchantToShortCode), the body is not a JSON object, the Content-Type is not ' +
            'application/json, the URL is not an endpoint, or the request is not valid HTTP.',
          problemContent(
            partyType === 'distributor'
              ? {
                  invalidAmount: {
                    summary: 'amount not a valid decimal',
                    value: bodyProblem(assetScale, 'distributor', {
                      operationType: 'cash-in',
                      amount: '12,50',
                      phoneTo: PHONE,
                    }),
                  },
                  bothDestinations: {
                    summary: 'both phoneTo and merchantToShortCode',
                    value: bodyProblem(assetScale, 'distributor', {
                      operationType: 'cash-in',
                      amount,
                      phoneTo: PHONE,
                      merchantToShortCode: '4521',
                    }),
                  },
                  unknownShortCode: {
                    summary: 'unknown merchant short code',
                    value: problemOfDomainError(
                      invalidInput(
                        'merchantToShortCode',
                        'merchantToShortCode 9999 is not the short code of any merchant',
                      ),
                    ),
                  },
                  unknownField: {
                    summary: 'a field the operation type does not have',
                    value: bodyProblem(assetScale, 'distributor', {
                      operationType: 'cash-in',
                      amount,
                      phoneTo: PHONE,
                      memmo: 'x',
                    }),
                  },
                }
              : {
                  missingField: {
                    summary: 'a required field missing',
                    value: bodyProblem(assetScale, 'merchant', { operationType: 'pay-merchant', amount }),
                  },
                  wrongType: {
                    summary: 'an operation type of distributors',
                    value: bodyProblem(assetScale, 'merchant', { operationType: 'cash-in', amount, phoneTo: PHONE }),
                  },
                },
          ),
        ),
        '401': UNAUTHORIZED,
        '403': forbidden('Perform Operations', partyType, {
          transactionLimit: {
            summary: "above the key's max transaction amount",
            value: refused(
              'TRANSACTION_LIMIT_EXCEEDED',
              `amount ${amount} exceeds this key's max transaction amount of ${formatAmount(100, assetScale)}`,
            ),
          },
          dailyVolume: {
            summary: "above the key's max daily volume",
            value: refused(
              'DAILY_VOLUME_EXCEEDED',
              `this operation would exceed the key's max daily volume of ${formatAmount(1000, assetScale)} ` +
                `(${formatAmount(90, assetScale)} left for 2026-11-21; the day runs 00:00-24:00 UTC+01:00 ` +
                '(Africa/Lagos))',
            ),
          },
          insufficientBalance: {
            summary: 'payer balance too low',
            value: refused(
              'INSUFFICIENT_BALANCE',
              `the payer’s available balance of ${formatAmount(120, assetScale)} does not cover the amount and ` +
                `its fee (${amount})`,
            ),
          },
          ...(partyType === 'distributor'
            ? {
                cashOutNotAuthorized: {
                  summary: "CASH_OUT_CONSENT=individual-code: the individual's code missing, wrong, expired or used",
                  value: refused(
                    'CASH_OUT_NOT_AUTHORIZED',
                    'authorizationCode is not a live cash-out code of this individual (wrong, expired or ' +
                      'already used)',
                  ),
                },
              }
            : {}),
        }),
        '404': respond(
          'The party the API key is bound to no longer exists.',
          problemContent({
            partyGone: { value: refused('NOT_FOUND', 'the API key’s party no longer exists') },
          }),
        ),
        '408': REQUEST_TIMEOUT,
        '409': respond(
          "The payer's wallet kept changing under concurrent requests, or a request with the same " +
            'Idempotency-Key is still running; nothing was created. Retry (with the same Idempotency-Key).',
          problemContent({
            concurrentUpdate: {
              value: refused(
                'CONCURRENCY_CONFLICT',
                'wallet-distributor_… kept changing under concurrent commands; try again',
              ),
            },
            inFlight: {
              value: refused(
                'IDEMPOTENCY_KEY_IN_FLIGHT',
                'a request with this Idempotency-Key is still in progress; retry later',
              ),
            },
          }),
        ),
        '413': respond(
          `The body is larger than ${BODY_LIMIT}.`,
          problemContent({
            tooLarge: {
              value: problem(
                'payload-too-large',
                413,
                'Payload Too Large',
                'The body is larger than this API accepts.',
              ),
            },
          }),
        ),
        '422': respond(
          'The Idempotency-Key was already used with a different request.',
          problemContent({
            keyReused: {
              value: refused(
                'IDEMPOTENCY_KEY_REUSED',
                'this Idempotency-Key was already used with a different request',
              ),
            },
          }),
        ),
        '429': TOO_MANY_REQUESTS,
        '431': HEADERS_TOO_LARGE,
        '500': INTERNAL_ERROR,
        '503': WRITE_UNAVAILABLE,
      },
    };
  }

  function read(spec: {
    operationId: string;
    partyType: 'distributor' | 'merchant';
    summary: string;
    description: string;
    permission: string;
    query?: z.ZodType;
    queryExamples?: Record<string, number | string>;
    schema: JsonSchema;
    example: unknown;
    /** A single-item GET (an extension): its id parameter, and the 404 of an id that is not this party's. */
    item?: { what: string; example: string };
  }): OpenApiOperation {
    const badQuery: Record<string, Example> = spec.query
      ? {
          tooLarge: {
            summary: `limit above ${MAX_LIMIT}`,
            value: queryProblem(spec.query, { limit: String(MAX_LIMIT + 1) }),
          },
          unknownParameter: {
            summary: 'a parameter the endpoint does not have',
            value: queryProblem(spec.query, { sort: 'asc' }),
          },
        }
      : {
          unknownParameter: {
            summary: 'any query parameter',
            value: queryProblem(listQuery.pick({}), { limit: '10' }),
          },
        };
    return {
      operationId: spec.operationId,
      tags: [`${titled(spec.partyType)}s`],
      summary: spec.summary,
      description: spec.description,
      'x-permission': spec.permission,
      security,
      parameters: [
        pathParameter(spec.partyType),
        ...(spec.item
          ? [
              {
                name: 'operationID',
                in: 'path' as const,
                required: true,
                description: `The ${spec.item.what}'s operationID, as its list shows it.`,
                schema: { type: 'string' },
                example: spec.item.example,
              },
            ]
          : []),
        ...(spec.query ? queryParameters(spec.query, spec.queryExamples ?? {}) : []),
        {
          name: 'If-None-Match',
          in: 'header',
          required: false,
          description: 'The ETag of an earlier 200: answered 304 without a body while it is still current.',
          schema: { type: 'string' },
        },
      ],
      responses: {
        '200': respond(
          'OK.',
          { 'application/json': { schema: spec.schema, examples: { example: { value: spec.example } } } },
          { ETag: ETAG, 'Cache-Control': NO_STORE },
        ),
        '304': respond('Not Modified: If-None-Match names the current ETag; no body.', undefined, {
          ETag: ETAG,
          'Cache-Control': NO_STORE,
        }),
        '400': respond(
          `${
            spec.query
              ? 'A query parameter is invalid, repeated or unknown.'
              : 'The endpoint takes no query parameters.'
          } ` +
            `Parameters whose name starts with \`_\` (cache busters such as \`_=1732312345678\`) are ignored. ` +
            'Also: the URL is not an endpoint, or the request is not valid HTTP.',
          problemContent(badQuery),
        ),
        '401': UNAUTHORIZED,
        '403': forbidden(spec.permission, spec.partyType),
        ...(spec.item
          ? {
              '404': respond(
                `No ${spec.item.what} of this ${spec.partyType} has this id: it does not exist, or it is another ` +
                  `party's (which is never told apart).`,
                problemContent({
                  notFound: {
                    value: problem(
                      'not-found',
                      404,
                      'Not Found',
                      `There is no ${spec.item.what} ${spec.item.example} here.`,
                    ),
                  },
                }),
              ),
            }
          : {}),
        '408': REQUEST_TIMEOUT,
        '429': TOO_MANY_REQUESTS,
        '431': HEADERS_TOO_LARGE,
        '500': INTERNAL_ERROR,
        '503': READ_UNAVAILABLE,
      },
    };
  }

  const paging =
    'Pages by offset: add limit to offset for the next page; a page with fewer items than limit is the last. ' +
    `limit defaults to ${DEFAULT_LIMIT} (at most ${MAX_LIMIT}), offset to 0.`;
  const pageExamples = { limit: DEFAULT_LIMIT, offset: 0 };
  const filterExamples = {
    ...pageExamples,
    status: 'pending',
    createdFrom: '2026-11-01',
    createdTo: '2026-12-01T00:00:00+01:00',
  };
  const filters =
    'The contract names no filter; these are extensions: `status` (one status), `createdFrom` (inclusive) and ' +
    '`createdTo` (exclusive) on `createdAt`, as ISO 8601 dates (midnight UTC) or date-times with their offset. ' +
    'Any other parameter is refused with 400.';
  const single = (partyType: 'distributor' | 'merchant', what: 'operation' | 'payment') =>
    `Extension (not in the contract): one ${what} of the ${partyType} by its id, the same object as its list ` +
    `shows, with an ETag. An id that is not this ${partyType}'s is 404, exactly as one that does not exist.`;
  const getOperation = (partyType: 'distributor' | 'merchant') =>
    read({
      operationId: `get${titled(partyType)}Operation`,
      partyType,
      permission: 'Read Transactions',
      summary: `Read one of a ${partyType}'s operations`,
      description: single(partyType, 'operation'),
      item: { what: 'operation', example: OPERATION_ID },
      schema: ref(`${titled(partyType)}Operation`),
      example: responses[`${partyType}Operation`],
    });
  const getBalance = (partyType: 'distributor' | 'merchant') =>
    read({
      operationId: `get${titled(partyType)}Balance`,
      partyType,
      permission: 'Read Balance',
      summary: `Read a ${partyType}'s balance`,
      description:
        `The balance of the ${partyType}'s wallet. \`balance\` is the contract's field: the executed balance, as a ` +
        `decimal string at the asset scale. \`available\` and \`held\` are extension fields (not in the contract; a ` +
        `client may ignore them): \`held\` is what the ${partyType}'s pending and approved operations hold (amount ` +
        'plus fee each), and `available` = `balance` − `held` is what a create can spend now; an ' +
        'insufficient-balance refusal names it. The figures follow the events within moments (read model).',
      schema: ref('Balance'),
      example: responses.balance,
    });
  return {
    openapi: '3.1.0',
    info: {
      title: 'Wallet Operations Programmatic API',
      version: '1.0.0',
      description: CONTRACT_SUMMARY,
      license: LICENSE,
    },
    // The variable carries no description of its own (the server's says it): the OpenAPI 3.1 schema that
    // @apidevtools/swagger-parser validates with misspells that property (`descriptions`) and refuses it.
    servers: [
      {
        url: '{baseUrl}',
        description: "The service's base address, that of the deployment; every path carries the version (/api/v1).",
        variables: { baseUrl: { default: 'http://localhost:3000' } },
      },
    ],
    security,
    tags: [
      { name: 'Distributors', description: 'Endpoints for an API key bound to a distributor.' },
      { name: 'Merchants', description: 'Endpoints for an API key bound to a merchant.' },
    ],
    paths: {
      '/api/v1/distributors/{distributorID}/operations': {
        post: createOperation('distributor'),
        get: read({
          operationId: 'listDistributorOperations',
          partyType: 'distributor',
          permission: 'Read Transactions',
          summary: "List a distributor's operations",
          description:
            `The distributor's operations (cash-in, cash-out-fulfillment), newest creation first. Fields that do ` +
            `not apply to an operation's kind are omitted. ${filters} ${paging}`,
          query: operationsQuery,
          queryExamples: filterExamples,
          schema: { type: 'array', items: ref('DistributorOperation') },
          example: [responses.distributorOperation],
        }),
      },
      '/api/v1/merchants/{merchantID}/operations': {
        post: createOperation('merchant'),
        get: read({
          operationId: 'listMerchantOperations',
          partyType: 'merchant',
          permission: 'Read Transactions',
          summary: "List a merchant's operations",
          description:
            `The merchant's operations, newest creation first: cash-in (funds received from a distributor, ` +
            `listed from its request with its status, like the merchant's own operations), cash-out (funds ` +
            'withdrawn to a distributor), pay-merchant (payment to another merchant), pay-individual (payment to ' +
            `an individual wallet). Fields that do not apply are omitted. ${filters} Every operation enters the ` +
            'list at its request and keeps its place (ordered by the order of the requests, which is the order ' +
            `of createdAt), so a new one always appears on the first page, above the ones already seen. ${paging}`,
          query: operationsQuery,
          queryExamples: filterExamples,
          schema: { type: 'array', items: ref('MerchantOperation') },
          example: [responses.merchantOperation],
        }),
      },
      '/api/v1/distributors/{distributorID}/operations/{operationID}': { get: getOperation('distributor') },
      '/api/v1/merchants/{merchantID}/operations/{operationID}': { get: getOperation('merchant') },
      '/api/v1/merchants/{merchantID}/payments/{operationID}': {
        get: read({
          operationId: 'getMerchantPayment',
          partyType: 'merchant',
          permission: 'Read Transactions',
          summary: 'Read one payment a merchant received',
          description:
            `${single('merchant', 'payment')} A payment is named by its own operationID (wo_…), not by the ` +
            'operation it came from.',
          item: { what: 'payment', example: 'wo_81d2c4e6f0a24b9c8d7e6f5a4b3c2d1e' },
          schema: ref('Payment'),
          example: responses.payment,
        }),
      },
      '/api/v1/merchants/{merchantID}/payments': {
        get: read({
          operationId: 'listMerchantPayments',
          partyType: 'merchant',
          permission: 'Read Transactions',
          summary: 'List payments a merchant received',
          description:
            `Completed payments the merchant received, newest first: \`payment\` (from an individual or a ` +
            `merchant) or \`cash-in\` (from a distributor). \`search\` matches the sender phone number and the ` +
            `payment memo. \`createdAt\` is the request's time, as in the operation lists; the extension field ` +
            `\`completedAt\` is when the payment was received. The list is ordered by when each payment entered ` +
            'it (its completion, the order of completedAt), so a payment that completes later always appears on ' +
            'the first page, above the ones already seen, even if it was requested earlier. Extension (not in ' +
            `the contract): \`createdFrom\` and \`createdTo\` bound the request time (\`createdAt\`). ${paging}`,
          query: paymentsQuery,
          queryExamples: {
            ...pageExamples,
            search: 'invoice',
            createdFrom: filterExamples.createdFrom,
            createdTo: filterExamples.createdTo,
          },
          schema: { type: 'array', items: ref('Payment') },
          example: [responses.payment],
        }),
      },
      '/api/v1/distributors/{distributorID}/balance': { get: getBalance('distributor') },
      '/api/v1/merchants/{merchantID}/balance': { get: getBalance('merchant') },
    },
    webhooks: webhooks(),
    components,
  };
}

/**
 * The document as committed (openapi.json) and printed by `wallet-ops openapi`: two-space indented, one final newline.
 */
export const openApiJson = (assetScale: number): string =>
  `${JSON.stringify(buildOpenApiDocument(assetScale), null, 2)}\n`;
