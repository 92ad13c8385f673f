import { DomainError } from './errors.ts';
import type { UserRole } from './events.ts';

/**
 * Rotating a secret under maker-checker, the same for API keys and webhook signing secrets: a maker of the
 * party asks (with a reason), a checker of the party who is not that maker approves or rejects, and the maker
 * may withdraw; one rotation waits at a time. On approval a new secret replaces the current one and the
 * previous one keeps working until `approvedAt + overlap`, so that clients can switch without an outage; after
 * that only the new one works. The deciders of src/commands/api-keys.ts and webhook-endpoints.ts keep their own
 * party and lifecycle checks, and call these for everything about the rotation itself.
 */
export const DEFAULT_ROTATION_OVERLAP_HOURS = 24;
export const MAX_ROTATION_OVERLAP_HOURS = 168;

/** A maker's request to rotate, waiting for a checker. */
export interface PendingRotation {
  requestedBy: string;
  reason: string;
  requestedAt: string;
}

/** The secrets of a key or endpoint: the current one, and the one it replaced while their overlap lasts. */
export interface RotatingSecrets<Secret> {
  current: Secret | null;
  previous: Secret | null;
  /** ISO 8601; the previous secret is accepted while `now` is before it. */
  previousValidUntil: string | null;
}

/** Who acts, as the deciders know them. */
export interface RotationActor {
  userID: string;
  roles: readonly UserRole[];
}

/** The secrets that work at `now`: the current one first, then the previous one while the overlap lasts. */
export function acceptedSecrets<Secret>(secrets: RotatingSecrets<Secret>, now: string): Secret[] {
  const accepted: Secret[] = [];
  if (secrets.current !== null) accepted.push(secrets.current);
  if (
    secrets.previous !== null &&
    secrets.previousValidUntil !== null &&
    Date.parse(now) < Date.parse(secrets.previousValidUntil)
  )
    accepted.push(secrets.previous);
  return accepted;
}

/** When the previous secret stops working after an approval at `approvedAt`. */
export function overlapEnd(approvedAt: string, overlapHours: number): string {
  if (!Number.isFinite(overlapHours) || overlapHours < 0 || overlapHours > MAX_ROTATION_OVERLAP_HOURS) {
    throw new RangeError(`the rotation overlap must be 0 to ${MAX_ROTATION_OVERLAP_HOURS} hours`);
  }
  return new Date(Date.parse(approvedAt) + overlapHours * 3_600_000).toISOString();
}

/** A maker asks; refused when a rotation already waits (`what`: "API key key_…", "webhook endpoint whe_…"). */
export function checkRotationRequest(by: RotationActor, pending: PendingRotation | null, what: string): void {
  if (!by.roles.includes('maker'))
    throw new DomainError('ROLE_REQUIRED', 'requesting a secret rotation needs the maker role');
  if (pending !== null) throw new DomainError('WRONG_STATE', `a rotation of ${what} is already pending`);
}

/** A checker decides on the pending rotation: never the maker who asked for it. */
export function checkRotationDecision(
  by: RotationActor,
  pending: PendingRotation | null,
  what: string,
  action: 'approve' | 'reject',
): PendingRotation {
  if (!by.roles.includes('checker'))
    throw new DomainError(
      'ROLE_REQUIRED',
      `${action === 'approve' ? 'approving' : 'rejecting'} a secret rotation needs the checker role`,
    );
  if (pending === null)
    throw new DomainError('WRONG_STATE', `cannot ${action} the rotation: no rotation of ${what} is pending`);
  if (by.userID === pending.requestedBy)
    throw new DomainError('SAME_USER', `cannot ${action} the rotation: the maker of a request cannot also check it`);
  return pending;
}

/** Only the maker who asked takes the request back; a checker who disagrees rejects it instead. */
export function checkRotationWithdrawal(
  by: RotationActor,
  pending: PendingRotation | null,
  what: string,
): PendingRotation {
  if (pending === null)
    throw new DomainError('WRONG_STATE', `cannot withdraw the rotation: no rotation of ${what} is pending`);
  if (by.userID !== pending.requestedBy)
    throw new DomainError('SAME_USER', 'only the maker who requested the rotation can withdraw it');
  return pending;
}
