import { Router, type Request, type RequestHandler, type Response } from 'express';
import type { z } from 'zod';
import type { ReadStore } from '../ports/read-store.ts';
import { formatPartyRef, type PartyType } from '../domain/parties.ts';
import { authenticate, authorize } from '../http/authenticate.ts';
import { inSequence } from '../http/in-sequence.ts';
import { ProblemError, validationProblem } from '../http/problems.ts';
import { sendJsonTextWithETag, sendJsonWithETag, sendPreparedJson } from '../http/conditional.ts';
import type { ApiRateLimits } from '../http/rate-limit.ts';
import type { ApiKeyDirectory } from '../projections/api-key-directory.ts';
import { balancesProjection } from '../projections/balances.ts';
import { getBalance } from '../projections/balances-queries.ts';
import { distributorOperationsProjection } from '../projections/distributor-operations.ts';
import { getDistributorOperation, listDistributorOperations } from '../projections/distributor-operations-queries.ts';
import { merchantOperationsProjection } from '../projections/merchant-operations.ts';
import { getMerchantOperation, listMerchantOperations } from '../projections/merchant-operations-queries.ts';
import { merchantPaymentsProjection } from '../projections/merchant-payments.ts';
import { getMerchantPayment, listMerchantPayments } from '../projections/merchant-payments-queries.ts';
import type { ReadYourWrites } from '../projections/read-your-writes.ts';
import { LruMap } from '../shared/lru-map.ts';
import { listQuery, operationsQuery, parseQuery, paymentsQuery } from './schemas.ts';
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
  /** A read waits (bounded) for this process's own latest write of the party to be in the model; absent: no wait. */
  readYourWrites?: ReadYourWrites;
}
const notFound = (what: string) =>
  new ProblemError({
    type: '/problems/not-found',
    status: 404,
    title: 'Not Found',
    detail: `There is no ${what} here.`,
  });

/**
 * The last query strings each schema accepted, parsed: clients page with a few (`limit=100&offset=200`), and the
 * schema's parse cost a list about 3% of its CPU. Values are shared: callers copy what they take out of them.
 */
const PARSED_QUERIES = 1000;
const parsedQueries = new WeakMap<z.ZodType, LruMap<string, unknown>>();

function query<T>(schema: z.ZodType<T>, req: Request): T {
  const at = req.url.indexOf('?');
  const raw = at < 0 ? '' : req.url.slice(at + 1);
  let parsed = parsedQueries.get(schema);
  if (!parsed) parsedQueries.set(schema, (parsed = new LruMap(PARSED_QUERIES)));
  const known = parsed.get(raw) as T | undefined;
  if (known !== undefined) return known;
  const result = parseQuery(schema, req.query);
  if (!result.ok) throw validationProblem(result.errors);
  parsed.set(raw, Object.freeze(result.value));
  return result.value;
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
  // After authentication and authorization: a client without access learns nothing about the read models. The
  // party's own latest write of this process first (read-your-writes), then whether the model may answer at all.
  // The usual case, nothing to wait for and a verdict of the window in hand, goes on in the same tick.
  const { freshness, readYourWrites } = deps;
  const known = (projection: ServedModel) => !freshness || freshness.knownCurrent(projection);
  const current = (projection: ServedModel, partyType: PartyType) => {
    const param = `${partyType}ID`;
    return (req: Request, _res: Response, next: NextFunction) => {
      const party = formatPartyRef({ type: partyType, id: String(req.params[param]) });
      const written = readYourWrites?.untilReadable(projection.name, party);
      if (!written && known(projection)) return next();
      return (async () => {
        await written;
        if (freshness && !known(projection)) await freshness.assertServeable(projection);
        next();
      })();
    };
  };
  // Each route's handlers as one: express's route passes each of its layers at a cost (src/http/in-sequence.ts).
  const get = (path: string, ...handlers: RequestHandler[]) => router.get(path, inSequence(handlers));
  const models = {
    distributorOperations: distributorOperationsProjection({ assetScale: deps.assetScale }),
    merchantOperations: merchantOperationsProjection({ assetScale: deps.assetScale }),
    merchantPayments: merchantPaymentsProjection({ assetScale: deps.assetScale }),
  };

  const view = deps.balances;
  const balanceModel: ServedModel = view ?? balancesProjection({ assetScale: deps.assetScale });
  for (const partyType of ['distributor', 'merchant'] as const satisfies PartyType[]) {
    const id = `${partyType}ID`;
    // From memory: the answer and its ETag were made when the wallet's balance last changed. Else the same answer
    // from the read store's document (a read replica's: src/read-api/replica-reads.ts).
    const path = `/api/v1/${partyType}s/:${id}/balance`;
    get(
      path,
      auth,
      authorize('Read Balance', partyType, id),
      current(balanceModel, partyType),
      (req: Request, res: Response) => {
        // Without a query string there is nothing to check: neither express's parse nor the schema's is paid.
        if (req.url.includes('?')) query(NO_QUERY, req);
        const wallet = String(req.params[id]);
        // From memory the answer is sent in the same tick: no promise for express to watch.
        if (view) return sendPreparedJson(res, view.answer(partyType, wallet));
        return getBalance(readStore, { kind: partyType, id: wallet }, deps.assetScale).then((balance) =>
          sendJsonWithETag(res, balance),
        );
      },
    );
  }

  const page = (limit: number, offset: number) => ({ limit, offset });
  const send = (res: Response, text: string | null, what: string) => {
    if (text === null) throw notFound(what);
    sendJsonTextWithETag(res, text);
  };

  get(
    '/api/v1/distributors/:distributorID/operations',
    auth,
    authorize('Read Transactions', 'distributor', 'distributorID'),
    current(models.distributorOperations, 'distributor'),
    async (req, res) => {
      const { limit, offset, ...filter } = query(operationsQuery, req);
      const id = String(req.params.distributorID);
      sendJsonTextWithETag(res, await listDistributorOperations(readStore, id, filter, page(limit, offset)));
    },
  );

  get(
    '/api/v1/merchants/:merchantID/operations',
    auth,
    authorize('Read Transactions', 'merchant', 'merchantID'),
    current(models.merchantOperations, 'merchant'),
    async (req, res) => {
      const { limit, offset, ...filter } = query(operationsQuery, req);
      const id = String(req.params.merchantID);
      sendJsonTextWithETag(res, await listMerchantOperations(readStore, id, filter, page(limit, offset)));
    },
  );

  get(
    '/api/v1/merchants/:merchantID/payments',
    auth,
    authorize('Read Transactions', 'merchant', 'merchantID'),
    current(models.merchantPayments, 'merchant'),
    async (req, res) => {
      const { limit, offset, ...filter } = query(paymentsQuery, req);
      const id = String(req.params.merchantID);
      sendJsonTextWithETag(res, await listMerchantPayments(readStore, id, filter, page(limit, offset)));
    },
  );

  // Extensions (not in the contract): one item by its id, as its list shows it. The key's party check is the
  // path's (403, as for the lists); an id of another party's item is 404, exactly as one that does not exist.
  const readTransactions = (partyType: PartyType) => authorize('Read Transactions', partyType, `${partyType}ID`);
  const itemOf = (req: Request) => {
    query(NO_QUERY, req);
    return String(req.params.operationID);
  };

  get(
    '/api/v1/distributors/:distributorID/operations/:operationID',
    auth,
    readTransactions('distributor'),
    current(models.distributorOperations, 'distributor'),
    async (req, res) => {
      const operationID = itemOf(req);
      const text = await getDistributorOperation(readStore, String(req.params.distributorID), operationID);
      send(res, text, `operation ${operationID.slice(0, 64)}`);
    },
  );

  get(
    '/api/v1/merchants/:merchantID/operations/:operationID',
    auth,
    readTransactions('merchant'),
    current(models.merchantOperations, 'merchant'),
    async (req, res) => {
      const operationID = itemOf(req);
      const text = await getMerchantOperation(readStore, String(req.params.merchantID), operationID);
      send(res, text, `operation ${operationID.slice(0, 64)}`);
    },
  );

  get(
    '/api/v1/merchants/:merchantID/payments/:operationID',
    auth,
    readTransactions('merchant'),
    current(models.merchantPayments, 'merchant'),
    async (req, res) => {
      const operationID = itemOf(req);
      const text = await getMerchantPayment(readStore, String(req.params.merchantID), operationID);
      send(res, text, `payment ${operationID.slice(0, 64)}`);
    },
  );
  return router;
}
