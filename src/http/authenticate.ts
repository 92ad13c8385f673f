import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { parseApiKey, secretMatches } from '../domain/api-key-secrets.ts';
import { effectiveStatus } from '../commands/api-keys.ts';
import type { Permission } from '../domain/events.ts';
import { compileAllowList } from '../domain/ip-allowlist.ts';
import type { PartyType } from '../domain/parties.ts';
import type { ApiKeyDirectory, ApiKeyRecord } from '../projections/api-key-directory.ts';
import { accessForbidden, unauthorized } from './problems.ts';

/**
 * Authentication and authorization exactly as the contract's Authentication section:
 *  401 for a missing or malformed header, an unknown key, a wrong secret, a key not (or no longer) active;
 *  403 for a missing permission, a path ID other than the key's party, or a source address not allowed.
 */
const BEARER = /^Bearer +([^\s]+) *$/i;

export function authenticatedKey(res: Response): ApiKeyRecord {
  const key = res.locals.apiKey as ApiKeyRecord | undefined;
  if (!key) throw new Error('route used without authenticate()');
  return key;
}

export function authenticate(directory: ApiKeyDirectory, clock: () => Date, onAuthenticated?: (keyID: string, at: Date) => void): RequestHandler {
  // Allow-lists are compiled once per key version, not once per request.
  const allowLists = new WeakMap<ApiKeyRecord, (ip: string) => boolean>();
  return (req: Request, res: Response, next: NextFunction) => {
    const header = req.get('authorization');
    if (!header) throw unauthorized('An Authorization header with a Bearer API key is required.', false);
    const token = BEARER.exec(header)?.[1];
    if (!token) throw unauthorized('The Authorization header must be "Bearer <API key>".', true);
    const presented = parseApiKey(token);
    const key = presented ? directory.get(presented.keyID) : undefined;
    // The secret is checked before anything about the key is revealed.
    if (!presented || !key || key.secretHash === null || !secretMatches(presented.secret, key.secretHash)) {
      throw unauthorized('The API key is not valid, or has been revoked.', true);
    }
    const now = clock();
    const status = effectiveStatus(key, now.toISOString());
    if (status === 'expired') throw unauthorized('The API key has expired.', true);
    if (status !== 'active' && status !== 'revocation_pending') throw unauthorized('The API key is not active.', true);

    let allowed = allowLists.get(key);
    if (!allowed) allowLists.set(key, (allowed = compileAllowList(key.allowedIPs)));
    if (!allowed(req.ip ?? '')) throw accessForbidden('Requests from this source address are not allowed for this API key.');
    res.locals.apiKey = key;
    onAuthenticated?.(key.keyID, now);
    next();
  };
}

/** The key must carry the permission and be bound to the party named by the path parameter. */
export function authorize(permission: Permission, partyType: PartyType, idParam: string): RequestHandler {
  return (req, res, next) => {
    const key = authenticatedKey(res);
    if (!key.permissions.includes(permission)) throw accessForbidden(`This API key lacks the ${permission} permission.`);
    if (key.party.type !== partyType || key.party.id !== req.params[idParam]) {
      throw accessForbidden(`This API key is not bound to this ${partyType}.`);
    }
    next();
  };
}
