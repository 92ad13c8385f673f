import { forgetResponseValidator, responseValidatorOf } from './openapi-validator.ts';

/**
 * Setup of every test file: every response to a request the OpenAPI document describes, whoever made it
 * (`call`, a client under test, a raw `fetch` in a suite), is checked against the document the answering system
 * serves (openapi-validator.ts). An undeclared status, a missing required header or a body outside its schema
 * makes that fetch throw, failing the test that provoked it. A system that serves no document (a part that does
 * not run the read API) is not checked.
 */
const PATCHED = Symbol.for('wallet-ops.test.openapi-fetch-check');
const DOCUMENT_PATH = '/api/v1/openapi.json';

type Fetch = typeof globalThis.fetch;
const host = globalThis as typeof globalThis & { [PATCHED]?: true };

if (!host[PATCHED]) {
  host[PATCHED] = true;
  const original: Fetch = globalThis.fetch.bind(globalThis);
  globalThis.fetch = async (input, init) => {
    const response = await original(input, init);
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    if (!url.pathname.startsWith('/api/v1/') || url.pathname === DOCUMENT_PATH || method === 'HEAD') return response;
    const text = await response.clone().text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: checked as the text it is
    }
    const check = async () =>
      (await responseValidatorOf(url.origin).catch(() => undefined))?.check(
        method,
        `${url.pathname}${url.search}`,
        response.status,
        response.headers,
        body,
      );
    // A port is used again by a later system of the run, perhaps configured otherwise: its own document decides.
    const problem = (await check()) && (forgetResponseValidator(url.origin), await check());
    if (problem) throw new Error(`The response does not match the OpenAPI document: ${problem}`);
    return response;
  };
}
