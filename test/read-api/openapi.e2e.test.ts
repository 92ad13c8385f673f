import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { renderDocsPage } from '../../src/read-api/docs-page.ts';
import {
  buildOpenApiDocument,
  type JsonSchema,
  type OpenApiDocument,
  type OpenApiOperation,
} from '../../src/read-api/openapi.ts';
import {
  listQuery,
  MAX_LIMIT,
  operationsQuery,
  parseQuery,
  paymentsQuery,
  responseSchemas,
} from '../../src/read-api/schemas.ts';
import { PROBLEM_TYPES } from '../../src/http/problems.ts';
import { WEBHOOK_EVENT_TYPES } from '../../src/domain/events.ts';
import { parsePositiveAmount, positiveAmountPattern } from '../../src/domain/money.ts';
import { operationSchemas, parseCreateOperation } from '../../src/write-api/schemas.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';
import { runCli } from '../support/cli.ts';
import { loadConfig } from '../../src/config.ts';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const SCALE = 2;
const COMMITTED = fileURLToPath(new URL('../../openapi.json', import.meta.url));
const REGENERATE =
  'openapi.json (at the repository root) is not what the server serves: regenerate it with `npm run openapi` and commit it';
const doc: OpenApiDocument = buildOpenApiDocument(SCALE);

const operations = (): Array<{ path: string; method: string; operation: OpenApiOperation }> =>
  Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ path, method, operation: operation! })),
  );

/** Follows a local $ref ("#/components/schemas/X") in the document. */
function resolve(schema: JsonSchema): JsonSchema {
  if (typeof schema.$ref !== 'string') return schema;
  const found = schema.$ref
    .replace(/^#\//, '')
    .split('/')
    .reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], doc);
  if (!found) throw new Error(`unresolved ${schema.$ref}`);
  return found as JsonSchema;
}

function allRefs(node: unknown, found: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((child) => allRefs(child, found));
  else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') found.push(value);
      else allRefs(value, found);
    }
  }
  return found;
}

describe('the OpenAPI document', () => {
  it('is OpenAPI 3.1 with the seven operations of the contract and the three single-item GETs that extend it, each with a unique operationId', () => {
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    expect(doc.info.title).toBeTruthy();
    const ops = operations();
    expect(ops.map(({ method, path }) => `${method.toUpperCase()} ${path}`).sort()).toEqual([
      'GET /api/v1/distributors/{distributorID}/balance',
      'GET /api/v1/distributors/{distributorID}/operations',
      'GET /api/v1/distributors/{distributorID}/operations/{operationID}',
      'GET /api/v1/merchants/{merchantID}/balance',
      'GET /api/v1/merchants/{merchantID}/operations',
      'GET /api/v1/merchants/{merchantID}/operations/{operationID}',
      'GET /api/v1/merchants/{merchantID}/payments',
      'GET /api/v1/merchants/{merchantID}/payments/{operationID}',
      'POST /api/v1/distributors/{distributorID}/operations',
      'POST /api/v1/merchants/{merchantID}/operations',
    ]);
    expect(new Set(ops.map(({ operation }) => operation.operationId)).size).toBe(10);
  });

  it('declares every path parameter of every path, as required, and no path parameter the path lacks', () => {
    for (const { path, operation } of operations()) {
      const inPath = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      const declared = operation.parameters.filter((p) => p.in === 'path');
      expect(declared.map((p) => p.name).sort(), path).toEqual(inPath.sort());
      for (const parameter of declared) expect(parameter.required).toBe(true);
    }
  });

  it('requires the bearer API key on every operation, and every $ref resolves', () => {
    expect(doc.components.securitySchemes.apiKey).toMatchObject({
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'wo_live_<keyID>.<secret>',
    });
    for (const { operation } of operations()) expect(operation.security).toEqual([{ apiKey: [] }]);
    for (const target of allRefs(doc)) expect(() => resolve({ $ref: target }), target).not.toThrow();
  });

  it('names every status the server answers: 200, 400, 401, 403, 404, 409, 413, 422 for POST, 200, 304, 400, 401, 403 for GET (and 404 for one item), and 408, 429, 431, 500 and 503 for all; every problem example carries a request id', () => {
    for (const { method, path, operation } of operations()) {
      const expected =
        method === 'post'
          ? ['200', '400', '401', '403', '404', '408', '409', '413', '422', '429', '431', '500', '503']
          : [
              '200',
              '304',
              '400',
              '401',
              '403',
              ...(path.endsWith('{operationID}') ? ['404'] : []),
              '408',
              '429',
              '431',
              '500',
              '503',
            ];
      expect(Object.keys(operation.responses).sort()).toEqual(expected);
      for (const [status, response] of Object.entries(operation.responses)) {
        expect(response.description, `${operation.operationId} ${status}`).toBeTruthy();
        if (status === '200' || status === '304') continue;
        const media = response.content?.['application/problem+json'];
        expect(media?.schema).toEqual({ $ref: '#/components/schemas/Problem' });
        for (const example of Object.values(media?.examples ?? {})) {
          expect((example.value as { status: number }).status).toBe(Number(status));
          expect((example.value as { requestId?: string }).requestId).toMatch(/^[0-9a-f-]{36}$/);
        }
      }
    }
  });

  it("gives the POST 403 an example of each problem type of the contract, and the distributors' of the cash-out consent extension", () => {
    for (const { path, method, operation } of operations()) {
      if (method !== 'post') continue;
      const types = Object.values(operation.responses['403']!.content!['application/problem+json']!.examples!).map(
        (e) => (e.value as { type: string }).type,
      );
      const extension = path.startsWith('/api/v1/distributors/') ? ['/problems/cash-out-not-authorized'] : [];
      expect(new Set(types)).toEqual(
        new Set([
          '/problems/access-forbidden',
          '/problems/transaction-limit-exceeded',
          '/problems/daily-volume-exceeded',
          '/problems/insufficient-balance',
          ...extension,
        ]),
      );
    }
  });

  it('describes authorizationCode on the cash-out-fulfillment body as an optional extension of the contract', () => {
    const body = resolve(
      doc.paths['/api/v1/distributors/{distributorID}/operations']!.post!.requestBody!.content['application/json']!
        .schema,
    );
    const cashOut = (body.oneOf as JsonSchema[])
      .map(resolve)
      .find((v) => (v.properties as Record<string, JsonSchema>).operationType?.const === 'cash-out-fulfillment')!;
    const field = (cashOut.properties as Record<string, JsonSchema>).authorizationCode!;
    expect(JSON.stringify(field)).toMatch(/Extension of the contract.*CASH_OUT_CONSENT=individual-code/);
    expect(cashOut.required).not.toContain('authorizationCode');
  });

  it('describes the cash-in body from the server schema: its fields, and no other field', () => {
    const body = resolve(
      doc.paths['/api/v1/distributors/{distributorID}/operations']!.post!.requestBody!.content['application/json']!
        .schema,
    );
    const variants = (body.oneOf as JsonSchema[]).map(resolve);
    const cashIn = variants.find(
      (v) => (v.properties as Record<string, JsonSchema>).operationType?.const === 'cash-in',
    )!;
    expect(Object.keys(cashIn.properties as object).sort()).toEqual([
      'amount',
      'memo',
      'merchantToShortCode',
      'operationType',
      'phoneTo',
    ]);
    expect(cashIn.additionalProperties).toBe(false);
    expect(cashIn.required).toEqual(['operationType', 'amount']);
    expect(doc.paths['/api/v1/distributors/{distributorID}/operations']!.post!.parameters.map((p) => p.name)).toContain(
      'Idempotency-Key',
    );
  });

  it('has request examples that the server accepts', () => {
    const schemas = operationSchemas(SCALE);
    for (const partyType of ['distributor', 'merchant'] as const) {
      const examples =
        doc.paths[`/api/v1/${partyType}s/{${partyType}ID}/operations`]!.post!.requestBody!.content['application/json']!
          .examples!;
      expect(Object.keys(examples).length).toBeGreaterThan(1);
      for (const [name, example] of Object.entries(examples))
        expect(parseCreateOperation(schemas, partyType, example.value), name).toMatchObject({ ok: true });
    }
    for (const { operation } of operations()) {
      const query = Object.fromEntries(
        operation.parameters.filter((p) => p.in === 'query').map((p) => [p.name, String(p.example)]),
      );
      const schema = operation.operationId === 'listMerchantPayments' ? paymentsQuery : operationsQuery;
      if (Object.keys(query).length)
        expect(parseQuery(schema, query), operation.operationId).toMatchObject({ ok: true });
    }
  });

  it('has response examples that the response schemas accept', () => {
    const schemas = responseSchemas(SCALE);
    const bodies: Record<string, z.ZodType> = {
      listDistributorOperations: z.array(schemas.distributorOperation.union),
      listMerchantOperations: z.array(schemas.merchantOperation.union),
      listMerchantPayments: z.array(schemas.payment.union),
      getDistributorBalance: schemas.balance,
      getMerchantBalance: schemas.balance,
      getDistributorOperation: schemas.distributorOperation.union,
      getMerchantOperation: schemas.merchantOperation.union,
      getMerchantPayment: schemas.payment.union,
    };
    for (const { method, operation } of operations()) {
      if (method !== 'get') continue;
      for (const example of Object.values(operation.responses['200']!.content!['application/json']!.examples!)) {
        expect(bodies[operation.operationId]!.safeParse(example.value).success, operation.operationId).toBe(true);
      }
    }
  });

  it('shows amounts at the configured asset scale in its examples', () => {
    const zeroScale = buildOpenApiDocument(0);
    const example =
      zeroScale.paths['/api/v1/distributors/{distributorID}/operations']!.post!.requestBody!.content[
        'application/json'
      ]!.examples!.cashInToIndividual!;
    expect(parseCreateOperation(operationSchemas(0), 'distributor', example.value)).toMatchObject({ ok: true });
  });
  it("describes the Balance with the contract's balance and the documented extension fields available and held, all required strings", () => {
    const balance = resolve(doc.components.schemas.Balance as JsonSchema);
    expect(Object.keys(balance.properties as object).sort()).toEqual(['available', 'balance', 'held']);
    expect([...(balance.required as string[])].sort()).toEqual(['available', 'balance', 'held']);
    const properties = balance.properties as Record<string, JsonSchema>;
    for (const name of ['balance', 'available', 'held']) expect(properties[name]!.type, name).toBe('string');
    expect(properties.available!.description).toMatch(/^Extension/);
    expect(properties.held!.description).toMatch(/^Extension/);
    for (const path of ['/api/v1/distributors/{distributorID}/balance', '/api/v1/merchants/{merchantID}/balance']) {
      const get = doc.paths[path]!.get!;
      expect(get.description).toMatch(/extension fields/);
      expect(get.responses['200']!.content!['application/json']!.examples!.example!.value).toEqual({
        balance: '150.00',
        available: '120.00',
        held: '30.00',
      });
    }
  });

  it('names the available amount in the insufficient-balance example, at the asset scale', () => {
    const examples =
      doc.paths['/api/v1/merchants/{merchantID}/operations']!.post!.responses['403']!.content![
        'application/problem+json'
      ]!.examples!;
    expect((examples.insufficientBalance!.value as { detail: string }).detail).toBe(
      'the payer’s available balance of 120.00 does not cover the amount and its fee (150.00)',
    );
  });

  it('says on every GET that parameters starting with _ (cache busters) are ignored', () => {
    const gets = operations().filter(({ method }) => method === 'get');
    expect(gets).toHaveLength(8);
    for (const { operation } of gets)
      expect(operation.responses['400']!.description, operation.operationId).toMatch(/starts with `_`.*ignored/);
  });

  it('types limit and offset as integers with their bounds and defaults', () => {
    for (const { operation } of operations()) {
      const query = Object.fromEntries(
        operation.parameters.filter((p) => p.in === 'query').map((p) => [p.name, p.schema]),
      );
      if (!query.limit) continue;
      expect(query.limit).toEqual({ type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: 100 });
      expect(query.offset).toMatchObject({ type: 'integer', minimum: 0, default: 0 });
    }
  });

  it('describes each resource as a oneOf of named variants told apart by operationType (payments: fromType), each with its own required fields', () => {
    const variants = (name: string) => {
      const union = doc.components.schemas[name]!;
      const property = (union.discriminator as { propertyName: string }).propertyName;
      return Object.fromEntries(
        (union.oneOf as JsonSchema[])
          .map(resolve)
          .map((v) => [(v.properties as Record<string, JsonSchema>)[property]!.const as string, v]),
      );
    };
    const distributor = variants('DistributorOperation');
    expect(Object.keys(distributor).sort()).toEqual(['cash-in', 'cash-out-fulfillment']);
    expect(distributor['cash-out-fulfillment']!.required).toEqual(
      expect.arrayContaining(['phoneFrom', 'cashOutFulfillmentType', 'cashOutFulfillmentID']),
    );
    expect(Object.keys(distributor['cash-in']!.properties as object)).not.toContain('phoneFrom');
    const merchant = variants('MerchantOperation');
    expect(merchant['cash-out']!.required).toEqual(expect.arrayContaining(['distributorTo', 'distributorName']));
    expect(merchant['pay-merchant']!.required).toEqual(expect.arrayContaining(['merchantTo', 'merchantName']));
    expect(merchant['pay-individual']!.required).toEqual(expect.arrayContaining(['phoneTo']));
    expect(Object.keys(merchant['pay-individual']!.properties as object)).not.toContain('merchantTo');
    const payment = variants('Payment');
    expect(Object.keys(payment).sort()).toEqual(['distributor', 'individual', 'merchant']);
    expect((payment.distributor!.properties as Record<string, JsonSchema>).type).toEqual({
      type: 'string',
      const: 'cash-in',
    });
    for (const v of Object.values(payment)) expect(v.additionalProperties).toBe(false);
  });

  it('gives amounts the pattern of the asset scale and times the date-time format', () => {
    const cashIn = resolve(doc.components.schemas.DistributorCashInOperation!);
    const properties = cashIn.properties as Record<string, JsonSchema>;
    expect(properties.amount!.pattern).toBe('^(0|[1-9][0-9]*)\\.[0-9]{2}$');
    expect(properties.createdAt!.format).toBe('date-time');
    expect(buildOpenApiDocument(0).components.schemas.MerchantPayIndividualOperation!.properties).toMatchObject({
      amount: { pattern: '^(0|[1-9][0-9]*)$' },
    });
  });

  it.each([0, 2, 6])(
    'when the asset scale is %i, then the request amount pattern accepts exactly what the server accepts',
    (scale) => {
      const pattern = new RegExp(positiveAmountPattern(scale), 'u');
      const inputs = [
        '1',
        '0',
        '00',
        '0.0',
        '0.01',
        '.5',
        '5.',
        '1.5',
        '1.50',
        '1.505',
        '10.000001',
        '007',
        '000.10',
        '-1',
        '+1',
        '1e3',
        ' 1',
        '1,5',
        '123456789012345678',
        '1234567890123456789',
        '0001234567890123456789',
        '000123456789012345678',
        '1.1234567',
      ];
      for (const input of inputs) {
        const accepted = (() => {
          try {
            parsePositiveAmount('amount', input, scale);
            return true;
          } catch {
            return false;
          }
        })();
        expect(pattern.test(input), `${input} at scale ${scale}`).toBe(accepted);
      }
    },
  );

  it('lists every problem type the server answers with as the enum of Problem.type', () => {
    const problem = doc.components.schemas.Problem!;
    expect((problem.properties as Record<string, JsonSchema>).type!.enum).toEqual([...PROBLEM_TYPES]);
    for (const { operation } of operations()) {
      for (const response of Object.values(operation.responses)) {
        for (const example of Object.values(response.content?.['application/problem+json']?.examples ?? {})) {
          expect(PROBLEM_TYPES).toContain((example.value as { type: string }).type);
        }
      }
    }
  });

  it('declares X-Request-Id (required), RateLimit and RateLimit-Policy on every response, and Retry-After on 429', () => {
    for (const { operation } of operations()) {
      for (const [status, response] of Object.entries(operation.responses)) {
        expect(response.headers['X-Request-Id'], `${operation.operationId} ${status}`).toMatchObject({
          required: true,
        });
        expect(Object.keys(response.headers)).toEqual(expect.arrayContaining(['RateLimit', 'RateLimit-Policy']));
      }
      expect(operation.responses['429']!.headers['Retry-After']).toMatchObject({
        required: true,
        schema: { type: 'integer' },
      });
    }
  });

  it('has a webhooks section with a POST of each event type, its payload schema and the Standard Webhooks headers', () => {
    expect(Object.keys(doc.webhooks).sort()).toEqual([...WEBHOOK_EVENT_TYPES].sort());
    for (const [type, { post }] of Object.entries(doc.webhooks)) {
      const body = resolve(
        (post.requestBody as { content: Record<string, { schema: JsonSchema }> }).content['application/json']!.schema,
      );
      expect((body.properties as Record<string, JsonSchema>).type).toEqual({ type: 'string', const: type });
      expect((post.parameters as Array<{ name: string }>).map((p) => p.name)).toEqual([
        'webhook-id',
        'webhook-timestamp',
        'webhook-signature',
      ]);
    }
  });

  it('names its licence with an SPDX identifier, as OpenAPI 3.1 asks of a licence without a url (and validators such as swagger-parser check)', () => {
    expect(doc.info.license.name).toBeTruthy();
    expect(doc.info.license.identifier).toMatch(/^LicenseRef-[A-Za-z0-9.-]+$/);
    expect(doc.info.license.url).toBeUndefined();
  });

  it('describes the extension filters of the operation lists as query parameters: status as the contract statuses, the creation bounds as date-times', () => {
    for (const partyType of ['distributor', 'merchant'] as const) {
      const parameters = doc.paths[`/api/v1/${partyType}s/{${partyType}ID}/operations`]!.get!.parameters;
      expect(parameters.filter((p) => p.in === 'query').map((p) => p.name)).toEqual([
        'limit',
        'offset',
        'status',
        'createdFrom',
        'createdTo',
      ]);
      expect(parameters.find((p) => p.name === 'status')!.schema).toMatchObject({
        enum: ['pending', 'approved', 'rejected', 'completed', 'failed'],
      });
      expect(parameters.find((p) => p.name === 'createdFrom')!.schema).toMatchObject({
        type: 'string',
        format: 'date-time',
      });
    }
    const payments = doc.paths['/api/v1/merchants/{merchantID}/payments']!.get!.parameters;
    expect(payments.filter((p) => p.in === 'query').map((p) => p.name)).toEqual([
      'limit',
      'offset',
      'search',
      'createdFrom',
      'createdTo',
    ]);
  });
});

describe('query parameters', () => {
  const noQuery = listQuery.pick({});
  it.each([
    ['_', '1732312345678'],
    ['_ts', 'abc'],
    ['__', ''],
  ])('when a cache buster %s=%s is sent, then every query schema ignores it', (name, value) => {
    expect(parseQuery(noQuery, { [name]: value })).toEqual({ ok: true, value: {} });
    expect(parseQuery(listQuery, { [name]: value, limit: '5' })).toEqual({ ok: true, value: { limit: 5, offset: 0 } });
    expect(parseQuery(paymentsQuery, { [name]: [value, value], search: 'x' })).toEqual({
      ok: true,
      value: { limit: 100, offset: 0, search: 'x' },
    });
  });

  it('when an unknown parameter does not start with _, then it is still refused, naming it', () => {
    expect(parseQuery(noQuery, { limit: '1', cb: '1', _: '2' })).toMatchObject({
      ok: false,
      errors: [{ field: 'limit' }, { field: 'cb' }],
    });
    expect(parseQuery(listQuery, { limt: '5' })).toMatchObject({
      ok: false,
      errors: [{ field: 'limt', detail: 'limt is not a query parameter of this endpoint' }],
    });
  });
});

describe('the docs page', () => {
  it('escapes the text of the document', () => {
    const page = renderDocsPage({
      openapi: '3.1.0',
      info: { title: '<script>alert(1)</script>', description: 'a & b "c"' },
      paths: { '/x/{id}': { get: { operationId: '"><img src=x>', summary: '<b>' } } },
    });
    expect(page).not.toContain('<script>alert');
    expect(page).not.toContain('<img');
    expect(page).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page).toContain('a &amp; b &quot;c&quot;');
  });
});

describe('when the system serves its description', () => {
  let sys: TestSystem;
  beforeAll(async () => {
    sys = await startTestSystem();
  });
  afterAll(async () => {
    await sys?.close();
  });

  it('then GET /api/v1/openapi.json, without a key, is the document of buildOpenApiDocument', async () => {
    const response = await fetch(`${sys.baseUrl}/api/v1/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await response.json()).toEqual(JSON.parse(JSON.stringify(buildOpenApiDocument(sys.config.ASSET_SCALE))));
  });

  it('then, with the default configuration, it serves exactly the committed openapi.json, which `wallet-ops openapi` prints byte for byte', async () => {
    expect(sys.config.ASSET_SCALE).toBe(loadConfig({}).ASSET_SCALE);
    const committed = readFileSync(COMMITTED, 'utf8');
    const served = await (await fetch(`${sys.baseUrl}/api/v1/openapi.json`)).json();
    expect(served, REGENERATE).toEqual(JSON.parse(committed));
    const printed = await runCli(['openapi']);
    expect(printed.code).toBe(0);
    expect(printed.stdout === committed, REGENERATE).toBe(true);
  });

  it('then GET /api/v1/docs, without a key, is a self-contained HTML page naming every path', async () => {
    const response = await fetch(`${sys.baseUrl}/api/v1/docs`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(response.headers.get('content-security-policy')).toContain("default-src 'none'");
    const page = await response.text();
    expect(page).toMatch(/^<!doctype html>/i);
    expect(page).not.toMatch(/<script|<link|src=/i);
    for (const path of Object.keys(doc.paths)) expect(page).toContain(path);
    for (const { operation } of operations()) expect(page).toContain(`id="${operation.operationId}"`);
  });
});
