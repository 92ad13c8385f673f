import { z } from 'zod';
import { PERMISSIONS, WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../domain/events.ts';
import { PROBLEM_TYPES, type Problem } from '../http/problems.ts';
import { operationSchemas } from '../write-api/schemas.ts';
import { responseSchemas } from './schemas.ts';

/**
 * The components of the OpenAPI document: every schema is generated from the zod schema the server parses
 * requests with (`io: 'input'`) or shapes responses with (`io: 'output'`). Unions are named variants behind a
 * `oneOf` with a discriminator, so that generated clients get one exact type per kind.
 */
export type JsonSchema = { [key: string]: unknown };

/** A zod schema as JSON Schema 2020-12, without `$schema` (OpenAPI 3.1's dialect is a superset). */
export function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io, target: 'draft-2020-12' }) as JsonSchema;
  return rest;
}

export const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });

/** `oneOf` the named components, told apart by `property` (each variant's const). */
function discriminated(property: string, variants: Record<string, string>, description?: string): JsonSchema {
  return {
    ...(description ? { description } : {}),
    oneOf: Object.values(variants).map(ref),
    discriminator: {
      propertyName: property,
      mapping: Object.fromEntries(
        Object.entries(variants).map(([value, name]) => [value, `#/components/schemas/${name}`]),
      ),
    },
  };
}

// Schemas of the HTTP layer itself (problems.ts and the create response), as zod like the others.
const fieldErrorSchema = z.object({
  type: z.literal('/problems/input-validation-problems/invalid-field'),
  field: z.string().meta({
    description: 'The field at fault: a body field, a query parameter, a header, `body`, `url` or `request`.',
  }),
  detail: z.string(),
});
const problemSchema = z.object({
  type: z
    .enum(PROBLEM_TYPES)
    .meta({ description: 'Problem type path: one of a closed list, so that a client can switch over it.' }),
  status: z.int().min(400).max(599).meta({ description: 'The HTTP status.' }),
  title: z.string().meta({ description: 'Short title of the problem type.' }),
  detail: z.string().meta({ description: 'Explanation of this occurrence.' }),
  errors: z
    .array(fieldErrorSchema)
    .optional()
    .meta({ description: 'Only for validation problems: one item per field at fault.' }),
  'violated-policies': z
    .array(z.string())
    .optional()
    .meta({ description: 'Only for 429: the limits exceeded, `per-key` or `failed-auth`.' }),
  requestId: z
    .string()
    .meta({ description: 'The request id of the X-Request-Id response header: quote it to support.' }),
}) satisfies z.ZodType<Problem>;
const operationCreatedSchema = z.object({
  operationID: z.string().meta({
    description: 'The new operation, pending until a checker approves it.',
    example: 'op_3f1c9a0e5b7d4c2a9e8f7a6b5c4d3e2f',
  }),
});

/** The request variants by operation type, and the component name of each. */
export const REQUEST_VARIANTS = {
  distributor: { 'cash-in': 'DistributorCashIn', 'cash-out-fulfillment': 'DistributorCashOutFulfillment' },
  merchant: {
    'cash-out': 'MerchantCashOut',
    'pay-merchant': 'MerchantPayMerchant',
    'pay-individual': 'MerchantPayIndividual',
  },
} as const;
const DISTRIBUTOR_OPERATION_VARIANTS = {
  'cash-in': 'DistributorCashInOperation',
  'cash-out-fulfillment': 'DistributorCashOutFulfillmentOperation',
} as const;
const MERCHANT_OPERATION_VARIANTS = {
  'cash-in': 'MerchantCashInOperation',
  'cash-out': 'MerchantCashOutOperation',
  'pay-merchant': 'MerchantPayMerchantOperation',
  'pay-individual': 'MerchantPayIndividualOperation',
} as const;
const PAYMENT_VARIANTS = {
  individual: 'IndividualPayment',
  merchant: 'MerchantPayment',
  distributor: 'DistributorPayment',
} as const;

export function componentSchemas(assetScale: number): Record<string, JsonSchema> {
  const requests = operationSchemas(assetScale);
  const responses = responseSchemas(assetScale);
  const variantSchemas = <K extends string>(
    names: Record<K, string>,
    schemas: Record<K, z.ZodType>,
    io: 'input' | 'output',
  ) =>
    Object.fromEntries(Object.entries<string>(names).map(([kind, name]) => [name, jsonSchema(schemas[kind as K], io)]));

  const cashIn = jsonSchema(requests.distributor['cash-in'], 'input');
  // The contract's rule 5 (checked beside the field rules, schemas.ts): exactly one destination is given,
  // the other absent or null (null is absent, as the server reads it). Generated types get it as a union.
  // A short code may also be the whole number responses carry (an extension): present means a string or an integer.
  const present = (field: string) =>
    field === 'merchantToShortCode' ? { type: ['string', 'integer'] } : { type: 'string' };
  const destination = (given: string, other: string) => ({
    required: [given],
    properties: { [given]: present(given), [other]: { type: 'null' } },
  });
  cashIn.oneOf = [destination('phoneTo', 'merchantToShortCode'), destination('merchantToShortCode', 'phoneTo')];
  cashIn.description = 'Exactly one of phoneTo and merchantToShortCode (a null one is absent).';

  return {
    DistributorOperationRequest: discriminated(
      'operationType',
      REQUEST_VARIANTS.distributor,
      'What a distributor creates: a cash-in or a cash-out-fulfillment.',
    ),
    ...variantSchemas(REQUEST_VARIANTS.distributor, requests.distributor, 'input'),
    DistributorCashIn: cashIn,
    MerchantOperationRequest: discriminated(
      'operationType',
      REQUEST_VARIANTS.merchant,
      'What a merchant creates: a cash-out, a pay-merchant or a pay-individual.',
    ),
    ...variantSchemas(REQUEST_VARIANTS.merchant, requests.merchant, 'input'),
    OperationCreated: jsonSchema(operationCreatedSchema, 'output'),
    DistributorOperation: discriminated(
      'operationType',
      DISTRIBUTOR_OPERATION_VARIANTS,
      'An operation of the distributor, by operationType; fields of other kinds are absent.',
    ),
    ...variantSchemas(DISTRIBUTOR_OPERATION_VARIANTS, responses.distributorOperation.variants, 'output'),
    MerchantOperation: discriminated(
      'operationType',
      MERCHANT_OPERATION_VARIANTS,
      'An operation of the merchant, by operationType; fields of other kinds are absent.',
    ),
    ...variantSchemas(MERCHANT_OPERATION_VARIANTS, responses.merchantOperation.variants, 'output'),
    Payment: discriminated(
      'fromType',
      PAYMENT_VARIANTS,
      'A payment the merchant received, by who sent it: `type` is `payment` from an individual or a merchant, ' +
        '`cash-in` from a distributor.',
    ),
    ...variantSchemas(PAYMENT_VARIANTS, responses.payment.variants, 'output'),
    Balance: jsonSchema(responses.balance, 'output'),
    Problem: jsonSchema(problemSchema, 'output'),
    ...webhookSchemas(),
  };
}

// Webhooks ---------------------------------------------------------------------------------------------------
const WEBHOOK_DATA: Record<
  WebhookEventType,
  { summary: string; data: JsonSchema; party: 'distributor or merchant' | 'merchant' }
> = {
  'operation.approved': operationEvent("A checker approved an operation the party's key created."),
  'operation.rejected': operationEvent(
    "An operation the party's key created was rejected (by a checker, or because its key was revoked).",
  ),
  'operation.completed': operationEvent("An operation the party's key created executed on the ledger."),
  'operation.failed': operationEvent(
    "An operation the party's key created failed: the ledger refused it, or it kept failing.",
  ),
  'payment.received': {
    summary:
      "Money reached the merchant's wallet: another merchant's payment, an individual's payment, or a " +
      "distributor's cash-in.",
    data: { payment: ref('Payment') },
    party: 'merchant',
  },
  'api_key.revoked': {
    summary: "One of the party's API keys was revoked.",
    data: { apiKey: ref('RevokedApiKey') },
    party: 'distributor or merchant',
  },
};

function operationEvent(summary: string) {
  return { summary, data: { operation: anyOperation() }, party: 'distributor or merchant' as const };
}

function anyOperation(): JsonSchema {
  return {
    description: 'The object the operations list returns, as it was right after the event.',
    oneOf: [ref('DistributorOperation'), ref('MerchantOperation')],
  };
}

/** `operation.approved` -> `OperationApprovedEvent`. */
export const webhookSchemaName = (type: WebhookEventType) =>
  `${type
    .split(/[._]/)
    .map((word) => word[0]!.toUpperCase() + word.slice(1))
    .join('')}Event`;

function webhookSchemas(): Record<string, JsonSchema> {
  const revokedApiKey = z.strictObject({
    keyID: z.string(),
    label: z.string(),
    permissions: z.array(z.enum(PERMISSIONS)),
    status: z.literal('revoked'),
    revokedAt: z.string().meta({ format: 'date-time' }),
  });
  const entries = WEBHOOK_EVENT_TYPES.map((type): [string, JsonSchema] => {
    const { summary, data, party } = WEBHOOK_DATA[type];
    const [dataKey] = Object.keys(data);
    return [
      webhookSchemaName(type),
      {
        type: 'object',
        description: summary,
        properties: {
          id: {
            type: 'string',
            pattern: '^evt_',
            description: 'The event: the same at every attempt, redelivery and endpoint. De-duplicate on it.',
          },
          type: { type: 'string', const: type },
          createdAt: {
            type: 'string',
            format: 'date-time',
            description: 'When it happened (was recorded), not when it was sent.',
          },
          party: {
            type: 'object',
            description: 'The party whose endpoints receive it.',
            properties: {
              type:
                party === 'merchant'
                  ? { type: 'string', const: 'merchant' }
                  : { type: 'string', enum: ['distributor', 'merchant'] },
              id: { type: 'string' },
            },
            required: ['type', 'id'],
            additionalProperties: false,
          },
          data: { type: 'object', properties: data, required: [dataKey], additionalProperties: false },
        },
        required: ['id', 'type', 'createdAt', 'party', 'data'],
        additionalProperties: false,
      },
    ];
  });
  return {
    RevokedApiKey: jsonSchema(revokedApiKey, 'output'),
    ...Object.fromEntries(entries),
    WebhookEvent: discriminated(
      'type',
      Object.fromEntries(WEBHOOK_EVENT_TYPES.map((t) => [t, webhookSchemaName(t)])),
      'Any webhook body, by type.',
    ),
  };
}

const WEBHOOK_HEADERS = [
  { name: 'webhook-id', description: "The event id (the body's `id`).", schema: { type: 'string' } },
  {
    name: 'webhook-timestamp',
    description: 'Unix seconds of this attempt: refuse one more than 5 minutes from your clock.',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  {
    name: 'webhook-signature',
    description:
      'Space-separated `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<raw body>">`, keyed with ' +
      'the base64-decoded part of the secret after `whsec_` (Standard Webhooks); one per live secret during a ' +
      'rotation. Accept a match with any.',
    schema: { type: 'string' },
  },
];

/** The OpenAPI 3.1 `webhooks` section: one POST per event type, with its body and the signature headers. */
export function webhooks(): Record<string, { post: JsonSchema }> {
  return Object.fromEntries(
    WEBHOOK_EVENT_TYPES.map((type) => [
      type,
      {
        post: {
          operationId: `webhook${webhookSchemaName(type).replace(/Event$/, '')}`,
          summary: WEBHOOK_DATA[type].summary,
          description:
            'Sent to each approved endpoint of the party that subscribed to this event type, retried for a day ' +
            "until it answers 2xx. The body is the same at every attempt; only the signature's timestamp " +
            'changes. See docs/webhooks.md.',
          parameters: WEBHOOK_HEADERS.map((header) => ({ ...header, in: 'header', required: true })),
          requestBody: { required: true, content: { 'application/json': { schema: ref(webhookSchemaName(type)) } } },
          responses: {
            '2XX': {
              description: 'Received: the delivery is done. Any other answer, or none within the timeout, is retried.',
            },
          },
        },
      },
    ]),
  );
}
