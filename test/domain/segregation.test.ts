import { describe, expect, it } from 'vitest';
import { DomainError } from '../../src/domain/errors.ts';
import {
  acceptedHolders,
  requireMayVouch,
  vouchConflict,
  type SecretKeepers,
  type VouchedAct,
} from '../../src/domain/segregation.ts';

/**
 * Who may vouch, as a table: u-req requested the key (generation 1), u-rot1 asked for its first rotation
 * (generation 2), u-rot2 for its second (generation 3, current). u-chk never held a secret of it.
 */
const holders = ['u-req', 'u-rot1', 'u-rot2'];
const inOverlap: SecretKeepers = { originalRequester: 'u-req', holders, previousAccepted: true };
const afterOverlap: SecretKeepers = { ...inOverlap, previousAccepted: false };
const operation = (keepers: SecretKeepers, usedGeneration: number | null): VouchedAct => ({
  maker: null,
  keepers,
  usedGeneration,
});

describe('who may vouch for an act', () => {
  it.each([
    // approver, act, the conflict
    ['u-rot2', operation(inOverlap, 3), 'used-secret'],
    ['u-rot2', operation(afterOverlap, 1), 'holds-secret'],
    ['u-rot1', operation(inOverlap, 3), 'holds-secret'],
    ['u-rot1', operation(afterOverlap, 3), null],
    ['u-rot1', operation(afterOverlap, 2), 'used-secret'],
    ['u-req', operation(afterOverlap, 3), 'original-requester'],
    ['u-req', operation(inOverlap, 1), 'used-secret'],
    ['u-chk', operation(inOverlap, 2), null],
    ['u-rot1', operation(afterOverlap, null), 'used-secret'],
    ['u-chk', operation(afterOverlap, null), null],
    ['u-asker', { maker: 'u-asker', keepers: null }, 'maker'],
    ['u-chk', { maker: 'u-asker', keepers: null }, null],
    ['u-rot1', { maker: 'u-asker', keepers: inOverlap }, 'holds-secret'],
    ['u-rot1', { maker: 'u-asker', keepers: afterOverlap }, null],
    ['u-req', { maker: 'u-asker', keepers: afterOverlap }, 'original-requester'],
    [
      'u-req',
      { maker: 'u-req', keepers: { originalRequester: 'u-req', holders: [], previousAccepted: false } },
      'maker',
    ],
  ] as const)('when %s approves %j, then the conflict is %s', (approver, act, conflict) => {
    expect(vouchConflict(approver, act)).toBe(conflict);
  });

  it('when the previous secret is accepted, then both holders hold a working secret; otherwise only the current one', () => {
    expect(acceptedHolders(inOverlap)).toEqual(['u-rot2', 'u-rot1']);
    expect(acceptedHolders(afterOverlap)).toEqual(['u-rot2']);
    expect(acceptedHolders({ originalRequester: 'u-req', holders: [], previousAccepted: false })).toEqual([]);
  });

  it('when one may not vouch, then the refusal is SAME_USER and says what and why', () => {
    const refusal = (() => {
      try {
        requireMayVouch('u-rot2', operation(inOverlap, 3), 'approve operation op_1', 'API key key_1');
      } catch (error) {
        return error;
      }
    })();
    expect(refusal).toBeInstanceOf(DomainError);
    expect((refusal as DomainError).code).toBe('SAME_USER');
    expect((refusal as DomainError).message).toBe(
      'cannot approve operation op_1: you were handed the secret of API key key_1 that created it; another checker must approve it',
    );
    expect(() =>
      requireMayVouch('u-chk', operation(inOverlap, 3), 'approve operation op_1', 'API key key_1'),
    ).not.toThrow();
  });
});
