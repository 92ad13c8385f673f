import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { matchingSecretIndex, parseApiKey } from '../domain/api-key-secrets.ts';
import { acceptedSecretHashes, effectiveStatus, generationOfAccepted } from '../commands/api-keys.ts';
import type { Permission } from '../domain/events.ts';
import { compileAllowList } from '../domain/ip-allowlist.ts';
import type { PartyType } from '../domain/parties.ts';
import type { ApiKeyDirectory, ApiKeyRecord } from '../projections/api-key-directory.ts';
import { accessForbidden, ProblemError, rateLimited, unauthorized } from './problems.ts';
import type { ApiRateLimits } from './rate-limit.ts';

/**
 * Authentication and authorization exactly as the contract's Authentication section:
 *  401 for a missing or malformed header, an unknown key, a wrong secret, a key not (or no longer) active;
 *  (after a rotation the previous secret is right until its overlap ends, and wrong after: the same 401);
 *  403 for a missing permission, a path ID other than the key's party, or a source address not allowed.
 * With rate limits (src/http/rate-limit.ts): 429 once a key exceeds its rate, and once an address has failed
 * authentication too often (a 401, or a 403 for an address outside the key's allow-list). A valid key from an
 * allowed address is never refused for its address's failures: a 256-bit secret cannot be guessed, and a
 * client must not be locked out by a neighbour behind the same NAT.
 */
const BEARER = /^Bearer +([^\s]+) *$/i;

export function authenticatedKey(res: Response): ApiKeyRecord {
  const key = res.locals.apiKey as ApiKeyRecord | undefined;
  if (!key) throw new Error('route used without authenticate()');
  return key;
}

/**
 * Which of the key's secrets the request presented: its generation (src/commands/api-keys.ts), recorded on what
 * the request creates so that an approval knows who held that secret.
 */
export function authenticatedSecretGeneration(res: Response): number {
  const generation = res.locals.apiKeySecretGeneration as number | undefined;
  if (generation === undefined) throw new Error('route used without authenticate()');
  return generation;
}

export function authenticate(
  directory: ApiKeyDirectory,
  clock: () => Date,
  onAuthenticated?: (keyID: string, at: Date) => void,
  limits?: ApiRateLimits,
): RequestHandler {
  // Allow-lists are compiled once per key version, not once per request.
  const allowLists = new WeakMap<ApiKeyRecord, (ip: string) => boolean>();
  const check = (req: Request, res: Response, now: string): ApiKeyRecord => {
    const header = req.headers.authorization;
    if (!header) throw unauthorized('An Authorization header with a Bearer API key is required.', false);
    const token = BEARER.exec(header)?.[1];
    if (!token) throw unauthorized('The Authorization header must be "Bearer <API key>".', true);
    const presented = parseApiKey(token);
    const key = presented ? directory.get(presented.keyID) : undefined;
    // The secret is checked before anything about the key is revealed: against the current hash, and the
    // previous one while a rotation's overlap lasts; every accepted hash is compared, each in constant time.
    const matched = presented && key ? matchingSecretIndex(presented.secret, acceptedSecretHashes(key, now)) : -1;
    if (!key || matched < 0) throw unauthorized('The API key is not valid, or has been revoked.', true);
    res.locals.apiKeySecretGeneration = generationOfAccepted(key, matched);
    const status = effectiveStatus(key, now);
    if (status === 'expired') throw unauthorized('The API key has expired.', true);
    if (status !== 'active' && status !== 'revocation_pending') throw unauthorized('The API key is not active.', true);

    // A key without an allow-list is allowed from anywhere: the client's address (trust proxy's parse of
    // X-Forwarded-For) is worked out only for a key that restricts it.
    if (key.allowedIPs.length === 0) return key;
    let allowed = allowLists.get(key);
    if (!allowed) allowLists.set(key, (allowed = compileAllowList(key.allowedIPs)));
    if (!allowed(req.ip ?? ''))
      throw accessForbidden('Requests from this source address are not allowed for this API key.');
    return key;
  };
  return (req: Request, res: Response, next: NextFunction) => {
    // What a key may read is for its holder alone: no shared proxy or browser cache keeps any answer to it.
    res.setHeader('Cache-Control', 'no-store');
    const now = clock();
    let key: ApiKeyRecord;
    try {
      key = check(req, res, isoTime(now));
    } catch (error) {
      throw limits && error instanceof ProblemError ? countFailure(limits, req.ip ?? '', error) : error;
    }
    const admitted = limits?.admitKey(key.keyID);
    if (admitted) {
      if (!admitted.verdict.allowed) {
        res.locals.apiKey = key; // the request log names the key that was held back
        throw rateLimited(
          'This API key has made more requests than its limit allows; retry after ' +
            `${admitted.headers['Retry-After']} s.`,
          'per-key',
          admitted.headers,
        );
      }
      // Set as they are: express's res.set would look at each name for a content type.
      for (const [name, value] of Object.entries(admitted.headers)) res.setHeader(name, value);
    }
    res.locals.apiKey = key;
    onAuthenticated?.(key.keyID, now);
    next();
  };
}

/**
 * The time as the key's rules compare it (ISO strings), formatted once per millisecond: under load many
 * requests share one, and formatting a date costs more than the rest of the check.
 */
let lastTime = { ms: Number.NaN, iso: '' };
function isoTime(now: Date): string {
  const ms = now.getTime();
  if (ms !== lastTime.ms) lastTime = { ms, iso: now.toISOString() };
  return lastTime.iso;
}

/** A failed authentication counts against its address: the refusal it earned, or 429 once there were too many. */
function countFailure(limits: ApiRateLimits, address: string, refusal: ProblemError): ProblemError {
  const counted = limits.recordFailure(address);
  if (!counted) return refusal;
  if (!counted.verdict.allowed) {
    return rateLimited(
      `Too many failed authentications from this address; retry after ${counted.headers['Retry-After']} s.`,
      'failed-auth',
      counted.headers,
    );
  }
  return new ProblemError(refusal.problem, { ...refusal.headers, ...counted.headers });
}

/** The key must carry the permission and be bound to the party named by the path parameter. */
export function authorize(permission: Permission, partyType: PartyType, idParam: string): RequestHandler {
  return (req, res, next) => {
    const key = authenticatedKey(res);
    if (!key.permissions.includes(permission))
      throw accessForbidden(`This API key lacks the ${permission} permission.`);
    if (key.party.type !== partyType || key.party.id !== req.params[idParam]) {
      throw accessForbidden(`This API key is not bound to this ${partyType}.`);
    }
    next();
  };
}
