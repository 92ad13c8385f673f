import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../src/read-api/openapi.ts';
import { compileResponseValidator } from './openapi-validator.ts';

const validator = compileResponseValidator(JSON.parse(JSON.stringify(buildOpenApiDocument(2))));
// What every answer to a GET of the read API carries: its request id, a weak ETag and no-store.
const json = (type = 'application/json', extra: Record<string, string> = {}) =>
  new Headers({
    'content-type': `${type}; charset=utf-8`,
    'x-request-id': 'r1',
    etag: 'W/"2a-x"',
    'cache-control': 'no-store',
    ...extra,
  });
const BALANCE = '/api/v1/merchants/m-1/balance';

describe('the OpenAPI response validator of the e2e suites', () => {
  it('when a response matches its declared status, headers and schema, then it passes', () => {
    expect(
      validator.check('GET', `${BALANCE}?x=1`, 200, json(), { balance: '1.00', available: '1.00', held: '0.00' }),
    ).toBeUndefined();
  });

  it('when the request is not one the document describes, then nothing is checked', () => {
    expect(validator.check('GET', '/health', 200, new Headers(), {})).toBeUndefined();
    expect(validator.check('DELETE', BALANCE, 400, new Headers(), {})).toBeUndefined();
  });

  it.each([
    ['an undeclared status', 418, json(), {}, /does not declare/],
    [
      'no X-Request-Id',
      200,
      new Headers({ 'content-type': 'application/json', etag: 'W/"2a-x"', 'cache-control': 'no-store' }),
      { balance: '1.00', available: '1.00', held: '0.00' },
      /X-Request-Id/,
    ],
    [
      'no ETag',
      200,
      new Headers({ 'content-type': 'application/json', 'x-request-id': 'r1', 'cache-control': 'no-store' }),
      { balance: '1.00', available: '1.00', held: '0.00' },
      /ETag/,
    ],
    ['an amount off the asset scale', 200, json(), { balance: '1.0', available: '1.00', held: '0.00' }, /pattern/],
    [
      'a field the schema lacks',
      200,
      json(),
      { balance: '1.00', available: '1.00', held: '0.00', extra: 1 },
      /additional/,
    ],
    [
      'a problem type off the list',
      400,
      json('application/problem+json'),
      { type: '/problems/nope', status: 400, title: 't', detail: 'd' },
      /allowed values/,
    ],
    ['an undeclared media type', 200, json('text/html'), '<p>', /text\/html/],
  ])('when a response has %s, then it fails, saying why', (_what, status, headers, body, why) => {
    expect(validator.check('GET', BALANCE, status, headers, body)).toMatch(why);
  });
});
