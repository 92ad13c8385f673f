import { Router, type Request, type Response } from 'express';
import type { z } from 'zod';
import type { Document, FindQuery, ReadStore } from '../ports/read-store.ts';
import type { PartyType } from '../domain/parties.ts';
import { authenticate, authorize } from '../http/authenticate.ts';
import { validationProblem } from '../http/problems.ts';
import { sendJsonTextWithETag, sendJsonWithETag, sendPreparedJson } from '../http/conditional.ts';
import type { ApiRateLimits } from '../http/rate-limit.ts';
import type { ApiKeyDirectory } from '../projections/api-key-directory.ts';
import { API_TEXT } from '../projections/api-text.ts';
import * as distributorOperations from '../projections/distributor-operations.ts';
import * as merchantOperations from '../projections/merchant-operations.ts';
import * as merchantPayments from '../projections/merchant-payments.ts';
import { listQuery, parseQuery, paymentsQuery } from './schemas.ts';
import type { ReadFreshness, ServedModel } from './freshness.ts';
import type { BalancesView } from './balances-view.ts';
import type { NextFunction } from 'express';

/** The balance endpoints take no query parameters; built once, not per request. */
const NO_QUERY = listQuery.pick({});

export interface ReadApiDeps {
  /** Told of every authenticated request (the key-usage recorder). */
  onAuthenticated?: (keyID: string, at: Date) => void;
  /** The process's rate limits (per key, and failed authentications per address); none when absent. */
  limits?: ApiRateLimits;
  readStore: ReadStore;
  /** The balances read model in this process's memory (balances-view.ts): what GET .../balance answers from. */
  balances: BalancesView;
  directory: ApiKeyDirectory;
  clock: () => Date;
  assetScale: number;
  /** Refuses reads of a read model that is not built or too far behind (503); absent: every model is served as it is. */
  freshness?: ReadFreshness;
}

function query<T>(schema: z.ZodType<T>, req: Request): T {
  const parsed = parseQuery(schema, req.query);
  if (!parsed.ok) throw validationProblem(parsed.errors);
  return parsed.value;
}

/**
 * The five GET endpoints. They read documents the projections built; they never fold events. Lists are
 * newest creation first with the id as tie-break, so paging by offset neither repeats nor skips an item
 * while nothing new arrives.
 */
export function readRoutes(deps: ReadApiDeps): Router {
  const router = Router();
  const auth = authenticate(deps.directory, deps.clock, deps.onAuthenticated, deps.limits);
  const { readStore } = deps;
  // After authentication and authorization: a client without access learns nothing about the read models.
  const current = (projection: ServedModel) => async (_req: Request, _res: Response, next: NextFunction) => {
    if (deps.freshness && !deps.freshness.knownCurrent(projection)) await deps.freshness.assertServeable(projection);
    next();
  };
  const models = {
    distributorOperations: distributorOperations.distributorOperationsProjection({ assetScale: deps.assetScale }),
    merchantOperations: merchantOperations.merchantOperationsProjection({ assetScale: deps.assetScale }),
    merchantPayments: merchantPayments.merchantPaymentsProjection({ assetScale: deps.assetScale }),
  };

  for (const partyType of ['distributor', 'merchant'] as const satisfies PartyType[]) {
    const id = `${partyType}ID`;
    // Answered from memory: the answer and its ETag were made when the wallet's balance last changed.
    router.get(`/api/v1/${partyType}s/:${id}/balance`, auth, authorize('Read Balance', partyType, id), current(deps.balances), (req: Request, res: Response) => {
      // Without a query string there is nothing to check: neither express's parse nor the schema's is paid.
      if (req.url.includes('?')) query(NO_QUERY, req);
      sendPreparedJson(res, deps.balances.answer(partyType, String(req.params[id])));
    });
  }

  /**
   * A list's JSON: the documents' stored API texts joined, neither parsed nor serialized again (api-text.ts). A
   * document stored before it kept its text is serialized here, by the toApi that makes the text, to the same bytes.
   */
  const list = <Doc extends Document>(collection: string, where: FindQuery['where'], sort: FindQuery['sort'], toApi: (doc: Doc) => unknown, page: { limit: number; offset: number }, search?: FindQuery['search']) =>
    readStore
      .findText<Doc>(collection, { where, sort, skip: page.offset, limit: page.limit, ...(search ? { search } : {}) }, API_TEXT)
      .then((items) => `[${items.map((item) => (typeof item === 'string' ? item : JSON.stringify(toApi(item)))).join(',')}]`);

  router.get('/api/v1/distributors/:distributorID/operations', auth, authorize('Read Transactions', 'distributor', 'distributorID'), current(models.distributorOperations), async (req, res) => {
    const page = query(listQuery, req);
    const id = String(req.params.distributorID);
    sendJsonTextWithETag(res, await list(distributorOperations.DISTRIBUTOR_OPERATIONS_COLLECTION.name, distributorOperations.distributorOperationsWhere(id), distributorOperations.DISTRIBUTOR_OPERATIONS_SORT, distributorOperations.toApi, page));
  });

  router.get('/api/v1/merchants/:merchantID/operations', auth, authorize('Read Transactions', 'merchant', 'merchantID'), current(models.merchantOperations), async (req, res) => {
    const page = query(listQuery, req);
    const id = String(req.params.merchantID);
    sendJsonTextWithETag(res, await list(merchantOperations.MERCHANT_OPERATIONS_COLLECTION.name, merchantOperations.merchantOperationsWhere(id), merchantOperations.MERCHANT_OPERATIONS_SORT, merchantOperations.toApi, page));
  });

  router.get('/api/v1/merchants/:merchantID/payments', auth, authorize('Read Transactions', 'merchant', 'merchantID'), current(models.merchantPayments), async (req, res) => {
    const { search, ...page } = query(paymentsQuery, req);
    const id = String(req.params.merchantID);
    const clauses = search !== undefined && search.trim() !== '' ? merchantPayments.paymentSearch(search) : undefined;
    sendJsonTextWithETag(res, await list(merchantPayments.MERCHANT_PAYMENTS_COLLECTION.name, merchantPayments.merchantPaymentsWhere(id), merchantPayments.MERCHANT_PAYMENTS_SORT, merchantPayments.toApi, page, clauses));
  });
  return router;
}
