import type { EventStore, RecordedEvent } from '../ports/event-store.ts';
import { ISSUANCE_ADDRESS, type Ledger, type LedgerLeg, type LedgerTransaction } from '../ports/ledger.ts';
import { fromUnits, toUnits } from './amounts.ts';
import { GENESIS_HASH, eventHash } from './hash-chain.ts';
import { type HistorySealedData, type RecordedSeal, SEALS_STREAM, SealChecker } from './seals.ts';

/**
 * `audit verify`: one pass over the whole history in position order (readAll pages), then one pass over
 * the ledger. Memory holds what is per stream (its last revision and hash, an operation's compact state),
 * per wallet (its balance), per user and per key; the events themselves only a page at a time.
 *
 * Checks, each problem named by `check`:
 *  - hash: an event's content no longer matches the hash it carries (altered).
 *  - chain: per stream, revisions follow 0, 1, 2... in $all order and each previousHash is the hash of the
 *    event before it (removed, reordered or inserted events; a hash removed).
 *  - seal: each seal's digest recomputed from the events it covers (seals.ts), and the seals' own chain.
 *  - operation: the state machine (requested -> approved -> claimed -> submitted -> completed, or rejected /
 *    failed; no approval without request, no completion without approval and claim, no double completion,
 *    nothing after a rejection or a failure), and the key that created an operation was active then.
 *  - maker-checker: approvals and rejections of keys and operations by a user other than the requester,
 *    with the checker role (roles from UserAdded) and of the same party; key requests by makers; channel
 *    operations (issue, individual-payment) approved by their own requesting actor.
 *  - wallet: no wallet but platform:issuance ever below zero (WalletCredited/WalletDebited folded).
 *  - supply: the write side's money moves only with a completed operation, in its completion's append, as
 *    it requested (payer -amount-fee, payee +amount, platform:fees +fee), and after each such append the
 *    sum of every wallet's balance, platform:issuance included, is 0: total supply (every wallet but the
 *    issuing account) = issued (debits of platform:issuance) - redeemed (credits to it), at every step.
 *  - ledger: every completed operation has exactly one ledger transaction with its operation id, legs
 *    (payer->payee amount, payer->platform:fees fee when > 0), blockchainID and sequence number, and no
 *    ledger transaction lacks a completed operation.
 *  - ledger-chain: sequence numbers 1, 2, 3... and each blockchainID = chainID(previous id, content), with
 *    the ledger's own chainID given by the caller (the embedded ledger's for `audit verify`).
 */
export type AuditCheck = 'hash' | 'chain' | 'seal' | 'operation' | 'maker-checker' | 'wallet' | 'supply' | 'ledger' | 'ledger-chain';

export interface AuditProblem {
  check: AuditCheck;
  position?: number;
  stream?: string;
  operationID?: string;
  detail: string;
}

export interface AuditReport {
  ok: boolean;
  checked: {
    events: number;
    streams: number;
    operations: number;
    wallets: number;
    ledgerTransactions: number;
    users: number;
    apiKeys: number;
    seals: number;
    sealedEvents: number;
    /** Events after the last seal: only the per-stream chains cover them so far. */
    unsealedEvents: number;
    /** Events stored before the hash chain existed (they are still sealed and linked to by their successor). */
    unhashedEvents: number;
    headPosition: number;
  };
  supply: { definition: string; issued: string; redeemed: string; supply: string };
  /** The smallest position named by a hash, chain or seal problem: where the history was first changed. */
  firstBrokenPosition: number | null;
  /**
   * Operations whose ledger transaction exists while their completion is not in the history read (executions
   * in flight on a running system; the first 100). On a quiet system, one that stays here was never recorded.
   */
  inFlight: string[];
  problems: AuditProblem[];
  /** All problems found; `problems` lists the first `maxProblems`. */
  problemCount: number;
  seconds: number;
  eventsPerSecond: number;
}

export interface VerifyOptions {
  eventStore: EventStore;
  /** The ledger to reconcile with; null skips the ledger checks. */
  ledger: Ledger | null;
  /**
   * How the ledger chains its transactions (the embedded ledger's chainID); without it the ledger's own chain
   * is not checked. Given by the caller: the chain is the ledger's, and src/audit depends on ports only.
   */
  ledgerChainID?: LedgerChainID;
  assetScale: number;
  pageSize?: number;
  maxProblems?: number;
  onProgress?: (position: number, head: number) => void;
}

const SUPPLY_DEFINITION =
  'write side: the sum of every wallet balance (WalletCredited - WalletDebited), platform:issuance included, is 0 after every completion; ' +
  'supply = sum of every wallet but platform:issuance = issued (debits of platform:issuance) - redeemed (credits to it)';

class ProblemLog {
  readonly list: AuditProblem[] = [];
  count = 0;
  firstBroken: number | null = null;
  constructor(private readonly max: number) {}

  add(problem: AuditProblem): void {
    this.count += 1;
    if (this.list.length < this.max) this.list.push(problem);
    if ((problem.check === 'hash' || problem.check === 'chain' || problem.check === 'seal') && problem.position !== undefined) {
      this.firstBroken = this.firstBroken === null ? problem.position : Math.min(this.firstBroken, problem.position);
    }
  }
}

// ---- hash and per-stream chains --------------------------------------------------------------------------

interface StreamHead {
  revision: number;
  hash: string;
  hashed: boolean;
}

/** Per-stream chains over events fed in $all order. Shared with the import, which checks a file the same way. */
export class ChainChecker {
  private readonly heads = new Map<string, StreamHead>();
  unhashed = 0;

  constructor(private readonly problems: { add(problem: AuditProblem): void }) {}

  get streams(): number {
    return this.heads.size;
  }

  /** Checks one event; returns the hash it stands for (the one it carries, or its content's if it carries none). */
  check(event: RecordedEvent): string {
    const computed = eventHash(event);
    const stored = event.metadata?.hash;
    const hashed = typeof stored === 'string';
    const { stream, revision, position } = event;
    if (hashed && stored !== computed) {
      this.problems.add({ check: 'hash', position, stream, detail: `${event.type} at revision ${revision}: its content does not match its hash (altered)` });
    }
    const head = this.heads.get(stream);
    const last = head?.revision ?? -1;
    let linked = true;
    if (revision <= last) {
      this.problems.add({ check: 'chain', position, stream, detail: `revision ${revision} comes after revision ${last} in the global order (moved or duplicated)` });
      linked = false;
    } else if (revision > last + 1) {
      const missing = revision - 1 > last + 1 ? `revisions ${last + 1} to ${revision - 1}` : `revision ${last + 1}`;
      this.problems.add({ check: 'chain', position, stream, detail: `${missing} missing before revision ${revision} (removed, or moved after it)` });
      linked = false;
    }
    if (hashed) {
      const expected = revision === 0 ? GENESIS_HASH : linked && head ? head.hash : null;
      const previous = event.metadata.previousHash;
      if (expected !== null && previous !== expected) {
        this.problems.add({ check: 'chain', position, stream, detail: `revision ${revision}: previousHash ${String(previous).slice(0, 16)}… is not the hash of the event before it (${expected.slice(0, 16)}…): that event was altered or replaced` });
      }
    } else {
      this.unhashed += 1;
      if (head?.hashed) this.problems.add({ check: 'chain', position, stream, detail: `revision ${revision} carries no hash after hashed events (hash removed)` });
    }
    const hash = hashed ? (stored as string) : computed;
    if (revision > last) {
      if (head) {
        head.revision = revision;
        head.hash = hash;
        head.hashed = hashed;
      } else {
        this.heads.set(stream, { revision, hash, hashed });
      }
    }
    return hash;
  }
}

// ---- operations, keys, users, wallets ---------------------------------------------------------------------

type OpStatus = 'pending' | 'approved' | 'rejected' | 'executing' | 'submitted' | 'completed' | 'failed';
const CHANNEL_TYPES = new Set(['issue', 'individual-payment']);

interface OpState {
  status: OpStatus;
  channel: boolean;
  party: string | null;
  requester: string;
  payer: string;
  payee: string;
  amount: string;
  fee: string;
  claimed: boolean;
  completedPosition: number;
  blockchainID: string | null;
  sequenceNumber: number | null;
  moved: boolean;
  ledgerSequence: number | null;
}

interface UserInfo {
  roles: string[];
  party: string | null;
}

interface KeyInfo {
  status: 'pending' | 'active' | 'rejected' | 'revocation_pending' | 'revoked';
  party: string;
  requestedBy: string;
  revocationRequestedBy: string | null;
  expiresAt: string | null;
}

const partyOf = (party: { type: string; id: string } | null | undefined): string | null => (party ? `${party.type}:${party.id}` : null);
const addressOf = (wallet: { kind: string; id: string }): string => `${wallet.kind}:${wallet.id}`;
const FEES_ADDRESS = 'platform:fees';

interface MovementGroup {
  operationID: string;
  position: number;
  deltas: Map<string, bigint>;
}

class BusinessChecker {
  readonly users = new Map<string, UserInfo>();
  readonly keys = new Map<string, KeyInfo>();
  readonly operations = new Map<string, OpState>();
  readonly balances = new Map<string, bigint>();
  private readonly negative = new Set<string>();
  private total = 0n;
  private expectedTotal = 0n;
  issued = 0n;
  redeemed = 0n;
  completed = 0;
  private group: MovementGroup | null = null;

  constructor(
    private readonly problems: ProblemLog,
    private readonly scale: number,
  ) {}

  /** Every wallet but the issuing account. */
  get supply(): bigint {
    return this.total - (this.balances.get(ISSUANCE_ADDRESS) ?? 0n);
  }

  feed(event: RecordedEvent): void {
    const { type } = event;
    if (type === 'WalletCredited' || type === 'WalletDebited') {
      this.movement(event, type === 'WalletCredited');
      return;
    }
    if (this.group) this.closeGroup();
    if (type.startsWith('Operation')) this.operation(event);
    else if (type.startsWith('ApiKey')) this.apiKey(event);
    else if (type === 'UserAdded') {
      const data = event.data as { userID: string; roles: string[]; party: { type: string; id: string } | null };
      this.users.set(data.userID, { roles: data.roles ?? [], party: partyOf(data.party) });
    }
  }

  finish(): void {
    if (this.group) this.closeGroup();
  }

  private problem(check: AuditCheck, event: RecordedEvent, detail: string, operationID?: string): void {
    this.problems.add({ check, position: event.position, stream: event.stream, ...(operationID ? { operationID } : {}), detail });
  }

  /** A user's decision as a checker: an existing user with the checker role, of the party, not the requester. */
  private checker(event: RecordedEvent, userID: string, party: string | null, requester: string | null, describe: () => string, operationID?: string): void {
    const user = this.users.get(userID);
    if (user && user.roles.includes('checker') && user.party === party && userID !== requester) return;
    const what = describe();
    if (!user) {
      this.problem('maker-checker', event, `${what} by ${userID}, who is not a user at that point`, operationID);
      return;
    }
    if (!user.roles.includes('checker')) this.problem('maker-checker', event, `${what} by user ${userID}, who does not have the checker role`, operationID);
    if (user.party !== party) this.problem('maker-checker', event, `${what} by user ${userID} of ${user.party ?? 'the platform'}, not of ${party ?? 'the platform'}`, operationID);
    if (requester !== null && userID === requester) this.problem('maker-checker', event, `${what} by user ${userID}, who requested it (maker and checker must differ)`, operationID);
  }

  private apiKey(event: RecordedEvent): void {
    const data = event.data as Record<string, unknown> & { keyID: string };
    const key = this.keys.get(data.keyID);
    const what = `${event.type.replace('ApiKey', 'key ').toLowerCase()} of ${data.keyID}`;
    if (event.type === 'ApiKeyRequested') {
      if (key) this.problem('operation', event, `API key ${data.keyID} requested twice`);
      const party = partyOf(data.party as { type: string; id: string });
      const maker = this.users.get(data.requestedBy as string);
      if (!maker) this.problem('maker-checker', event, `${what} by ${String(data.requestedBy)}, who is not a user at that point`);
      else {
        if (!maker.roles.includes('maker')) this.problem('maker-checker', event, `${what} by user ${String(data.requestedBy)}, who does not have the maker role`);
        if (maker.party !== party) this.problem('maker-checker', event, `${what} by user ${String(data.requestedBy)} of ${maker.party ?? 'the platform'}, not of ${party ?? 'the platform'}`);
      }
      this.keys.set(data.keyID, { status: 'pending', party: party ?? '', requestedBy: data.requestedBy as string, revocationRequestedBy: null, expiresAt: null });
      return;
    }
    if (!key) {
      this.problem('operation', event, `${event.type} of API key ${data.keyID}, which was never requested`);
      return;
    }
    const expect = (status: KeyInfo['status']) => {
      if (key.status !== status) this.problem('operation', event, `${event.type} of API key ${data.keyID} while it is ${key.status}, not ${status}`);
    };
    switch (event.type) {
      case 'ApiKeyApproved':
        expect('pending');
        this.checker(event, data.approvedBy as string, key.party, key.requestedBy, () => what);
        key.status = 'active';
        key.expiresAt = data.expiresAt as string;
        break;
      case 'ApiKeyRejected':
        expect('pending');
        this.checker(event, data.rejectedBy as string, key.party, key.requestedBy, () => what);
        key.status = 'rejected';
        break;
      case 'ApiKeyRevocationRequested': {
        expect('active');
        const maker = this.users.get(data.requestedBy as string);
        if (!maker?.roles.includes('maker') || maker.party !== key.party) this.problem('maker-checker', event, `${what} by ${String(data.requestedBy)}, not a maker of ${key.party}`);
        key.status = 'revocation_pending';
        key.revocationRequestedBy = data.requestedBy as string;
        break;
      }
      case 'ApiKeyRevocationRejected':
        expect('revocation_pending');
        this.checker(event, data.rejectedBy as string, key.party, key.revocationRequestedBy, () => what);
        key.status = 'active';
        key.revocationRequestedBy = null;
        break;
      case 'ApiKeyRevoked':
        expect('revocation_pending');
        this.checker(event, data.approvedBy as string, key.party, key.revocationRequestedBy, () => what);
        key.status = 'revoked';
        break;
      default:
        this.problem('operation', event, `unknown API-key event ${event.type}`);
    }
  }

  private operation(event: RecordedEvent): void {
    const data = event.data as Record<string, unknown> & { operationID: string };
    const { operationID } = data;
    if (event.stream !== `operation-${operationID}`) this.problem('operation', event, `${event.type} of ${operationID} in stream ${event.stream}`, operationID);
    const op = this.operations.get(operationID);
    if (event.type === 'OperationRequested') {
      if (op) {
        this.problem('operation', event, `operation ${operationID} requested twice`, operationID);
        return;
      }
      const requested = data as unknown as {
        keyID: string | null; party: { type: string; id: string } | null; operationType: string; amount: string; fee: string;
        payer: { kind: string; id: string }; payee: { kind: string; id: string }; createdAt: string;
      };
      const party = partyOf(requested.party);
      if (requested.keyID !== null && requested.keyID !== undefined) {
        const key = this.keys.get(requested.keyID);
        if (!key) this.problem('operation', event, `operation ${operationID} created with API key ${requested.keyID}, which does not exist`, operationID);
        else {
          if (key.status !== 'active' && key.status !== 'revocation_pending') this.problem('operation', event, `operation ${operationID} created with API key ${requested.keyID} while it was ${key.status}`, operationID);
          else if (key.expiresAt !== null && requested.createdAt >= key.expiresAt) this.problem('operation', event, `operation ${operationID} created with API key ${requested.keyID} after it expired (${key.expiresAt})`, operationID);
          if (key.party !== party) this.problem('operation', event, `operation ${operationID} of ${party ?? 'no party'} created with a key of ${key.party}`, operationID);
        }
      }
      this.operations.set(operationID, {
        status: 'pending',
        channel: CHANNEL_TYPES.has(requested.operationType),
        party,
        requester: String(event.metadata?.actor ?? ''),
        payer: addressOf(requested.payer),
        payee: addressOf(requested.payee),
        amount: requested.amount,
        fee: requested.fee,
        claimed: false,
        completedPosition: 0,
        blockchainID: null,
        sequenceNumber: null,
        moved: false,
        ledgerSequence: null,
      });
      return;
    }
    if (!op) {
      this.problem('operation', event, `${event.type} of operation ${operationID}, which was never requested`, operationID);
      return;
    }
    switch (event.type) {
      case 'OperationApproved':
      case 'OperationRejected': {
        if (op.status !== 'pending') this.refuse(event, operationID, `it is ${op.status}, not pending`);
        const by = String(event.type === 'OperationApproved' ? data.approvedBy : data.rejectedBy);
        if (op.channel) {
          if (by !== op.requester) this.problem('maker-checker', event, `${event.type} of ${operationID} (a channel operation, no checker) by ${by}, not by its requester ${op.requester}`, operationID);
        } else {
          const requesterUser = op.requester.startsWith('user:') ? op.requester.slice(5) : null;
          this.checker(event, by, op.party, requesterUser, () => `${event.type === 'OperationApproved' ? 'approval' : 'rejection'} of operation ${operationID}`, operationID);
        }
        op.status = event.type === 'OperationApproved' ? 'approved' : 'rejected';
        break;
      }
      case 'OperationExecutionStarted':
        if (op.status !== 'approved' && op.status !== 'executing') this.refuse(event, operationID, `claimed while ${op.status}`);
        op.claimed = true;
        if (op.status === 'approved' || op.status === 'executing') op.status = 'executing';
        break;
      case 'OperationSubmitted':
        if (op.status !== 'executing') this.refuse(event, operationID, `submitted while ${op.status}${op.claimed ? '' : ' and never claimed'}`);
        if (op.status === 'executing') op.status = 'submitted';
        op.sequenceNumber = data.sequenceNumber as number;
        break;
      case 'OperationCompleted':
        if (op.status === 'completed') this.refuse(event, operationID, 'completed twice');
        else if (op.status === 'failed' || op.status === 'rejected') this.refuse(event, operationID, `completed after it ${op.status === 'failed' ? 'failed' : 'was rejected'}`);
        else if (op.status !== 'submitted') this.refuse(event, operationID, `completed while ${op.status}${op.claimed ? '' : ', never claimed by an executor'}`);
        if (op.status !== 'completed') this.completed += 1;
        op.status = 'completed';
        op.completedPosition = event.position;
        op.blockchainID = data.blockchainID as string;
        op.sequenceNumber = data.sequenceNumber as number;
        break;
      case 'OperationFailed':
        if (op.status === 'completed' || op.status === 'rejected' || op.status === 'failed' || op.status === 'pending') this.refuse(event, operationID, `failed while ${op.status}`);
        if (op.status !== 'completed') op.status = 'failed';
        break;
      default:
        this.refuse(event, operationID, 'unknown operation event');
    }
  }

  private refuse(event: RecordedEvent, operationID: string, detail: string): void {
    this.problem('operation', event, `${event.type} of ${operationID}: ${detail}`, operationID);
  }

  private movement(event: RecordedEvent, credit: boolean): void {
    const data = event.data as { wallet: { kind: string; id: string }; operationID: string; amount: string };
    if (this.group && this.group.operationID !== data.operationID) this.closeGroup();
    this.group ??= { operationID: data.operationID, position: event.position, deltas: new Map() };
    const address = addressOf(data.wallet);
    let units: bigint;
    try {
      units = toUnits(data.amount);
    } catch {
      this.problem('wallet', event, `${event.type} of ${address}: amount ${JSON.stringify(data.amount)} is not a decimal`, data.operationID);
      return;
    }
    const delta = credit ? units : -units;
    const balance = (this.balances.get(address) ?? 0n) + delta;
    this.balances.set(address, balance);
    this.total += delta;
    if (address === ISSUANCE_ADDRESS) {
      if (credit) this.redeemed += units;
      else this.issued += units;
    } else if (balance < 0n && !this.negative.has(address)) {
      this.negative.add(address);
      this.problem('wallet', event, `wallet ${address} goes below zero: ${fromUnits(balance, this.scale)} after ${event.type} of ${data.amount}`, data.operationID);
    }
    this.group.deltas.set(address, (this.group.deltas.get(address) ?? 0n) + delta);
  }

  private closeGroup(): void {
    const group = this.group!;
    this.group = null;
    const report = (check: AuditCheck, detail: string) => this.problems.add({ check, position: group.position, operationID: group.operationID, detail });
    const money = (units: bigint) => fromUnits(units, this.scale);
    if (this.total !== this.expectedTotal) {
      report('supply', `after the money movements of ${group.operationID}, all wallets sum to ${money(this.total)} instead of 0: supply ${money(this.supply)} != issued ${money(this.issued)} - redeemed ${money(this.redeemed)}`);
      this.expectedTotal = this.total; // report each change once, not every step after it
    }
    const op = this.operations.get(group.operationID);
    if (!op || op.status !== 'completed' || op.moved) {
      report('supply', `money moved for operation ${group.operationID}, which ${!op ? 'does not exist' : op.moved ? 'had already moved its money' : `is ${op.status}, not completed`}`);
      if (op) op.moved = true;
      return;
    }
    op.moved = true;
    const amount = toUnits(op.amount);
    const fee = toUnits(op.fee);
    const expected = new Map<string, bigint>();
    const add = (address: string, delta: bigint) => expected.set(address, (expected.get(address) ?? 0n) + delta);
    add(op.payer, -(amount + fee));
    add(op.payee, amount);
    if (fee > 0n) add(FEES_ADDRESS, fee);
    const same = expected.size === group.deltas.size && [...expected].every(([address, delta]) => group.deltas.get(address) === delta);
    if (!same) {
      const show = (map: Map<string, bigint>) => [...map].map(([address, delta]) => `${address} ${delta > 0n ? '+' : ''}${money(delta)}`).join(', ');
      report('supply', `the money movements of ${group.operationID} (${show(group.deltas)}) are not what it requested (${show(expected)})`);
    }
  }
}

// ---- the ledger --------------------------------------------------------------------------------------------

function expectedLegs(op: OpState): LedgerLeg[] {
  const legs: LedgerLeg[] = [{ from: op.payer, to: op.payee, amount: op.amount }];
  if (toUnits(op.fee) > 0n) legs.push({ from: op.payer, to: FEES_ADDRESS, amount: op.fee });
  return legs;
}

const sameLegs = (a: LedgerLeg[], b: LedgerLeg[]) =>
  a.length === b.length && a.every((leg, i) => leg.from === b[i]!.from && leg.to === b[i]!.to && toUnits(leg.amount) === toUnits(b[i]!.amount));

/**
 * The history is read up to the head it had when verify started, the ledger after that: a transaction whose
 * operation was approved and not yet completed at that head (or requested after it) is an execution in
 * flight, listed as such, not a discrepancy.
 */
export type LedgerChainID = (previousID: string, transaction: Omit<LedgerTransaction, 'blockchainID'>) => string;

const IN_FLIGHT: ReadonlySet<string> = new Set(['approved', 'executing', 'submitted']);

async function reconcileLedger(
  ledger: Ledger,
  business: BusinessChecker,
  problems: ProblemLog,
  pageSize: number,
  history: { store: EventStore; head: number; inFlight: string[] },
  chainID: LedgerChainID | undefined,
): Promise<number> {
  let previous = GENESIS_HASH;
  let count = 0;
  let matched = 0;
  for (;;) {
    const page = await ledger.transactions({ fromSequence: count + 1, maxCount: pageSize });
    for (const tx of page) {
      count += 1;
      if (tx.sequenceNumber !== count) problems.add({ check: 'ledger-chain', operationID: tx.operationID, detail: `ledger transaction #${count} has sequence number ${tx.sequenceNumber}` });
      const { blockchainID, ...content } = tx;
      const recomputed = chainID ? chainID(previous, content) : blockchainID;
      if (recomputed !== blockchainID) {
        problems.add({ check: 'ledger-chain', operationID: tx.operationID, detail: `ledger chain broken at sequence ${tx.sequenceNumber}: id ${blockchainID.slice(0, 16)}…, recomputed ${recomputed.slice(0, 16)}…` });
      }
      previous = blockchainID;
      const op = business.operations.get(tx.operationID);
      const what = `ledger transaction ${tx.sequenceNumber} (${tx.operationID})`;
      if (op && IN_FLIGHT.has(op.status)) {
        history.inFlight.push(tx.operationID);
        continue;
      }
      if (!op) {
        const [requested] = await history.store.readStream(`operation-${tx.operationID}`, { maxCount: 1 });
        if (requested && requested.position > history.head) {
          history.inFlight.push(tx.operationID);
          continue;
        }
      }
      if (!op || op.status !== 'completed') {
        problems.add({ check: 'ledger', operationID: tx.operationID, detail: `${what} has no completed operation${op ? ` (the operation is ${op.status})` : ' (no such operation in the history)'}` });
        continue;
      }
      if (op.ledgerSequence !== null) {
        problems.add({ check: 'ledger', operationID: tx.operationID, position: op.completedPosition, detail: `${what} is a second ledger transaction for the operation (the first is ${op.ledgerSequence})` });
        continue;
      }
      op.ledgerSequence = tx.sequenceNumber;
      matched += 1;
      const legs = expectedLegs(op);
      if (!sameLegs(legs, tx.legs)) {
        problems.add({ check: 'ledger', operationID: tx.operationID, position: op.completedPosition, detail: `${what} moves ${JSON.stringify(tx.legs)}, the operation requested ${JSON.stringify(legs)}` });
      }
      if (op.blockchainID !== tx.blockchainID || op.sequenceNumber !== tx.sequenceNumber) {
        problems.add({ check: 'ledger', operationID: tx.operationID, position: op.completedPosition, detail: `operation completed as ${String(op.blockchainID).slice(0, 16)}… at sequence ${op.sequenceNumber}, the ledger has ${tx.blockchainID.slice(0, 16)}… at ${tx.sequenceNumber}` });
      }
    }
    if (page.length < pageSize) break;
  }
  if (matched < business.completed) {
    for (const [operationID, op] of business.operations) {
      if (op.status === 'completed' && op.ledgerSequence === null) {
        problems.add({ check: 'ledger', operationID, position: op.completedPosition, detail: `completed operation ${operationID} has no ledger transaction` });
      }
    }
  }
  return count;
}

// ---- the run -------------------------------------------------------------------------------------------------

/** Seals are delimited by position when the store numbers events as the sealer saw them, else by event id. */
async function sealMode(store: EventStore): Promise<'positions' | 'ids'> {
  const first = await store.readStream(SEALS_STREAM, { maxCount: 3 });
  if (first.length === 0) return 'positions';
  for (const seal of first) {
    const data = seal.data as HistorySealedData;
    const [event] = await store.readAll({ fromPosition: data.toPosition, toPosition: data.toPosition, maxCount: 1 });
    if (event && event.id === data.lastEventID) return 'positions';
  }
  return 'ids';
}

/** The seals of the history up to `head` (seals appended since cover events beyond it), a page at a time. */
export function sealLoader(store: EventStore, head = Number.MAX_SAFE_INTEGER, pageSize = 200): () => Promise<RecordedSeal[]> {
  let next = 0;
  let done = false;
  return async () => {
    if (done) return [];
    const page = await store.readStream(SEALS_STREAM, { fromRevision: next, maxCount: pageSize });
    next += page.length;
    const within = page.filter((event) => event.position <= head);
    if (within.length < page.length) done = true;
    return within.map((event) => ({ data: event.data as HistorySealedData, revision: event.revision, position: event.position }));
  };
}

export async function verifyHistory(options: VerifyOptions): Promise<AuditReport> {
  const started = performance.now();
  const { eventStore: store } = options;
  const pageSize = options.pageSize ?? 1000;
  const problems = new ProblemLog(options.maxProblems ?? 1000);
  const chains = new ChainChecker(problems);
  const business = new BusinessChecker(problems, options.assetScale);
  const head = await store.headPosition();
  const seals = new SealChecker(await sealMode(store), sealLoader(store, head), (problem) => problems.add(problem));
  let events = 0;
  let from = 0;
  while (from <= head) {
    const page = await store.readAll({ fromPosition: from, toPosition: head, maxCount: pageSize });
    if (page.length === 0) break;
    await seals.prepare(page.length, page[page.length - 1]!.position);
    for (const event of page) {
      const hash = chains.check(event);
      seals.feed(event, hash);
      business.feed(event);
    }
    events += page.length;
    from = page[page.length - 1]!.position + 1;
    options.onProgress?.(from - 1, head);
  }
  await seals.finish();
  business.finish();
  const inFlight: string[] = [];
  const ledgerTransactions = options.ledger ? await reconcileLedger(options.ledger, business, problems, 1000, { store, head, inFlight }, options.ledgerChainID) : 0;
  const seconds = (performance.now() - started) / 1000;
  const scale = options.assetScale;
  return {
    ok: problems.count === 0,
    checked: {
      events,
      streams: chains.streams,
      operations: business.operations.size,
      wallets: business.balances.size,
      ledgerTransactions,
      users: business.users.size,
      apiKeys: business.keys.size,
      seals: seals.checked,
      sealedEvents: seals.sealedEvents,
      unsealedEvents: seals.unsealedEvents,
      unhashedEvents: chains.unhashed,
      headPosition: head,
    },
    supply: {
      definition: SUPPLY_DEFINITION,
      issued: fromUnits(business.issued, scale),
      redeemed: fromUnits(business.redeemed, scale),
      supply: fromUnits(business.supply, scale),
    },
    firstBrokenPosition: problems.firstBroken,
    inFlight: inFlight.slice(0, 100),
    problems: problems.list,
    problemCount: problems.count,
    seconds: Math.round(seconds * 1000) / 1000,
    eventsPerSecond: seconds > 0 ? Math.round(events / seconds) : events,
  };
}
