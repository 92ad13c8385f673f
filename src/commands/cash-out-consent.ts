import { randomBytes } from 'node:crypto';
import type { CashOutConsentEvent } from '../domain/events.ts';
import { DomainError } from '../domain/errors.ts';
import {
  CASH_OUT_CODE_TTL_MS,
  hashCashOutCode,
  MAX_LIVE_CASH_OUT_CODES,
  MAX_WRONG_CASH_OUT_CODES,
  newCashOutCode,
  sameCodeHash,
} from '../domain/cash-out-codes.ts';
import { Decimal, formatAmount, parsePositiveAmount } from '../domain/money.ts';
import { normalizePhone } from '../domain/phone.ts';
import { streams } from '../domain/streams.ts';
import type { EventStore } from '../ports/event-store.ts';
import { assertNever, type Decider } from './decider.ts';
import type { PartyLookup } from './party-lookup.ts';
import { runCommand, type CommandContext, type StateCache } from './pipeline.ts';

/**
 * An individual's consent to cash-outs from their wallet (CASH_OUT_CONSENT=individual-code, README): the
 * stream `cashOutConsent-<phone>` holds the one-time codes the individual was issued, as hashes, and their use.
 * A cash-out-fulfillment uses a code in the same atomic append as its OperationRequested (decideCreateOperation),
 * at the revision it read: of two creates presenting one code, one commits and the other is decided again and
 * finds it used. A used code stays used when its operation is later rejected or fails: the individual asks for
 * a new one. Wrong codes are counted on the same stream, so every process agrees on the count (decideUse).
 */
interface LiveCode {
  codeHash: string;
  maxAmount: string | null;
  expiresAt: string;
}

/**
 * The codes neither used nor known to have expired (codes are let go once an event later than their expiry
 * arrives), and the wrong codes presented against them. The count guards against guessing: at
 * MAX_WRONG_CASH_OUT_CODES every live code is void. It starts again when the codes are voided, and when a code
 * is issued to an individual who had none live (the guesses counted were against codes that are gone).
 */
export interface CashOutConsentState {
  codes: Readonly<Record<string, LiveCode>>;
  wrong: number;
}

export type CashOutConsentCommand =
  | {
      type: 'IssueCashOutCode';
      data: { phone: string; codeID: string; codeHash: string; maxAmount: string | null; now: string };
    }
  | {
      type: 'UseCashOutCode';
      /** `presentedHash`: the hash of the code the request carried, null when it carried none. */
      data: { phone: string; presentedHash: string | null; amount: string; operationID: string; now: string };
    };

const live = (state: CashOutConsentState, now: string) =>
  Object.entries(state.codes).filter(([, code]) => Date.parse(code.expiresAt) > Date.parse(now));

const withoutExpired = (codes: Readonly<Record<string, LiveCode>>, at: string) =>
  Object.fromEntries(Object.entries(codes).filter(([, code]) => Date.parse(code.expiresAt) > Date.parse(at)));

function decideIssue(
  data: Extract<CashOutConsentCommand, { type: 'IssueCashOutCode' }>['data'],
  state: CashOutConsentState,
): CashOutConsentEvent[] {
  if (live(state, data.now).length >= MAX_LIVE_CASH_OUT_CODES) {
    throw new DomainError(
      'WRONG_STATE',
      `${data.phone} has ${MAX_LIVE_CASH_OUT_CODES} live cash-out codes already; use one or let one expire ` +
        `(${CASH_OUT_CODE_TTL_MS / 60_000} minutes)`,
    );
  }
  const expiresAt = new Date(Date.parse(data.now) + CASH_OUT_CODE_TTL_MS).toISOString();
  return [
    {
      type: 'CashOutCodeIssued',
      data: {
        phone: data.phone,
        codeID: data.codeID,
        codeHash: data.codeHash,
        maxAmount: data.maxAmount,
        issuedAt: data.now,
        expiresAt,
      },
    },
  ];
}

const WRONG_CODE = 'authorizationCode is not a live cash-out code of this individual (wrong, expired or already used)';

/**
 * A code that matches a live one is used. A wrong code against live codes is not thrown but counted: the events
 * say so (WrongCashOutCodePresented, and CashOutCodesVoided with the last one allowed), and the create appends
 * them, at the revision it read, instead of the operation, then refuses (consentRefusal). Counting at that
 * revision is what bounds parallel guesses: of several decided on one state, one is appended and the others
 * are decided again on the newer count. A missing code, or a code when none is live, guesses at nothing and is
 * refused without a count.
 */
function decideUse(
  data: Extract<CashOutConsentCommand, { type: 'UseCashOutCode' }>['data'],
  state: CashOutConsentState,
): CashOutConsentEvent[] {
  if (data.presentedHash === null) {
    throw new DomainError(
      'CASH_OUT_NOT_AUTHORIZED',
      "this platform requires the individual's consent to a cash-out: authorizationCode, the one-time code the " +
        'individual gets in their wallet app, is required',
    );
  }
  const codes = live(state, data.now);
  // Every live code is compared, each in constant time, and none is skipped once one matched.
  let match: [string, LiveCode] | undefined;
  for (const entry of codes) if (sameCodeHash(entry[1].codeHash, data.presentedHash) && !match) match = entry;
  if (!match) {
    if (codes.length === 0) throw new DomainError('CASH_OUT_NOT_AUTHORIZED', WRONG_CODE);
    const wrongCount = state.wrong + 1;
    const counted: CashOutConsentEvent = {
      type: 'WrongCashOutCodePresented',
      data: { phone: data.phone, operationID: data.operationID, wrongCount, presentedAt: data.now },
    };
    if (wrongCount < MAX_WRONG_CASH_OUT_CODES) return [counted];
    return [
      counted,
      {
        type: 'CashOutCodesVoided',
        data: { phone: data.phone, codeIDs: codes.map(([codeID]) => codeID), voidedAt: data.now },
      },
    ];
  }
  const [codeID, code] = match;
  if (code.maxAmount !== null && new Decimal(data.amount).gt(code.maxAmount)) {
    throw new DomainError(
      'CASH_OUT_NOT_AUTHORIZED',
      `the individual authorized at most ${code.maxAmount} with this code`,
    );
  }
  return [
    { type: 'CashOutCodeUsed', data: { phone: data.phone, codeID, operationID: data.operationID, usedAt: data.now } },
  ];
}

/** The refusal a UseCashOutCode decision carries when it counted a wrong code instead of using one, else null. */
export function consentRefusal(events: readonly CashOutConsentEvent[]): DomainError | null {
  if (!events.some((event) => event.type === 'WrongCashOutCodePresented')) return null;
  const voided = events.some((event) => event.type === 'CashOutCodesVoided');
  const detail = voided
    ? `${WRONG_CODE}; after ${MAX_WRONG_CASH_OUT_CODES} wrong codes every live code of this individual is void: ` +
      'they ask for a new one'
    : WRONG_CODE;
  return new DomainError('CASH_OUT_NOT_AUTHORIZED', detail);
}

export const cashOutConsentDecider: Decider<CashOutConsentCommand, CashOutConsentState, CashOutConsentEvent> = {
  initialState: () => ({ codes: {}, wrong: 0 }),
  evolve(state, event) {
    switch (event.type) {
      case 'CashOutCodeIssued': {
        const { codeID, codeHash, maxAmount, expiresAt, issuedAt } = event.data;
        const before = withoutExpired(state.codes, issuedAt);
        return {
          codes: { ...before, [codeID]: { codeHash, maxAmount, expiresAt } },
          wrong: Object.keys(before).length === 0 ? 0 : state.wrong,
        };
      }
      case 'CashOutCodeUsed': {
        const { [event.data.codeID]: _used, ...rest } = state.codes;
        return { codes: withoutExpired(rest, event.data.usedAt), wrong: state.wrong };
      }
      case 'WrongCashOutCodePresented':
        return { codes: state.codes, wrong: event.data.wrongCount };
      case 'CashOutCodesVoided': {
        const codes = Object.fromEntries(
          Object.entries(state.codes).filter(([codeID]) => !event.data.codeIDs.includes(codeID)),
        );
        return { codes: withoutExpired(codes, event.data.voidedAt), wrong: 0 };
      }
      default:
        return assertNever(event);
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'IssueCashOutCode':
        return decideIssue(command.data, state);
      case 'UseCashOutCode':
        return decideUse(command.data, state);
      default:
        return assertNever(command);
    }
  },
};

export interface CashOutCodeDeps {
  store: EventStore;
  cache?: StateCache;
  lookup: PartyLookup;
  clock: () => Date;
  assetScale: number;
  /** The key the codes are hashed under (SECRETS_KEY, or the embedded key file). */
  secretsKey: Buffer;
}

/**
 * The individual's wallet app asks for a code (here the CLI stands in for it): a registered individual gets
 * a fresh code, valid once for ten minutes, for at most `maxAmount` when given. The code is returned to be
 * shown to the individual, and stored only hashed.
 */
export async function issueCashOutCode(
  deps: CashOutCodeDeps,
  input: { phone: unknown; maxAmount?: unknown },
  context: CommandContext,
): Promise<{ phone: string; code: string; maxAmount: string | null; expiresAt: string }> {
  const phone = normalizePhone('phone', input.phone);
  const maxAmount =
    input.maxAmount === undefined
      ? null
      : formatAmount(parsePositiveAmount('amount', input.maxAmount, deps.assetScale), deps.assetScale);
  if (!(await deps.lookup.individual(phone)))
    throw new DomainError('NOT_FOUND', `${phone} is not a registered individual wallet`, 'phone');
  const code = newCashOutCode();
  const { events } = await runCommand(deps, {
    stream: streams.cashOutConsent(phone),
    decider: cashOutConsentDecider,
    command: {
      type: 'IssueCashOutCode',
      data: {
        phone,
        codeID: `coc_${randomBytes(12).toString('base64url')}`,
        codeHash: hashCashOutCode(deps.secretsKey, phone, code),
        maxAmount,
        now: deps.clock().toISOString(),
      },
    },
    context,
  });
  const issued = events[0]!;
  return { phone, code, maxAmount, expiresAt: issued.type === 'CashOutCodeIssued' ? issued.data.expiresAt : '' };
}
