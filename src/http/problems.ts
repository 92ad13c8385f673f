import type { ErrorRequestHandler, Response } from 'express';
import { DomainError, type DomainErrorCode } from '../domain/errors.ts';
import { EventStoreUnavailableError } from '../ports/event-store.ts';
import { ReadStoreUnavailableError } from '../ports/read-store.ts';
import { StoreCorruptedError } from '../ports/store-corrupted.ts';
import type { Logger } from '../logger.ts';

/**
 * Problem details (RFC 9457) with the contract's types and titles. Every error of the HTTP layer becomes one
 * of these here, in one place; routes throw and never write error responses themselves.
 */
export interface FieldError {
  type: '/problems/input-validation-problems/invalid-field';
  field: string;
  detail: string;
}

/**
 * Every problem type the service answers with, in one list: the enum of Problem.type in the OpenAPI
 * document, so that a client can switch over them exhaustively.
 */
export const PROBLEM_TYPES = [
  '/problems/input-validation-problems',
  '/problems/unauthorized',
  '/problems/access-forbidden',
  '/problems/transaction-limit-exceeded',
  '/problems/daily-volume-exceeded',
  '/problems/insufficient-balance',
  '/problems/cash-out-not-authorized',
  '/problems/not-found',
  '/problems/conflict',
  '/problems/wrong-state',
  '/problems/concurrency-conflict',
  '/problems/idempotency-key-in-flight',
  '/problems/idempotency-key-reused',
  '/problems/payload-too-large',
  '/problems/rate-limited',
  '/problems/request-timeout',
  '/problems/request-header-fields-too-large',
  '/problems/internal-error',
  '/problems/service-unavailable',
  '/problems/store-corrupted',
] as const;
export type ProblemType = (typeof PROBLEM_TYPES)[number];

export interface Problem {
  type: ProblemType;
  status: number;
  title: string;
  detail: string;
  errors?: FieldError[];
  /** On a 429: the names of the limits that were exceeded (the extension member of the ratelimit-headers draft). */
  'violated-policies'?: string[];
  /**
   * The request's X-Request-Id, on every problem sent (an extension member): a body logged alone still names its
   * request.
   */
  requestId?: string;
}

export class ProblemError extends Error {
  readonly problem: Problem;
  readonly headers: Record<string, string>;
  constructor(problem: Problem, headers: Record<string, string> = {}) {
    super(problem.detail);
    this.problem = problem;
    this.headers = headers;
    this.name = 'ProblemError';
  }
}

export const fieldError = (field: string, detail: string): FieldError => ({
  type: '/problems/input-validation-problems/invalid-field',
  field,
  detail,
});

export function validationProblem(
  errors: FieldError[],
  detail = 'The request has invalid fields; see errors.',
): ProblemError {
  return new ProblemError({
    type: '/problems/input-validation-problems',
    status: 400,
    title: 'There are some validation errors',
    detail,
    errors,
  });
}

export function unauthorized(detail: string, invalidToken: boolean): ProblemError {
  // RFC 6750: a request without credentials gets the bare challenge; a bad token gets error="invalid_token".
  const challenge = invalidToken ? 'Bearer realm="wallet-ops", error="invalid_token"' : 'Bearer realm="wallet-ops"';
  return new ProblemError(
    { type: '/problems/unauthorized', status: 401, title: 'Unauthorized', detail },
    { 'WWW-Authenticate': challenge },
  );
}

export const accessForbidden = (detail: string) =>
  new ProblemError({ type: '/problems/access-forbidden', status: 403, title: 'Access Forbidden', detail });

/**
 * 429: a limit of the request rate was reached; the headers (Retry-After, RateLimit-Policy, RateLimit) say until when.
 */
export const rateLimited = (detail: string, policy: string, headers: Record<string, string>) =>
  new ProblemError(
    { type: '/problems/rate-limited', status: 429, title: 'Too Many Requests', detail, 'violated-policies': [policy] },
    headers,
  );

const DOMAIN_PROBLEMS: Record<DomainErrorCode, { status: number; type: ProblemType; title: string }> = {
  INVALID_INPUT: {
    status: 400,
    type: '/problems/input-validation-problems',
    title: 'There are some validation errors',
  },
  TRANSACTION_LIMIT_EXCEEDED: {
    status: 403,
    type: '/problems/transaction-limit-exceeded',
    title: 'Transaction Limit Exceeded',
  },
  DAILY_VOLUME_EXCEEDED: { status: 403, type: '/problems/daily-volume-exceeded', title: 'Daily Volume Limit Exceeded' },
  INSUFFICIENT_BALANCE: { status: 403, type: '/problems/insufficient-balance', title: 'Insufficient Balance' },
  CASH_OUT_NOT_AUTHORIZED: { status: 403, type: '/problems/cash-out-not-authorized', title: 'Cash-Out Not Authorized' },
  OTHER_PARTY: { status: 403, type: '/problems/access-forbidden', title: 'Access Forbidden' },
  ROLE_REQUIRED: { status: 403, type: '/problems/access-forbidden', title: 'Access Forbidden' },
  SAME_USER: { status: 403, type: '/problems/access-forbidden', title: 'Access Forbidden' },
  NOT_FOUND: { status: 404, type: '/problems/not-found', title: 'Not Found' },
  ALREADY_EXISTS: { status: 409, type: '/problems/conflict', title: 'Conflict' },
  SHORT_CODE_TAKEN: { status: 409, type: '/problems/conflict', title: 'Conflict' },
  EMAIL_TAKEN: { status: 409, type: '/problems/conflict', title: 'Conflict' },
  PHONE_TAKEN: { status: 409, type: '/problems/conflict', title: 'Conflict' },
  WRONG_STATE: { status: 409, type: '/problems/wrong-state', title: 'Not Allowed in This State' },
  KEY_EXPIRED: { status: 409, type: '/problems/wrong-state', title: 'Not Allowed in This State' },
  CONCURRENCY_CONFLICT: { status: 409, type: '/problems/concurrency-conflict', title: 'Concurrent Update' },
  IDEMPOTENCY_KEY_IN_FLIGHT: { status: 409, type: '/problems/idempotency-key-in-flight', title: 'Request In Progress' },
  IDEMPOTENCY_KEY_REUSED: { status: 422, type: '/problems/idempotency-key-reused', title: 'Idempotency Key Reused' },
};

/** The one status of each refusal, for the API's problems and the console's pages alike. */
export const statusOfDomainError = (code: DomainErrorCode): number => DOMAIN_PROBLEMS[code].status;

export function problemOfDomainError(error: DomainError): Problem {
  const mapped = DOMAIN_PROBLEMS[error.code];
  const problem: Problem = { ...mapped, detail: error.message };
  if (error.code === 'INVALID_INPUT') problem.errors = [fieldError(error.field ?? 'body', error.message)];
  return problem;
}

/**
 * Errors raised by express and body-parser for a bad request carry a 4xx `status` (and body-parser's a
 * `type`): they are the client's fault, never a 5xx.
 */
function problemOfRequestError(error: { type?: unknown; status?: unknown; statusCode?: unknown }): Problem | null {
  const status = typeof error.status === 'number' ? error.status : error.statusCode;
  if (typeof status !== 'number' || status < 400 || status >= 500) return null;
  return (
    problemOfBodyParserError(error) ??
    (error instanceof URIError
      ? validationProblem(
          [fieldError('url', 'the path has a malformed percent-encoding')],
          'The URL cannot be decoded.',
        ).problem
      : validationProblem([fieldError('body', 'the request could not be read')], 'The request could not be read.')
          .problem)
  );
}

function problemOfBodyParserError(error: { type?: unknown }): Problem | null {
  switch (error.type) {
    case 'entity.parse.failed':
      return validationProblem([fieldError('body', 'the body is not valid JSON')], 'The body is not valid JSON.')
        .problem;
    case 'entity.too.large':
      return {
        type: '/problems/payload-too-large',
        status: 413,
        title: 'Payload Too Large',
        detail: 'The body is larger than this API accepts.',
      };
    case 'encoding.unsupported':
      return validationProblem(
        [fieldError('Content-Encoding', 'bodies are accepted uncompressed only')],
        'Unsupported content encoding.',
      ).problem;
    case 'charset.unsupported':
      return validationProblem(
        [fieldError('Content-Type', 'only UTF-8 JSON is accepted')],
        'Unsupported body encoding.',
      ).problem;
    case 'entity.verify.failed':
      return validationProblem([fieldError('body', 'the body is not valid UTF-8')], 'The body is not valid UTF-8.')
        .problem;
    case 'request.aborted':
    case 'request.size.invalid':
    case 'stream.encoding.set':
      return validationProblem([fieldError('body', 'the body could not be read')], 'The body could not be read.')
        .problem;
    default:
      return null;
  }
}

/** The problem type a response was answered with, as sendProblem left it (for metrics); undefined for a success. */
export const problemTypeOf = (res: Response): string | undefined => res.locals.problemType as string | undefined;

export function sendProblem(res: Response, problem: Problem, headers: Record<string, string> = {}): void {
  res.locals.problemType = problem.type;
  const requestId = res.getHeader('X-Request-Id');
  const body: Problem = typeof requestId === 'string' ? { ...problem, requestId } : problem;
  // A refusal is about this request only: no cache keeps it.
  res
    .status(problem.status)
    .set('Cache-Control', 'no-store')
    .set(headers)
    .type('application/problem+json')
    .send(JSON.stringify(body));
}

export function storeCorruptedProblem(error: StoreCorruptedError, requestId: unknown): Problem {
  return {
    type: '/problems/store-corrupted',
    status: 503,
    title: 'Store Corrupted',
    detail:
      `The service's ${error.store} failed its integrity checks; nothing is served from it until an operator ` +
      `restores it. Request id ${String(requestId)}.`,
  };
}

/**
 * A store that could not be reached, or did not answer in time. When an append was sent but its commit never
 * answered, the request may have taken effect: the problem says so (never "failed"), and a retry with the same
 * Idempotency-Key answers what was recorded, once.
 */
export function storeUnavailableProblem(
  error: EventStoreUnavailableError | ReadStoreUnavailableError,
  requestId: unknown,
): Problem {
  const detail =
    error instanceof EventStoreUnavailableError && error.outcomeUnknown
      ? 'The store did not confirm the write in time: its outcome is unknown (it may have been recorded). Retry ' +
        'with the same Idempotency-Key to learn it; without one, check before creating again. Request id ' +
        `${String(requestId)}.`
      : `The service cannot reach its store; retry later. Request id ${String(requestId)}.`;
  return { type: '/problems/service-unavailable', status: 503, title: 'Service Unavailable', detail };
}

/** The one error middleware: known errors become their problem; anything else is logged and answered generically. */
export function problemHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    if (res.headersSent) return;
    if (error instanceof ProblemError) return sendProblem(res, error.problem, error.headers);
    if (error instanceof DomainError) return sendProblem(res, problemOfDomainError(error));
    const parserProblem = typeof error === 'object' && error !== null ? problemOfRequestError(error) : null;
    if (parserProblem) return sendProblem(res, parserProblem);
    const requestId = res.getHeader('X-Request-Id');
    // Not "retry later": a damaged store is not served until an operator restores it (no Retry-After).
    if (error instanceof StoreCorruptedError) return sendProblem(res, storeCorruptedProblem(error, requestId));
    if (error instanceof EventStoreUnavailableError || error instanceof ReadStoreUnavailableError) {
      logger.error({ err: error, requestId }, 'store unavailable');
      return sendProblem(res, storeUnavailableProblem(error, requestId), { 'Retry-After': '1' });
    }
    logger.error({ err: error, requestId, method: req.method, path: req.path }, 'unexpected error');
    sendProblem(res, {
      type: '/problems/internal-error',
      status: 500,
      title: 'Internal Server Error',
      detail: `Something went wrong on our side. Request id ${String(requestId)}.`,
    });
  };
}
