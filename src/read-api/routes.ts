import { Router, type Request, type Response } from 'express';
import type { z } from 'zod';
import type { CollectionDefinition, Document, FindQuery, ReadStore } from '../ports/read-store.ts';
import type { PartyType } from '../domain/parties.ts';
import { authenticate, authorize } from '../http/authenticate.ts';
import { ProblemError, validationProblem } from '../http/problems.ts';
import { sendJsonTextWithETag, sendJsonWithETag, sendPreparedJson } from '../http/conditional.ts';
import type { ApiRateLimits } from '../http/rate-limit.ts';
import type { ApiKeyDirectory } from '../projections/api-key-directory.ts';
import { API_TEXT } from '../projections/api-text.ts';
import * as balances from '../projections/balances.ts';
import * as distributorOperations from '../projections/distributor-operations.ts';
import * as merchantOperations from '../projections/merchant-operations.ts';
import * as merchantPayments from '../projections/merchant-payments.ts';
import { listFilters, listQuery, operationsQuery, parseQuery, paymentsQuery } from './schemas.ts';
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
  /**
   * The balances read model in this process's memory (balances-view.ts): what GET .../balance answers from; absent: the
   * read store's.
   */
  balances?: BalancesView;
  directory: ApiKeyDirectory;
  clock: () => Date;
  assetScale: number;
  /**
   * Refuses reads of a read model that is not built or too far behind (503); absent: every model is served as it is.
   */
  freshness?: ReadFreshness;
}

/** Ids are short tokens (op_…, wo_…): anything else cannot name an item, and is not looked up. */
const plausibleID = (id: string) => /^[A-Za-z0-9_-]{1,100}$/.test(id);
const notFound = (what: string) =>
  new ProblemError({
    type: '/problems/not-found',
    status: 404,
    title: 'Not Found',
    detail: `There is no ${what} here.`,
  });

function query<T>(schema: z.ZodType<T>, req: Request): T {
  const parsed = parseQuery(schema, req.query);
  if (!parsed.ok) throw validationProblem(parsed.errors);
  return parsed.value;
}

/**
 * The five GET endpoints of the contract, and the three single-item GETs that extend it. They read documents the
 * projections built; they never fold events. Lists are newest creation first with the id as tie-break, so paging by
 * offset neither repeats nor skips an item while nothing new arrives.
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

  const view = deps.balances;
  const balanceModel: ServedModel = view ?? balances.balancesProjection({ assetScale: deps.assetScale });
  for (const partyType of ['distributor', 'merchant'] as const satisfies PartyType[]) {
    const id = `${partyType}ID`;
    // From memory: the answer and its ETag were made when the wallet's balance last changed. Else the same answer
    // from the read store's document (a read replica's: src/read-api/replica-reads.ts).
    const path = `/api/v1/${partyType}s/:${id}/balance`;
    router.get(
      path,
      auth,
      authorize('Read Balance', partyType, id),
      current(balanceModel),
      async (req: Request, res: Response) => {
        // Without a query string there is nothing to check: neither express's parse nor the schema's is paid.
        if (req.url.includes('?')) query(NO_QUERY, req);
        const wallet = String(req.params[id]);
        if (view) return sendPreparedJson(res, view.answer(partyType, wallet));
        const docID = balances.balanceDocId({ kind: partyType, id: wallet });
        const doc = plausibleID(wallet)
          ? await readStore.get<balances.BalanceDoc>(balances.BALANCES_COLLECTION.name, docID)
          : null;
        sendJsonWithETag(res, balances.toApi(doc, deps.assetScale));
      },
    );
  }

  /**
   * A list's JSON: the documents' stored API texts joined, neither parsed nor serialized again (api-text.ts). A
   * document stored before it kept its text is serialized here, by the toApi that makes the text, to the same bytes.
   */
  type Find = Omit<FindQuery, 'skip' | 'limit'>;
  const list = <Doc extends Document>(
    collection: string,
    find: Find,
    toApi: (doc: Doc) => unknown,
    page: { limit: number; offset: number },
  ) =>
    readStore
      .findText<Doc>(collection, { ...find, skip: page.offset, limit: page.limit }, API_TEXT)
      .then(
        (items) =>
          `[${items.map((item) => (typeof item === 'string' ? item : JSON.stringify(toApi(item)))).join(',')}]`,
      );
  /** The find of a list with its filters (extensions): the party's own items, then status and creation time. */
  const filtered = (
    where: NonNullable<FindQuery['where']>,
    sort: FindQuery['sort'],
    filters: Parameters<typeof listFilters>[0],
  ) => {
    const extra = listFilters(filters);
    return { where: { ...where, ...extra.where }, sort, ...(extra.range ? { range: extra.range } : {}) };
  };
  /**
   * One item as the list shows it, with its ETag; anything that is not the party's own is 404, like an id that never
   * existed.
   */
  const one = <Doc extends Document>(
    res: Response,
    doc: Doc | null | undefined,
    owned: (doc: Doc) => boolean,
    toApi: (doc: Doc) => unknown,
    what: string,
  ) => {
    if (!doc || !owned(doc)) throw notFound(what);
    const text = doc[API_TEXT];
    sendJsonTextWithETag(res, typeof text === 'string' ? text : JSON.stringify(toApi(doc)));
  };

  router.get(
    '/api/v1/distributors/:distributorID/operations',
    auth,
    authorize('Read Transactions', 'distributor', 'distributorID'),
    current(models.distributorOperations),
    async (req, res) => {
      const { limit, offset, ...filters } = query(operationsQuery, req);
      const id = String(req.params.distributorID);
      const find = filtered(
        distributorOperations.distributorOperationsWhere(id),
        distributorOperations.DISTRIBUTOR_OPERATIONS_SORT,
        filters,
      );
      sendJsonTextWithETag(
        res,
        await list(distributorOperations.DISTRIBUTOR_OPERATIONS_COLLECTION.name, find, distributorOperations.toApi, {
          limit,
          offset,
        }),
      );
    },
  );

  router.get(
    '/api/v1/merchants/:merchantID/operations',
    auth,
    authorize('Read Transactions', 'merchant', 'merchantID'),
    current(models.merchantOperations),
    async (req, res) => {
      const { limit, offset, ...filters } = query(operationsQuery, req);
      const id = String(req.params.merchantID);
      const find = filtered(
        merchantOperations.merchantOperationsWhere(id),
        merchantOperations.MERCHANT_OPERATIONS_SORT,
        filters,
      );
      sendJsonTextWithETag(
        res,
        await list(merchantOperations.MERCHANT_OPERATIONS_COLLECTION.name, find, merchantOperations.toApi, {
          limit,
          offset,
        }),
      );
    },
  );

  router.get(
    '/api/v1/merchants/:merchantID/payments',
    auth,
    authorize('Read Transactions', 'merchant', 'merchantID'),
    current(models.merchantPayments),
    async (req, res) => {
      const { search, limit, offset, ...filters } = query(paymentsQuery, req);
      const id = String(req.params.merchantID);
      const clauses = search !== undefined && search.trim() !== '' ? merchantPayments.paymentSearch(search) : undefined;
      const own = filtered(
        merchantPayments.merchantPaymentsWhere(id),
        merchantPayments.MERCHANT_PAYMENTS_SORT,
        filters,
      );
      const find = { ...own, ...(clauses ? { search: clauses } : {}) };
      sendJsonTextWithETag(
        res,
        await list(merchantPayments.MERCHANT_PAYMENTS_COLLECTION.name, find, merchantPayments.toApi, { limit, offset }),
      );
    },
  );

  // Extensions (not in the contract): one item by its id, as its list shows it. The key's party check is the
  // path's (403, as for the lists); an id of another party's item is 404, exactly as one that does not exist.
  const readTransactions = (partyType: PartyType) => authorize('Read Transactions', partyType, `${partyType}ID`);
  const itemOf = (req: Request) => {
    query(NO_QUERY, req);
    return String(req.params.operationID);
  };
  const byID = <Doc extends Document>(collection: CollectionDefinition, id: string) =>
    plausibleID(id) ? readStore.get<Doc>(collection.name, id) : Promise.resolve(null);

  router.get(
    '/api/v1/distributors/:distributorID/operations/:operationID',
    auth,
    readTransactions('distributor'),
    current(models.distributorOperations),
    async (req, res) => {
      const operationID = itemOf(req);
      const doc = await byID<distributorOperations.DistributorOperationDoc>(
        distributorOperations.DISTRIBUTOR_OPERATIONS_COLLECTION,
        operationID,
      );
      one(
        res,
        doc,
        (d) => d.distributorID === req.params.distributorID,
        distributorOperations.toApi,
        `operation ${operationID.slice(0, 64)}`,
      );
    },
  );

  router.get(
    '/api/v1/merchants/:merchantID/operations/:operationID',
    auth,
    readTransactions('merchant'),
    current(models.merchantOperations),
    async (req, res) => {
      const operationID = itemOf(req);
      const doc = await byID<merchantOperations.MerchantOperationDoc>(
        merchantOperations.MERCHANT_OPERATIONS_COLLECTION,
        operationID,
      );
      one(
        res,
        doc,
        (d) => d.merchantID === req.params.merchantID && d.visible,
        merchantOperations.toApi,
        `operation ${operationID.slice(0, 64)}`,
      );
    },
  );

  router.get(
    '/api/v1/merchants/:merchantID/payments/:operationID',
    auth,
    readTransactions('merchant'),
    current(models.merchantPayments),
    async (req, res) => {
      const operationID = itemOf(req);
      const id = String(req.params.merchantID);
      // A payment is named by its wallet operation (wo_…), which the document keeps beside its own id (the op_…).
      const where = { ...merchantPayments.merchantPaymentsWhere(id), operationID };
      const [doc] = plausibleID(operationID)
        ? await readStore.find<merchantPayments.MerchantPaymentDoc>(
            merchantPayments.MERCHANT_PAYMENTS_COLLECTION.name,
            { where, limit: 1 },
          )
        : [];
      one(
        res,
        doc,
        (d) => d.merchantID === id && d.visible,
        merchantPayments.toApi,
        `payment ${operationID.slice(0, 64)}`,
      );
    },
  );
  return router;
}
