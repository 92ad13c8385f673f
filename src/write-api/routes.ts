import { createHash } from 'node:crypto';
import express, { Router, type Request, type RequestHandler, type Response } from 'express';
import type { RecordedResponse } from '../commands/create-operation.ts';
import { createOperation, type OperationDeps } from '../commands/operation-handlers.ts';
import type { OperationRequested } from '../domain/events.ts';
import { authenticate, authenticatedKey, authenticatedSecretGeneration, authorize } from '../http/authenticate.ts';
import { fieldError, problemTypeOf, validationProblem } from '../http/problems.ts';
import { requestTraceparent } from '../http/request-context.ts';
import type { ApiRateLimits } from '../http/rate-limit.ts';
import type { ApiKeyDirectory } from '../projections/api-key-directory.ts';
import { canonicalJson } from '../shared/canonical-json.ts';
import { wroteOperation, type ReadYourWrites } from '../projections/read-your-writes.ts';
import { KeyedMutex } from '../shared/keyed-mutex.ts';
import { jsonBody } from './json-body.ts';
import { parseCreateOperation, type OperationSchemas } from './schemas.ts';

export interface WriteApiDeps {
  /** Told of every authenticated request (the key-usage recorder). */
  onAuthenticated?: (keyID: string, at: Date) => void;
  /** The process's rate limits (per key, and failed authentications per address); none when absent. */
  limits?: ApiRateLimits;
  /**
   * Told how each create of an authenticated, authorized key ended (the metrics): created, replayed (an
   * idempotent repeat), refused (a 4xx: a rule, a bad body, a reused idempotency key; with its problem type)
   * or error (a 5xx, with its problem type).
   */
  onCreate?: (
    partyType: 'distributor' | 'merchant',
    outcome: 'created' | 'replayed' | 'refused' | 'error',
    problemType: string,
  ) => void;
  operations: OperationDeps;
  directory: ApiKeyDirectory;
  schemas: OperationSchemas;
  clock: () => Date;
  /**
   * Read-your-writes (src/projections/read-your-writes.ts): told where each create landed, so that this process's next
   * reads of the party's operations and of the payer's balance wait for it. The create itself is answered at once.
   */
  readYourWrites?: ReadYourWrites;
}

export const BODY_LIMIT = '16kb';
const BODY_LIMIT_BYTES = 16 * 1024;
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** JSON only: anything else is a validation problem naming the Content-Type, before the body is read. */
const requireJson: RequestHandler = (req, _res, next) => {
  if (req.is('application/json') !== 'application/json') {
    throw validationProblem(
      [fieldError('Content-Type', 'the body must be sent as Content-Type: application/json')],
      'The request must carry a JSON body.',
    );
  }
  next();
};

/**
 * The answer to a created operation: the contract's 200 with its operationID. A repeat with its Idempotency-Key gets it
 * again.
 */
export function createdResponse(operation: OperationRequested['data']): RecordedResponse {
  return { status: 200, body: { operationID: operation.operationID } };
}

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * What `res.status(...).json(...)` sends for a 200, without express's work per answer (the app's JSON settings
 * looked up, the content type parsed again to set its charset, the body measured): Node measures a body sent whole
 * by `end` and sets Content-Length itself. The app sets no JSON replacer, spaces or escape. Any other status (none
 * is recorded today) goes through express, which strips the body of a 204 or 304.
 */
function sendJson(res: Response, response: RecordedResponse): void {
  if (response.status !== 200) {
    res.status(response.status).json(response.body);
    return;
  }
  res.statusCode = 200;
  res.setHeader('Content-Type', JSON_TYPE);
  res.end(JSON.stringify(response.body), 'utf8');
}

function idempotencyOf(req: Request) {
  const key = req.get('idempotency-key');
  if (key === undefined) return null;
  if (!IDEMPOTENCY_KEY.test(key))
    throw validationProblem([
      fieldError('Idempotency-Key', 'the Idempotency-Key header must be 1 to 255 visible ASCII characters'),
    ]);
  // Keys sorted at every level, so that the same body hashes the same whatever its key order.
  const requestHash = createHash('sha256')
    .update(`${req.method} ${req.path}\n${canonicalJson(req.body)}`)
    .digest('hex');
  return { key, requestHash, responseFor: createdResponse };
}

/** POST /api/v1/distributors/{distributorID}/operations and POST /api/v1/merchants/{merchantID}/operations. */
export function writeRoutes(deps: WriteApiDeps): Router {
  const router = Router();
  const auth = authenticate(deps.directory, deps.clock, deps.onAuthenticated, deps.limits);
  // Uncompressed only (no zip bombs), and strictly UTF-8: a bad byte inside a string must not be turned into
  // U+FFFD and stored as if the client had sent it.
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  const json = express.json({
    limit: BODY_LIMIT,
    strict: true,
    inflate: false,
    type: () => true,
    verify: (_req, _res, buffer) => void utf8.decode(buffer),
  });
  const body = jsonBody(BODY_LIMIT_BYTES, [requireJson, json]);
  // Requests with the same API key and Idempotency-Key that are running now: a duplicate waits for the first
  // (and then replays its answer: the decision is the command's, src/commands/create-operation.ts repeatOf).
  const inFlight = new KeyedMutex();

  for (const partyType of ['distributor', 'merchant'] as const) {
    const path = `/api/v1/${partyType}s/:${partyType}ID/operations`;
    // Counted when the response is finished, whichever middleware answered it (the body parser, the handler, the
    // problem handler): one listener per route, not a closure per request (`finish` is emitted once: `on`).
    const onCreate = deps.onCreate;
    const finished = onCreate
      ? function (this: Response) {
          const status = this.statusCode;
          const outcome =
            status >= 500
              ? 'error'
              : status >= 400
                ? 'refused'
                : this.getHeader('Idempotent-Replayed') === 'true'
                  ? 'replayed'
                  : 'created';
          onCreate(partyType, outcome, status >= 400 ? (problemTypeOf(this) ?? 'unknown') : '');
        }
      : undefined;
    const countCreate: RequestHandler = (_req, res, next) => {
      if (finished) res.on('finish', finished);
      next();
    };
    router.post(
      path,
      auth,
      authorize('Perform Operations', partyType, `${partyType}ID`),
      countCreate,
      body,
      async (req: Request, res: Response) => {
        const key = authenticatedKey(res);
        const parsed = parseCreateOperation(deps.schemas, partyType, req.body);
        if (!parsed.ok) throw validationProblem(parsed.errors);
        const idempotency = idempotencyOf(req);
        const traceparent = requestTraceparent(res);
        const context = {
          actor: `apikey:${key.keyID}`,
          correlationId: String(res.getHeader('X-Request-Id')),
          ...(traceparent ? { traceparent } : {}),
        };
        const secretGeneration = authenticatedSecretGeneration(res);
        const run = () => createOperation(deps.operations, key, parsed.input, idempotency, context, secretGeneration);

        const outcome = idempotency ? await inFlight.run([`${key.keyID}\u0000${idempotency.key}`], run) : await run();
        if (outcome.kind === 'created')
          wroteOperation(deps.readYourWrites, outcome.operation, {
            position: outcome.position,
            walletPosition: outcome.holdPosition,
          });
        if (outcome.kind === 'replayed') res.setHeader('Idempotent-Replayed', 'true');
        const response = outcome.kind === 'created' ? createdResponse(outcome.operation) : outcome.response;
        sendJson(res, response);
      },
    );
  }
  return router;
}
