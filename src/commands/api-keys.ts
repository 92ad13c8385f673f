import type { ApiKeyEvent, ApiKeyRequested, Permission, UserRole } from '../domain/events.ts';
import { DomainError } from '../domain/errors.ts';
import { samePartyRef, type PartyRef } from '../domain/parties.ts';
import { requireMayVouch, type SecretKeepers } from '../domain/segregation.ts';
import {
  acceptedSecrets,
  checkRotationDecision,
  checkRotationRequest,
  checkRotationWithdrawal,
  overlapEnd,
  type PendingRotation,
} from '../domain/secret-rotation.ts';
import { assertNever, type Decider } from './decider.ts';

/**
 * The API-key lifecycle of the contract, with maker-checker on both ends:
 *   (none) -request-> pending -approve-> active -request revocation-> revocation_pending -approve-> revoked
 *                     pending -reject-> rejected          revocation_pending -reject revocation-> active
 *                     pending -withdraw (its maker)-> withdrawn
 *   active -(approval time + expiresInDays)-> expired, derived from the clock, never stored.
 * Rejected, withdrawn, revoked and expired are final.
 * An active key's secret is rotated under maker-checker too (src/domain/secret-rotation.ts): a maker requests,
 * another checker approves (a new secret; the previous one works until the overlap ends), rejects, or the maker
 * withdraws. A pending rotation does not change the key's status.
 */

/** The console user acting, as the handler loaded them. */
export interface ActingUser {
  userID: string;
  party: PartyRef | null;
  roles: UserRole[];
}

type KeyTerms = Omit<ApiKeyRequested['data'], 'requestedBy' | 'requestedAt'>;

export type ApiKeyCommand =
  | { type: 'RequestApiKey'; data: KeyTerms & { by: ActingUser; now: string } }
  | { type: 'ApproveApiKey'; data: { keyID: string; by: ActingUser; secretHash: string; now: string } }
  | { type: 'RejectApiKey'; data: { keyID: string; by: ActingUser; reason: string | null; now: string } }
  | { type: 'WithdrawApiKeyRequest'; data: { keyID: string; by: ActingUser; now: string } }
  | { type: 'RequestApiKeyRevocation'; data: { keyID: string; by: ActingUser; reason: string; now: string } }
  | { type: 'ApproveApiKeyRevocation'; data: { keyID: string; by: ActingUser; now: string } }
  | { type: 'RejectApiKeyRevocation'; data: { keyID: string; by: ActingUser; reason: string | null; now: string } }
  /** The user holding the key's secret was disabled or lost the maker role: the key ends with them (user-admin.ts). */
  | { type: 'RetireApiKeyOfDepartedUser'; data: { keyID: string; userID: string; now: string } }
  | { type: 'RequestApiKeyRotation'; data: { keyID: string; by: ActingUser; reason: string; now: string } }
  | {
      type: 'ApproveApiKeyRotation';
      data: { keyID: string; by: ActingUser; secretHash: string; overlapHours: number; now: string };
    }
  | { type: 'RejectApiKeyRotation'; data: { keyID: string; by: ActingUser; reason: string | null; now: string } }
  | { type: 'WithdrawApiKeyRotation'; data: { keyID: string; by: ActingUser; now: string } };

export type ApiKeyStatus = 'pending' | 'active' | 'revocation_pending' | 'rejected' | 'withdrawn' | 'revoked';

export type ApiKeyState =
  | { status: 'none' }
  | (KeyTerms & {
      status: ApiKeyStatus;
      requestedBy: string;
      requestedAt: string;
      approvedBy: string | null;
      expiresAt: string | null;
      secretHash: string | null;
      /** Who holds the secret: the maker who requested the key, then the maker of its last rotation. */
      secretHolder: string;
      /** Who was handed each secret, by generation: [g - 1] holds generation g (empty until approved). */
      secretHolders: string[];
      /**
       * The generations whose secret ended with its holder's departure: what they created may no longer be approved.
       */
      endedSecretGenerations: number[];
      /** The secret a rotation replaced, accepted until `previousValidUntil`. */
      previousSecretHash: string | null;
      previousValidUntil: string | null;
      rotation: PendingRotation | null;
      revocationRequestedBy: string | null;
      revocationReason: string | null;
    });

/** A key that exists: what the key directory holds and what an authenticated request carries. */
export type ApiKeyRecord = Exclude<ApiKeyState, { status: 'none' }>;

/** Who acts when a decision follows from another one (a departure), not from a person's own decision on the key. */
export const SYSTEM_ACTOR = 'system';

export const isExpired = (key: { expiresAt: string | null }, now: string) =>
  key.expiresAt !== null && now >= key.expiresAt;

/** What the contract calls the key's state, with expiry applied at `now`. */
export function effectiveStatus(key: ApiKeyRecord, now: string): ApiKeyStatus | 'expired' {
  return (key.status === 'active' || key.status === 'revocation_pending') && isExpired(key, now)
    ? 'expired'
    : key.status;
}

/** Who has seen the key's secrets, and whether the previous one still works at `now` (src/domain/segregation.ts). */
export function keyKeepers(key: ApiKeyRecord, now: string): SecretKeepers {
  return {
    originalRequester: key.requestedBy,
    holders: key.secretHolders,
    previousAccepted: acceptedSecretHashes(key, now).length > 1,
  };
}

/**
 * The generation of the secret behind the i-th of `acceptedSecretHashes` (0: the current one, 1: the previous
 * one): what an operation created with it records, so that its approval knows who held that secret.
 */
export const generationOfAccepted = (key: Pick<ApiKeyRecord, 'secretHolders'>, index: number): number =>
  key.secretHolders.length - index;

/** The secret hashes that authenticate at `now`: the current one, and the previous one during a rotation's overlap. */
export function acceptedSecretHashes(
  key: Pick<ApiKeyRecord, 'secretHash' | 'previousSecretHash' | 'previousValidUntil'>,
  now: string,
): string[] {
  return acceptedSecrets(
    { current: key.secretHash, previous: key.previousSecretHash, previousValidUntil: key.previousValidUntil },
    now,
  );
}

export function expiryFrom(approvedAt: string, days: number): string {
  return new Date(Date.parse(approvedAt) + days * 86_400_000).toISOString();
}

function requireKey(state: ApiKeyState, keyID: string): ApiKeyRecord {
  if (state.status === 'none') throw new DomainError('NOT_FOUND', `API key ${keyID} does not exist`);
  return state;
}

function requireRole(by: ActingUser, role: UserRole, action: string): void {
  if (!by.roles.includes(role)) throw new DomainError('ROLE_REQUIRED', `${action} needs the ${role} role`);
}

function requireSameParty(by: ActingUser, key: ApiKeyRecord): void {
  if (!samePartyRef(by.party, key.party))
    throw new DomainError('OTHER_PARTY', `API key ${key.keyID} belongs to another party`);
}

function requireStatus(key: ApiKeyRecord, expected: ApiKeyStatus, now: string, action: string): void {
  const actual = effectiveStatus(key, now);
  if (actual === 'expired') throw new DomainError('KEY_EXPIRED', `cannot ${action}: API key ${key.keyID} has expired`);
  if (actual !== expected)
    throw new DomainError('WRONG_STATE', `cannot ${action}: API key ${key.keyID} is ${actual}, not ${expected}`);
}

/**
 * A checker's decision on a maker's request: same party, checker role, and never the maker themself. An
 * approval also needs someone who may vouch for the key (src/domain/segregation.ts): nobody holding a secret of it.
 */
function requireChecker(
  by: ActingUser,
  key: ApiKeyRecord,
  makerUserID: string | null,
  action: string,
  now?: string,
): void {
  requireRole(by, 'checker', action);
  requireSameParty(by, key);
  if (now !== undefined)
    requireMayVouch(by.userID, { maker: makerUserID, keepers: keyKeepers(key, now) }, action, `API key ${key.keyID}`);
  else if (by.userID === makerUserID)
    throw new DomainError('SAME_USER', `cannot ${action}: the maker of a request cannot also check it`);
}

/** Whether the user left holds the key's previous secret, still accepted at `now`. */
export const holdsPreviousSecret = (key: ApiKeyRecord, userID: string, now: string): boolean =>
  key.secretHolders.length > 1 && key.secretHolders.at(-2) === userID && acceptedSecretHashes(key, now).length > 1;

/**
 * Everything of the key that the departed user knows or asked for ends with them; decided again on each retry of
 * the departure, so a key approved, rotated or revoked meanwhile gets what its state needs now. The holder of its
 * current secret: the key ends. The holder of its previous secret: that secret ends (the current one, another
 * maker's, keeps working). The maker of a pending rotation: the request is withdrawn, so no secret goes to them.
 */
function retireOfDepartedUser({ userID, now }: { userID: string; now: string }, state: ApiKeyState): ApiKeyEvent[] {
  if (state.status === 'none') return [];
  const { keyID } = state;
  if (state.secretHolder === userID) {
    if (state.status === 'pending')
      return [
        {
          type: 'ApiKeyRequestWithdrawn',
          data: { keyID, withdrawnBy: SYSTEM_ACTOR, withdrawnAt: now, departedUserID: userID },
        },
      ];
    if (state.status === 'active' || state.status === 'revocation_pending')
      return [
        { type: 'ApiKeyRevoked', data: { keyID, approvedBy: SYSTEM_ACTOR, revokedAt: now, departedUserID: userID } },
      ];
    return [];
  }
  const events: ApiKeyEvent[] = [];
  if (holdsPreviousSecret(state, userID, now))
    events.push({ type: 'ApiKeyPreviousSecretEnded', data: { keyID, endedAt: now, departedUserID: userID } });
  if (state.rotation?.requestedBy === userID) {
    events.push({
      type: 'ApiKeyRotationWithdrawn',
      data: { keyID, withdrawnBy: SYSTEM_ACTOR, withdrawnAt: now, departedUserID: userID },
    });
  }
  return events;
}

function decide(command: ApiKeyCommand, state: ApiKeyState): ApiKeyEvent[] {
  if (command.type === 'RetireApiKeyOfDepartedUser') return retireOfDepartedUser(command.data, state);
  const { data } = command;
  switch (command.type) {
    case 'RequestApiKey': {
      const { by, now, ...terms } = command.data;
      if (state.status !== 'none') throw new DomainError('ALREADY_EXISTS', `API key ${terms.keyID} already exists`);
      requireRole(by, 'maker', 'requesting an API key');
      if (!samePartyRef(by.party, terms.party))
        throw new DomainError('OTHER_PARTY', 'a key can only be requested for the maker’s own party');
      return [{ type: 'ApiKeyRequested', data: { ...terms, requestedBy: by.userID, requestedAt: now } }];
    }
    case 'ApproveApiKey': {
      const key = requireKey(state, data.keyID);
      requireChecker(data.by, key, key.requestedBy, 'approve the key', data.now);
      requireStatus(key, 'pending', data.now, 'approve the key');
      const { secretHash, now } = command.data;
      return [
        {
          type: 'ApiKeyApproved',
          data: {
            keyID: key.keyID,
            approvedBy: data.by.userID,
            approvedAt: now,
            expiresAt: expiryFrom(now, key.expiresInDays),
            secretHash,
          },
        },
      ];
    }
    case 'RejectApiKey': {
      const key = requireKey(state, data.keyID);
      requireChecker(data.by, key, key.requestedBy, 'reject the key');
      requireStatus(key, 'pending', data.now, 'reject the key');
      return [
        {
          type: 'ApiKeyRejected',
          data: { keyID: key.keyID, rejectedBy: data.by.userID, reason: command.data.reason, rejectedAt: data.now },
        },
      ];
    }
    case 'WithdrawApiKeyRequest': {
      const key = requireKey(state, data.keyID);
      requireSameParty(data.by, key);
      // Only the person who asked may take it back; a checker who disagrees rejects it instead.
      if (data.by.userID !== key.requestedBy)
        throw new DomainError('SAME_USER', 'only the maker who requested the key can withdraw the request');
      requireStatus(key, 'pending', data.now, 'withdraw the request');
      return [
        {
          type: 'ApiKeyRequestWithdrawn',
          data: { keyID: key.keyID, withdrawnBy: data.by.userID, withdrawnAt: data.now },
        },
      ];
    }
    case 'RequestApiKeyRevocation': {
      const key = requireKey(state, data.keyID);
      requireRole(data.by, 'maker', 'requesting a revocation');
      requireSameParty(data.by, key);
      requireStatus(key, 'active', data.now, 'request a revocation');
      return [
        {
          type: 'ApiKeyRevocationRequested',
          data: { keyID: key.keyID, requestedBy: data.by.userID, reason: command.data.reason, requestedAt: data.now },
        },
      ];
    }
    case 'ApproveApiKeyRevocation': {
      const key = requireKey(state, data.keyID);
      requireChecker(data.by, key, key.revocationRequestedBy, 'approve the revocation', data.now);
      // An expired key can still be revoked, so that its final state says why it stopped.
      if (key.status !== 'revocation_pending')
        throw new DomainError(
          'WRONG_STATE',
          `cannot approve the revocation: API key ${key.keyID} is ${effectiveStatus(key, data.now)}, not ` +
            'revocation_pending',
        );
      return [{ type: 'ApiKeyRevoked', data: { keyID: key.keyID, approvedBy: data.by.userID, revokedAt: data.now } }];
    }
    case 'RejectApiKeyRevocation': {
      const key = requireKey(state, data.keyID);
      requireChecker(data.by, key, key.revocationRequestedBy, 'reject the revocation');
      if (key.status !== 'revocation_pending')
        throw new DomainError(
          'WRONG_STATE',
          `cannot reject the revocation: API key ${key.keyID} is ${effectiveStatus(key, data.now)}, not ` +
            'revocation_pending',
        );
      return [
        {
          type: 'ApiKeyRevocationRejected',
          data: { keyID: key.keyID, rejectedBy: data.by.userID, reason: command.data.reason, rejectedAt: data.now },
        },
      ];
    }
    case 'RequestApiKeyRotation': {
      const key = requireKey(state, data.keyID);
      requireSameParty(data.by, key);
      checkRotationRequest(data.by, key.rotation, `API key ${key.keyID}`);
      requireStatus(key, 'active', data.now, 'request a rotation');
      return [
        {
          type: 'ApiKeyRotationRequested',
          data: { keyID: key.keyID, requestedBy: data.by.userID, reason: command.data.reason, requestedAt: data.now },
        },
      ];
    }
    case 'ApproveApiKeyRotation': {
      const key = requireKey(state, data.keyID);
      requireSameParty(data.by, key);
      const rotation = checkRotationDecision(data.by, key.rotation, `API key ${key.keyID}`, 'approve');
      requireMayVouch(
        data.by.userID,
        { maker: rotation.requestedBy, keepers: keyKeepers(key, data.now) },
        'approve the rotation',
        `API key ${key.keyID}`,
      );
      // Expired or revoked (or about to be) meanwhile: a new secret for it would be pointless.
      requireStatus(key, 'active', data.now, 'approve the rotation');
      const { secretHash, overlapHours, now } = command.data;
      return [
        {
          type: 'ApiKeyRotated',
          data: {
            keyID: key.keyID,
            approvedBy: data.by.userID,
            rotatedAt: now,
            secretHash,
            previousValidUntil: overlapEnd(now, overlapHours),
            secretHolder: rotation.requestedBy,
          },
        },
      ];
    }
    case 'RejectApiKeyRotation': {
      const key = requireKey(state, data.keyID);
      requireSameParty(data.by, key);
      checkRotationDecision(data.by, key.rotation, `API key ${key.keyID}`, 'reject');
      return [
        {
          type: 'ApiKeyRotationRejected',
          data: { keyID: key.keyID, rejectedBy: data.by.userID, reason: command.data.reason, rejectedAt: data.now },
        },
      ];
    }
    case 'WithdrawApiKeyRotation': {
      const key = requireKey(state, data.keyID);
      requireSameParty(data.by, key);
      checkRotationWithdrawal(data.by, key.rotation, `API key ${key.keyID}`);
      return [
        {
          type: 'ApiKeyRotationWithdrawn',
          data: { keyID: key.keyID, withdrawnBy: data.by.userID, withdrawnAt: data.now },
        },
      ];
    }
    default:
      return assertNever(command);
  }
}

function evolve(state: ApiKeyState, event: ApiKeyEvent): ApiKeyState {
  if (event.type === 'ApiKeyRequested') {
    return {
      ...event.data,
      status: 'pending',
      approvedBy: null,
      expiresAt: null,
      secretHash: null,
      secretHolder: event.data.requestedBy,
      secretHolders: [],
      endedSecretGenerations: [],
      previousSecretHash: null,
      previousValidUntil: null,
      rotation: null,
      revocationRequestedBy: null,
      revocationReason: null,
    };
  }
  if (state.status === 'none') return state; // a stream always starts with ApiKeyRequested
  switch (event.type) {
    case 'ApiKeyApproved':
      return {
        ...state,
        status: 'active',
        approvedBy: event.data.approvedBy,
        expiresAt: event.data.expiresAt,
        secretHash: event.data.secretHash,
        secretHolder: state.requestedBy,
        secretHolders: [state.requestedBy],
      };
    case 'ApiKeyRejected':
      return { ...state, status: 'rejected' };
    case 'ApiKeyRequestWithdrawn':
      return { ...state, status: 'withdrawn' };
    case 'ApiKeyRevocationRequested':
      return {
        ...state,
        status: 'revocation_pending',
        revocationRequestedBy: event.data.requestedBy,
        revocationReason: event.data.reason,
      };
    case 'ApiKeyRevocationRejected':
      return { ...state, status: 'active', revocationRequestedBy: null, revocationReason: null };
    case 'ApiKeyRevoked':
      return {
        ...state,
        status: 'revoked',
        secretHash: null,
        previousSecretHash: null,
        previousValidUntil: null,
        rotation: null,
      };
    case 'ApiKeyRotationRequested':
      return {
        ...state,
        rotation: {
          requestedBy: event.data.requestedBy,
          reason: event.data.reason,
          requestedAt: event.data.requestedAt,
        },
      };
    case 'ApiKeyRotationRejected':
    case 'ApiKeyRotationWithdrawn':
      return { ...state, rotation: null };
    case 'ApiKeyRotated':
      return {
        ...state,
        rotation: null,
        secretHash: event.data.secretHash,
        secretHolder: event.data.secretHolder,
        secretHolders: [...state.secretHolders, event.data.secretHolder],
        previousSecretHash: state.secretHash,
        previousValidUntil: event.data.previousValidUntil,
      };
    case 'ApiKeyPreviousSecretEnded':
      // The previous secret is the generation before the current one.
      return {
        ...state,
        previousSecretHash: null,
        previousValidUntil: null,
        endedSecretGenerations: [...state.endedSecretGenerations, state.secretHolders.length - 1],
      };
    default:
      return assertNever(event);
  }
}

export const apiKeyDecider: Decider<ApiKeyCommand, ApiKeyState, ApiKeyEvent> = {
  initialState: () => ({ status: 'none' }),
  decide,
  evolve,
};

export type { Permission };
