import { randomUUID } from 'node:crypto';
import createClient, { type Client } from 'openapi-fetch';
import { paginate, type Page } from './pages.ts';
import { retryingFetch, type RetryOptions } from './retry.ts';
import type { components, paths } from './schema.ts';

type Schemas = components['schemas'];
export type Problem = Schemas['Problem'];
export type Balance = Schemas['Balance'];
export type DistributorOperation = Schemas['DistributorOperation'];
export type MerchantOperation = Schemas['MerchantOperation'];
export type Payment = Schemas['Payment'];
export type DistributorOperationRequest = Schemas['DistributorOperationRequest'];
export type MerchantOperationRequest = Schemas['MerchantOperationRequest'];

export interface WalletClientOptions {
  /** The deployment's base address, e.g. `https://wallet.example.com` (paths carry /api/v1). */
  baseUrl: string;
  /** The API key, `wo_live_<keyID>.<secret>` (`wo_test_` from a sandbox), as shown once after approval. */
  apiKey: string;
  /** Retries of 429 and 503 with Retry-After (retry.ts); `{ attempts: 1 }` turns them off. */
  retry?: RetryOptions;
  /** Makes the Idempotency-Key of a create that is given none (default: a random UUID). */
  idempotencyKey?: () => string;
  /** The fetch to send with (default: the global one). */
  fetch?: (request: Request) => Promise<Response>;
}

/** A refusal or failure of the API: the HTTP status, the problem body (RFC 9457) when there is one, and the request id to quote. */
export class WalletApiError extends Error {
  readonly status: number;
  readonly problem: Problem | undefined;
  readonly requestId: string | null;

  constructor(response: Response, problem: Problem | undefined) {
    super(problem ? `${response.status} ${problem.type}: ${problem.detail}` : `HTTP ${response.status}`);
    this.name = 'WalletApiError';
    this.status = response.status;
    this.problem = problem;
    this.requestId = response.headers.get('x-request-id');
  }
}

async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok || data === undefined) throw new WalletApiError(response, error as Problem | undefined);
  return data;
}

/**
 * A typed client of the Wallet Operations API: every endpoint of the party the key is bound to, with pages
 * as async iterators, an Idempotency-Key on every create (so that a retry never creates twice) and retries
 * of 429 and 503 as the server's Retry-After says. Errors are thrown as WalletApiError. `api` is the
 * underlying openapi-fetch client, typed from the same document, for anything else.
 */
export function createWalletClient(options: WalletClientOptions) {
  const api: Client<paths> = createClient<paths>({
    baseUrl: options.baseUrl,
    headers: { Authorization: `Bearer ${options.apiKey}` },
    fetch: retryingFetch(options.fetch ?? ((request) => fetch(request)), options.retry),
  });
  const newKey = options.idempotencyKey ?? randomUUID;
  const idempotency = (given?: string) => ({ 'Idempotency-Key': given ?? newKey() });
  // openapi-fetch narrows a body's oneOf to exclusive members and so refuses the null (= absent) destination
  // of a cash-in that the schema and the server accept: the body is typed by the schema at the method instead.

  return {
    api,
    distributor(distributorID: string) {
      const path = { distributorID };
      const operations = (page?: Partial<Page>) => unwrap(api.GET('/api/v1/distributors/{distributorID}/operations', { params: { path, query: page } }));
      return {
        balance: () => unwrap(api.GET('/api/v1/distributors/{distributorID}/balance', { params: { path } })),
        /** One page of operations, newest first. */
        operations,
        /** Every operation, newest first, fetching `pageSize` at a time. */
        allOperations: (pageSize?: number) => paginate(operations, pageSize),
        /** Creates a pending operation; returns its operationID. */
        createOperation: (body: DistributorOperationRequest, request: { idempotencyKey?: string } = {}) =>
          unwrap(api.POST('/api/v1/distributors/{distributorID}/operations', { params: { path, header: idempotency(request.idempotencyKey) }, body: body as never })),
      };
    },
    merchant(merchantID: string) {
      const path = { merchantID };
      const operations = (page?: Partial<Page>) => unwrap(api.GET('/api/v1/merchants/{merchantID}/operations', { params: { path, query: page } }));
      const payments = (query?: Partial<Page> & { search?: string }) => unwrap(api.GET('/api/v1/merchants/{merchantID}/payments', { params: { path, query } }));
      return {
        balance: () => unwrap(api.GET('/api/v1/merchants/{merchantID}/balance', { params: { path } })),
        operations,
        allOperations: (pageSize?: number) => paginate(operations, pageSize),
        /** One page of the payments received, newest first; `search` matches the sender's phone and the memo. */
        payments,
        allPayments: (query: { search?: string; pageSize?: number } = {}) =>
          paginate((page) => payments({ ...page, ...(query.search !== undefined ? { search: query.search } : {}) }), query.pageSize),
        createOperation: (body: MerchantOperationRequest, request: { idempotencyKey?: string } = {}) =>
          unwrap(api.POST('/api/v1/merchants/{merchantID}/operations', { params: { path, header: idempotency(request.idempotencyKey) }, body })),
      };
    },
  };
}

export type WalletClient = ReturnType<typeof createWalletClient>;
