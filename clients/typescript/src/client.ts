import { randomUUID } from 'node:crypto';
import createClient, { type Client } from 'openapi-fetch';
import { paginate, type Page, type PageOptions } from './pages.ts';
import { retryingFetch, type RetryOptions } from './retry.ts';
import type { components, operations as Operations, paths } from './schema.ts';

type Schemas = components['schemas'];
export type Problem = Schemas['Problem'];
export type Balance = Schemas['Balance'];
export type DistributorOperation = Schemas['DistributorOperation'];
export type MerchantOperation = Schemas['MerchantOperation'];
export type Payment = Schemas['Payment'];
export type DistributorOperationRequest = Schemas['DistributorOperationRequest'];
export type MerchantOperationRequest = Schemas['MerchantOperationRequest'];

/** The filters of a list (beside limit and offset), from the document: `status`, `createdFrom`, `createdTo`, `search`. */
type Filters<Q> = Omit<NonNullable<Q>, 'limit' | 'offset'>;
export type OperationFilters = Filters<Operations['listDistributorOperations']['parameters']['query']>;
export type PaymentFilters = Filters<Operations['listMerchantPayments']['parameters']['query']>;

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
      const operations = (query: Partial<Page> & OperationFilters = {}) =>
        unwrap(api.GET('/api/v1/distributors/{distributorID}/operations', { params: { path, query } }));
      return {
        balance: () => unwrap(api.GET('/api/v1/distributors/{distributorID}/balance', { params: { path } })),
        /** One page of operations, newest first, optionally filtered by status and creation time. */
        operations,
        /** Every operation (of the filters), newest first, fetching `pageSize` (default 100) at a time. */
        allOperations: (options: PageOptions & OperationFilters = {}) => iterate(operations, options),
        /** One operation by its operationID; another distributor's, or none, is a WalletApiError with status 404. */
        operation: (operationID: string) =>
          unwrap(
            api.GET('/api/v1/distributors/{distributorID}/operations/{operationID}', {
              params: { path: { ...path, operationID } },
            }),
          ),
        /** Creates a pending operation; returns its operationID. */
        createOperation: (body: DistributorOperationRequest, request: { idempotencyKey?: string } = {}) =>
          unwrap(
            api.POST('/api/v1/distributors/{distributorID}/operations', {
              params: { path, header: idempotency(request.idempotencyKey) },
              body: body as never,
            }),
          ),
      };
    },
    merchant(merchantID: string) {
      const path = { merchantID };
      const operations = (query: Partial<Page> & OperationFilters = {}) =>
        unwrap(api.GET('/api/v1/merchants/{merchantID}/operations', { params: { path, query } }));
      const payments = (query: Partial<Page> & PaymentFilters = {}) =>
        unwrap(api.GET('/api/v1/merchants/{merchantID}/payments', { params: { path, query } }));
      return {
        balance: () => unwrap(api.GET('/api/v1/merchants/{merchantID}/balance', { params: { path } })),
        operations,
        allOperations: (options: PageOptions & OperationFilters = {}) => iterate(operations, options),
        operation: (operationID: string) =>
          unwrap(
            api.GET('/api/v1/merchants/{merchantID}/operations/{operationID}', {
              params: { path: { ...path, operationID } },
            }),
          ),
        /** One page of the payments received, newest first; `search` matches the sender's phone and the memo. */
        payments,
        allPayments: (options: PageOptions & PaymentFilters = {}) => iterate(payments, options),
        /** One payment by its own operationID (wo_…). */
        payment: (operationID: string) =>
          unwrap(
            api.GET('/api/v1/merchants/{merchantID}/payments/{operationID}', {
              params: { path: { ...path, operationID } },
            }),
          ),
        createOperation: (body: MerchantOperationRequest, request: { idempotencyKey?: string } = {}) =>
          unwrap(
            api.POST('/api/v1/merchants/{merchantID}/operations', {
              params: { path, header: idempotency(request.idempotencyKey) },
              body,
            }),
          ),
      };
    },
  };
}

/** Every iterator takes the same options: `pageSize`, and the list's filters, sent with every page. */
function iterate<T, F extends object>(fetchPage: (query: Page & F) => Promise<T[]>, options: PageOptions & F) {
  const { pageSize, ...filters } = options;
  return paginate((page) => fetchPage({ ...(filters as F), ...page }), pageSize);
}

export type WalletClient = ReturnType<typeof createWalletClient>;
