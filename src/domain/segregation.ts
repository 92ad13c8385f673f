import { DomainError } from './errors.ts';

/**
 * Who may vouch for an act: the one segregation-of-duties rule of every approval (operations, API keys, their
 * rotations and revocations, webhook endpoints and their rotations). The approver is refused when they are
 *  - the maker of the request (a key, a rotation, a revocation, an operation asked through a channel);
 *  - the credential's original requester (they saw its first secret);
 *  - the holder of the secret that authenticated the act (an operation created with generation g's secret);
 *  - the holder of any secret of the credential still accepted at the approval: the current one, and the
 *    previous one while a rotation's overlap lasts.
 * A secret rotation hands the new secret to its maker, so "who has seen a secret" changes with each rotation:
 * deciding on the requester alone let the maker of a rotation create with the new secret and approve it.
 * Rejections are not vouching (they move nothing): the deciders keep them open to anyone but the request's maker.
 * The key's generation g is the g-th secret handed out: 1 at the approval, one more per rotation.
 */

/** Who has been handed a credential's secrets, and which of them still work at the time of the decision. */
export interface SecretKeepers {
  /** The user who requested the credential. */
  originalRequester: string;
  /** holders[g - 1] was handed generation g's secret: the requester first, then the maker of each rotation. */
  holders: readonly string[];
  /** Whether the previous generation's secret is still accepted (a rotation's overlap, not ended by a departure). */
  previousAccepted: boolean;
}

export interface VouchedAct {
  /** The user who asked for the act, when one did (null for an operation created with an API key). */
  maker: string | null;
  /** The credential the act concerns or came through; null for an operation of a channel without one. */
  keepers: SecretKeepers | null;
  /**
   * The generation of the secret that authenticated the act: a number; null when it was not recorded (an
   * operation created before generations were), in which case every holder counts; absent for acts that no
   * secret authenticated (a decision on a request).
   */
  usedGeneration?: number | null;
}

export type VouchConflict = 'maker' | 'original-requester' | 'used-secret' | 'holds-secret';

/** The users who hold a secret of the credential that is accepted now. */
export function acceptedHolders(keepers: SecretKeepers): string[] {
  const { holders } = keepers;
  const current = holders.at(-1);
  const previous = keepers.previousAccepted && holders.length > 1 ? holders.at(-2) : undefined;
  return [current, previous].filter((holder): holder is string => holder !== undefined);
}

/** Why `approver` may not vouch for the act, or null when they may. The first reason found, most specific first. */
export function vouchConflict(approver: string, act: VouchedAct): VouchConflict | null {
  if (act.maker !== null && approver === act.maker) return 'maker';
  const { keepers } = act;
  if (keepers === null) return null;
  if (act.usedGeneration !== undefined) {
    const used = act.usedGeneration === null ? keepers.holders : [keepers.holders[act.usedGeneration - 1]];
    if (used.includes(approver)) return 'used-secret';
  }
  if (acceptedHolders(keepers).includes(approver)) return 'holds-secret';
  if (approver === keepers.originalRequester) return 'original-requester';
  return null;
}

const REASONS: Record<VouchConflict, (credential: string) => string> = {
  maker: () => 'you requested it: the maker of a request cannot also check it',
  'original-requester': (credential) => `you requested ${credential}, and saw its first secret`,
  'used-secret': (credential) => `you were handed the secret of ${credential} that created it`,
  'holds-secret': (credential) => `you hold a secret of ${credential} that still works`,
};

/**
 * Refuses (SAME_USER) an approver who may not vouch for the act; `action` says what they tried ("approve the
 * rotation", "approve operation op_…") and `credential` names the key or endpoint ("API key key_…").
 */
export function requireMayVouch(approver: string, act: VouchedAct, action: string, credential: string): void {
  const conflict = vouchConflict(approver, act);
  if (conflict !== null)
    throw new DomainError(
      'SAME_USER',
      `cannot ${action}: ${REASONS[conflict](credential)}; another checker must approve it`,
    );
}
