import { describe, expect, it } from 'vitest';
import {
  cashOutConsentDecider,
  consentRefusal,
  type CashOutConsentCommand,
} from '../../src/commands/cash-out-consent.ts';
import {
  CASH_OUT_CODE_TTL_MS,
  MAX_LIVE_CASH_OUT_CODES,
  MAX_WRONG_CASH_OUT_CODES,
  hashCashOutCode,
  newCashOutCode,
  sameCodeHash,
} from '../../src/domain/cash-out-codes.ts';
import type {
  CashOutCodeIssued,
  CashOutCodesVoided,
  CashOutCodeUsed,
  WrongCashOutCodePresented,
} from '../../src/domain/events.ts';
import { deciderSpec } from '../support/decider-spec.ts';

/**
 * The individual's consent to a cash-out (CASH_OUT_CONSENT=individual-code), pure: a one-time code is issued
 * to the individual (only its keyed hash is kept), and a cash-out-fulfillment uses it once, before it expires,
 * up to the amount it was issued for.
 */

const PHONE = '+2348123456781';
const NOW = '2026-03-10T09:00:00.000Z';
const at = (ms: number) => new Date(Date.parse(NOW) + ms).toISOString();
const KEY = Buffer.alloc(32, 7);
const HASH = hashCashOutCode(KEY, PHONE, '12345678');
const OTHER_HASH = hashCashOutCode(KEY, PHONE, '87654321');

const issued = (codeID = 'coc_1', change: Partial<CashOutCodeIssued['data']> = {}): CashOutCodeIssued => ({
  type: 'CashOutCodeIssued',
  data: {
    phone: PHONE,
    codeID,
    codeHash: HASH,
    maxAmount: null,
    issuedAt: NOW,
    expiresAt: at(CASH_OUT_CODE_TTL_MS),
    ...change,
  },
});
const used = (codeID = 'coc_1', usedAt = at(60_000), operationID = 'op_first'): CashOutCodeUsed => ({
  type: 'CashOutCodeUsed',
  data: { phone: PHONE, codeID, operationID, usedAt },
});

const wrong = (wrongCount: number, presentedAt = at(60_000), operationID = 'op_new'): WrongCashOutCodePresented => ({
  type: 'WrongCashOutCodePresented',
  data: { phone: PHONE, operationID, wrongCount, presentedAt },
});
const voided = (codeIDs: string[], voidedAt = at(60_000)): CashOutCodesVoided => ({
  type: 'CashOutCodesVoided',
  data: { phone: PHONE, codeIDs, voidedAt },
});
/** `count` wrong codes presented, one after the other. */
const wrongs = (count: number) => Array.from({ length: count }, (_, i) => wrong(i + 1, at(1000 + i), `op_w${i}`));

const issue = (
  change: Partial<Extract<CashOutConsentCommand, { type: 'IssueCashOutCode' }>['data']> = {},
): CashOutConsentCommand => ({
  type: 'IssueCashOutCode',
  data: { phone: PHONE, codeID: 'coc_1', codeHash: HASH, maxAmount: null, now: NOW, ...change },
});
const use = (
  change: Partial<Extract<CashOutConsentCommand, { type: 'UseCashOutCode' }>['data']> = {},
): CashOutConsentCommand => ({
  type: 'UseCashOutCode',
  data: { phone: PHONE, presentedHash: HASH, amount: '100.00', operationID: 'op_new', now: at(60_000), ...change },
});

describe('the cash-out consent of an individual', () => {
  const spec = deciderSpec(cashOutConsentDecider);

  describe('issuing a code', () => {
    it('when a code is issued, then CashOutCodeIssued keeps its hash (never the code), its bound and when it expires, ten minutes on', () => {
      spec([])
        .when(issue({ maxAmount: '250.00' }))
        .then([issued('coc_1', { maxAmount: '250.00' })]);
    });

    it(`given ${MAX_LIVE_CASH_OUT_CODES} live codes, when another is issued, then it is refused WRONG_STATE (few live codes, few targets for guesses)`, () => {
      const live = Array.from({ length: MAX_LIVE_CASH_OUT_CODES }, (_, i) => issued(`coc_${i}`));
      spec(live)
        .when(issue({ codeID: 'coc_new' }))
        .thenRefused('WRONG_STATE', /live cash-out codes/);
    });

    it(`given ${MAX_LIVE_CASH_OUT_CODES} codes, used or expired, when another is issued, then it is issued`, () => {
      const past = [issued('coc_0'), used('coc_0'), issued('coc_1'), issued('coc_2', { expiresAt: at(30_000) })];
      spec(past)
        .when(issue({ codeID: 'coc_new', now: at(60_000) }))
        .then([issued('coc_new', { issuedAt: at(60_000), expiresAt: at(60_000 + CASH_OUT_CODE_TTL_MS) })]);
    });
  });

  describe('using a code for a cash-out-fulfillment', () => {
    it('given a live code, when the cash-out presents it, then CashOutCodeUsed names the code and the operation', () => {
      spec([issued()])
        .when(use())
        .then([used('coc_1', at(60_000), 'op_new')]);
    });

    it('given a live code, when the cash-out presents no code, then it is refused CASH_OUT_NOT_AUTHORIZED saying the code is required', () => {
      spec([issued()])
        .when(use({ presentedHash: null }))
        .thenRefused('CASH_OUT_NOT_AUTHORIZED', /authorizationCode.*is required/);
    });

    it('given a live code, when the cash-out presents another code, then the wrong code is counted (the create refuses CASH_OUT_NOT_AUTHORIZED once it is appended)', () => {
      spec([issued()])
        .when(use({ presentedHash: OTHER_HASH }))
        .then([wrong(1)]);
      expect(consentRefusal([wrong(1)])).toMatchObject({
        code: 'CASH_OUT_NOT_AUTHORIZED',
        message: expect.stringMatching(/not a live cash-out code of this individual/),
      });
      expect(consentRefusal([used()])).toBeNull();
    });

    it('given no code at all, when the cash-out presents one, then it is refused CASH_OUT_NOT_AUTHORIZED', () => {
      spec([])
        .when(use())
        .thenRefused('CASH_OUT_NOT_AUTHORIZED', /not a live cash-out code/);
    });

    it('given a code that expired, when the cash-out presents it, then it is refused CASH_OUT_NOT_AUTHORIZED', () => {
      spec([issued()])
        .when(use({ now: at(CASH_OUT_CODE_TTL_MS) }))
        .thenRefused('CASH_OUT_NOT_AUTHORIZED', /not a live cash-out code/);
    });

    it('given a code already used, when a cash-out presents it again, then it is refused CASH_OUT_NOT_AUTHORIZED', () => {
      spec([issued(), used()])
        .when(use({ operationID: 'op_second' }))
        .thenRefused('CASH_OUT_NOT_AUTHORIZED', /not a live cash-out code/);
    });

    it('given a code for at most 100.00, when the cash-out is for 100.01, then it is refused CASH_OUT_NOT_AUTHORIZED naming the bound; for 100.00 it is used', () => {
      spec([issued('coc_1', { maxAmount: '100.00' })])
        .when(use({ amount: '100.01' }))
        .thenRefused('CASH_OUT_NOT_AUTHORIZED', /at most 100\.00/);
      spec([issued('coc_1', { maxAmount: '100.00' })])
        .when(use({ amount: '100.00' }))
        .then([used('coc_1', at(60_000), 'op_new')]);
    });

    it('given two live codes, when the cash-out presents the second, then the second is used and the first stays live', () => {
      const second = issued('coc_2', { codeHash: OTHER_HASH });
      spec([issued(), second])
        .when(use({ presentedHash: OTHER_HASH }))
        .then([used('coc_2', at(60_000), 'op_new')]);
      spec([issued(), second, used('coc_2')])
        .when(use())
        .then([used('coc_1', at(60_000), 'op_new')]);
    });
  });

  describe('wrong codes', () => {
    it(`given ${MAX_WRONG_CASH_OUT_CODES - 1} wrong codes against two live codes, when another wrong one comes, then it is counted and every live code is voided`, () => {
      const codes = [issued('coc_1'), issued('coc_2', { codeHash: OTHER_HASH })];
      spec([...codes, ...wrongs(MAX_WRONG_CASH_OUT_CODES - 1)])
        .when(use({ presentedHash: hashCashOutCode(KEY, PHONE, '00000000') }))
        .then([wrong(MAX_WRONG_CASH_OUT_CODES), voided(['coc_1', 'coc_2'])]);
      expect(consentRefusal([wrong(MAX_WRONG_CASH_OUT_CODES), voided(['coc_1'])])?.message).toMatch(
        /every live code of this individual is void: they ask for a new one/,
      );
    });

    it(`given ${MAX_WRONG_CASH_OUT_CODES - 1} wrong codes, when the right code comes, then it is used (the limit is reached only by a wrong one)`, () => {
      spec([issued(), ...wrongs(MAX_WRONG_CASH_OUT_CODES - 1)])
        .when(use())
        .then([used('coc_1', at(60_000), 'op_new')]);
    });

    it('given codes voided after wrong codes, when the right code comes, then it is refused as not live (and not counted: nothing is live to guess at)', () => {
      spec([issued(), ...wrongs(MAX_WRONG_CASH_OUT_CODES), voided(['coc_1'])])
        .when(use())
        .thenRefused('CASH_OUT_NOT_AUTHORIZED', /not a live cash-out code/);
    });

    it('given codes voided, when a new code is issued, then it gets the whole count of tries again', () => {
      const fresh = issued('coc_new', { codeHash: OTHER_HASH, issuedAt: at(30_000) });
      spec([issued(), ...wrongs(MAX_WRONG_CASH_OUT_CODES), voided(['coc_1']), fresh])
        .when(use({ presentedHash: HASH }))
        .then([wrong(1)]);
      spec([issued(), ...wrongs(MAX_WRONG_CASH_OUT_CODES), voided(['coc_1']), fresh])
        .when(use({ presentedHash: OTHER_HASH }))
        .then([used('coc_new', at(60_000), 'op_new')]);
    });

    it('given wrong codes against a code that is still live, when another code is issued beside it, then the count goes on (both codes share it)', () => {
      const second = issued('coc_2', { codeHash: OTHER_HASH, issuedAt: at(30_000) });
      spec([issued(), ...wrongs(2), second])
        .when(use({ presentedHash: hashCashOutCode(KEY, PHONE, '00000000') }))
        .then([wrong(3)]);
    });

    it('given wrong codes against codes that all expired, when a code is issued, then the count starts again', () => {
      const later = at(CASH_OUT_CODE_TTL_MS + 1000);
      const fresh = issued('coc_new', { issuedAt: later, expiresAt: at(2 * CASH_OUT_CODE_TTL_MS + 1000) });
      spec([issued(), ...wrongs(4), fresh])
        .when(use({ presentedHash: OTHER_HASH, now: at(CASH_OUT_CODE_TTL_MS + 2000) }))
        .then([wrong(1, at(CASH_OUT_CODE_TTL_MS + 2000))]);
    });

    it('given no live code, when a wrong code comes, then it is refused without a count', () => {
      spec([])
        .when(use({ presentedHash: OTHER_HASH }))
        .thenRefused('CASH_OUT_NOT_AUTHORIZED', /not a live cash-out code/);
    });
  });

  describe('the state', () => {
    it('when codes expire, then the state lets them go at the next event (it stays small)', () => {
      const state = [
        issued('coc_0', { expiresAt: at(1000) }),
        issued('coc_1', { issuedAt: at(2000), expiresAt: at(2000 + CASH_OUT_CODE_TTL_MS) }),
      ].reduce(cashOutConsentDecider.evolve, cashOutConsentDecider.initialState());
      expect(Object.keys(state.codes)).toEqual(['coc_1']);
    });
  });
});

describe('cash-out codes', () => {
  it('when a code is made, then it is 8 digits, and codes differ', () => {
    const codes = new Set(Array.from({ length: 50 }, () => newCashOutCode()));
    for (const code of codes) expect(code).toMatch(/^\d{8}$/);
    expect(codes.size).toBeGreaterThan(45);
  });

  it('when a code is hashed, then the hash depends on the key and the individual, and never contains the code', () => {
    expect(HASH).toMatch(/^[0-9a-f]{64}$/);
    expect(HASH).not.toContain('12345678');
    expect(hashCashOutCode(Buffer.alloc(32, 8), PHONE, '12345678')).not.toBe(HASH);
    expect(hashCashOutCode(KEY, '+2348123456782', '12345678')).not.toBe(HASH);
    expect(hashCashOutCode(KEY, PHONE, '12345678')).toBe(HASH);
  });

  it('when hashes are compared, then only equal ones are the same (malformed ones never are)', () => {
    expect(sameCodeHash(HASH, HASH)).toBe(true);
    expect(sameCodeHash(HASH, OTHER_HASH)).toBe(false);
    expect(sameCodeHash(HASH, 'abc')).toBe(false);
  });
});
