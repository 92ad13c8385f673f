import { DomainError } from '../domain/errors.ts';
import type { OperationRequested, WalletRef } from '../domain/events.ts';
import { isOperationEventType, statusAfter } from '../domain/operation-status.ts';
import { streams } from '../domain/streams.ts';
import type { EventStore, RecordedEvent } from '../ports/event-store.ts';
import { fromUnits, toUnits } from './amounts.ts';

/**
 * The auditor's questions, answered from the history alone (no read model): a wallet's balance at a moment,
 * an operation's whole story, an API key's lifecycle and what it created.
 */

// ---- balance as of a moment ----------------------------------------------------------------------------------

export interface BalanceAsOf {
  /** Decimal string at the asset scale. */
  balance: string;
  /** The moment asked, normalized to ISO 8601 UTC. */
  asOf: string;
  /** Position of the last money movement folded (0 when none). */
  position: number;
}

/**
 * Folds the WalletCredited/WalletDebited events of the wallet's stream, in order, up to the last one stored
 * (createdAt, the store's commit time) at or before `asOf`. The stream is read in commit order, so the fold
 * stops at the first event committed after `asOf`.
 */
export async function balanceAsOf(
  store: EventStore,
  wallet: WalletRef,
  asOf: Date,
  assetScale: number,
): Promise<BalanceAsOf> {
  const until = asOf.toISOString();
  const stream = streams.wallet(wallet);
  let balance = 0n;
  let position = 0;
  let from = 0;
  for (;;) {
    const page = await store.readStream(stream, { fromRevision: from, maxCount: 1000 });
    for (const event of page) {
      if (event.createdAt > until) return { balance: fromUnits(balance, assetScale), asOf: until, position };
      if (event.type !== 'WalletCredited' && event.type !== 'WalletDebited') continue;
      const units = toUnits((event.data as { amount: string }).amount);
      balance += event.type === 'WalletCredited' ? units : -units;
      position = event.position;
    }
    if (page.length < 1000) return { balance: fromUnits(balance, assetScale), asOf: until, position };
    from = page[page.length - 1]!.revision + 1;
  }
}

// ---- actors --------------------------------------------------------------------------------------------------

export interface ActorInfo {
  /** As recorded: `apikey:<keyID>`, `user:<id>`, `operator:<name>`, `system:<component>`, `individual:<phone>`. */
  actor: string;
  kind: string;
  keyID?: string;
  label?: string;
  userID?: string;
  email?: string;
}

/** Resolves actors and user ids to what an auditor reads (key labels, emails), each looked up once. */
class Directory {
  private readonly store: EventStore;
  private readonly users = new Map<string, Promise<string | null>>();
  private readonly keys = new Map<string, Promise<string | null>>();

  constructor(store: EventStore) {
    this.store = store;
  }

  email(userID: string): Promise<string | null> {
    return this.once(this.users, streams.user(userID), 'UserAdded', 'email');
  }

  label(keyID: string): Promise<string | null> {
    return this.once(this.keys, streams.apiKey(keyID), 'ApiKeyRequested', 'label');
  }

  /** A field of a stream's first event when it is of `type`, looked up once per stream. */
  private once(cache: Map<string, Promise<string | null>>, stream: string, type: string, field: string) {
    let found = cache.get(stream);
    if (!found) {
      found = this.first(stream).then((event) =>
        event?.type === type ? ((event.data as Record<string, string>)[field] ?? null) : null,
      );
      cache.set(stream, found);
    }
    return found;
  }

  async actor(actor: unknown): Promise<ActorInfo> {
    const text = typeof actor === 'string' ? actor : 'unknown';
    const colon = text.indexOf(':');
    const kind = colon === -1 ? text : text.slice(0, colon);
    const id = colon === -1 ? '' : text.slice(colon + 1);
    if (kind === 'apikey') {
      const label = await this.label(id);
      return { actor: text, kind, keyID: id, ...(label !== null ? { label } : {}) };
    }
    if (kind === 'user') {
      const email = await this.email(id);
      return { actor: text, kind, userID: id, ...(email !== null ? { email } : {}) };
    }
    return { actor: text, kind };
  }

  /** A user id as an auditor reads it: the email when it is a user, else the id as recorded (an operator, a system). */
  async who(userID: unknown): Promise<string> {
    if (typeof userID !== 'string') return String(userID);
    if (userID.includes(':')) return userID;
    return (await this.email(userID)) ?? userID;
  }

  private async first(stream: string): Promise<RecordedEvent | undefined> {
    const [event] = await this.store.readStream(stream, { maxCount: 1 });
    return event;
  }
}

// ---- an operation's history ----------------------------------------------------------------------------------

export interface HistoryEntry {
  position: number;
  stream: string;
  revision: number;
  time: string;
  type: string;
  /** Whose authority the event was taken under. */
  actor: ActorInfo;
  /**
   * The operator (`operator:<os user>`) who ran the CLI command behind the event; absent for the console and the API.
   */
  operator?: string;
  change: string;
}

export interface OperationHistory {
  operationID: string;
  operationType: string;
  status: string;
  amount: string;
  fee: string;
  payer: string;
  payee: string;
  events: HistoryEntry[];
}

const wallet = (ref: unknown) => {
  const { kind, id } = ref as { kind: string; id: string };
  return `${kind}:${id}`;
};

async function describe(event: RecordedEvent, directory: Directory): Promise<string> {
  const d = event.data as Record<string, any>;
  switch (event.type) {
    case 'OperationRequested':
      return (
        `${d.operationType} of ${d.amount} (fee ${d.fee}) from ${wallet(d.payer)} to ${wallet(d.payee)} ` +
        `requested${
          d.keyID
            ? ` with API key ${d.keyID}${
                typeof d.secretGeneration === 'number' ? ` (secret ${d.secretGeneration})` : ''
              }`
            : ''
        }${d.memo ? `, memo "${d.memo}"` : ''}`
      );
    case 'OperationApproved':
      return `approved by ${await directory.who(d.approvedBy)}`;
    case 'OperationRejected':
      return `rejected by ${await directory.who(d.rejectedBy)}: ${d.reason}`;
    case 'OperationExecutionStarted':
      return `claimed by executor ${d.executorID} (attempt ${d.attempt}, lease until ${d.leaseUntil})`;
    case 'OperationSubmitted':
      return `accepted by the ledger as transaction ${d.sequenceNumber}`;
    case 'OperationCompleted':
      return (
        `completed: ledger transaction ${d.sequenceNumber}, blockchainID ${d.blockchainID}, wallet operation ` +
        `${d.walletOperationID}`
      );
    case 'OperationFailed':
      return `failed: ${d.lastError}`;
    case 'FundsHeld':
      return `${d.amount} held on ${wallet(d.wallet)}`;
    case 'HoldReleased':
      return `hold of ${d.amount} released on ${wallet(d.wallet)} (${d.reason})`;
    case 'WalletDebited':
      return `${wallet(d.wallet)} debited ${d.amount}`;
    case 'WalletCredited':
      return `${wallet(d.wallet)} credited ${d.amount}`;
    case 'VolumeReserved':
      return `${d.amount} of API key ${d.keyID}'s volume for ${d.day} reserved`;
    case 'VolumeReleased':
      return `${d.amount} of API key ${d.keyID}'s volume for ${d.day} released`;
    case 'IdempotentRequestRecorded':
      return `first response recorded for its Idempotency-Key (status ${d.response?.status})`;
    case 'ApiKeyRequested':
      return (
        `key "${d.label}" requested by ${await directory.who(d.requestedBy)} for ` +
        `${d.party?.type}:${d.party?.id}: ${(d.permissions ?? []).join(', ')}, max ` +
        `${d.maxTransactionAmount ?? '-'} per operation, ${d.maxDailyVolume ?? '-'} per day, expires ` +
        `${d.expiresInDays} days after approval`
      );
    case 'ApiKeyApproved':
      return `approved by ${await directory.who(d.approvedBy)}, expires ${d.expiresAt}`;
    case 'ApiKeyRejected':
      return `rejected by ${await directory.who(d.rejectedBy)}${d.reason ? `: ${d.reason}` : ''}`;
    case 'ApiKeyRequestWithdrawn':
      return `request withdrawn by ${await directory.who(d.withdrawnBy)}`;
    case 'ApiKeyRevocationRequested':
      return `revocation requested by ${await directory.who(d.requestedBy)}: ${d.reason}`;
    case 'ApiKeyRevocationRejected':
      return `revocation rejected by ${await directory.who(d.rejectedBy)}${d.reason ? `: ${d.reason}` : ''}`;
    case 'ApiKeyRevoked':
      return `revoked, approved by ${await directory.who(d.approvedBy)}`;
    case 'ApiKeyRotationRequested':
    case 'WebhookSecretRotationRequested':
      return `secret rotation requested by ${await directory.who(d.requestedBy)}: ${d.reason}`;
    case 'ApiKeyRotationRejected':
    case 'WebhookSecretRotationRejected':
      return `secret rotation rejected by ${await directory.who(d.rejectedBy)}${d.reason ? `: ${d.reason}` : ''}`;
    case 'ApiKeyRotationWithdrawn':
    case 'WebhookSecretRotationWithdrawn':
      return `secret rotation withdrawn by ${await directory.who(d.withdrawnBy)}`;
    case 'ApiKeyRotated':
    case 'WebhookSecretRotated':
      return (
        `secret rotated, approved by ${await directory.who(d.approvedBy)}; the new secret is held for ` +
        `${await directory.who(d.secretHolder)}, the previous one works until ${d.previousValidUntil}`
      );
    case 'ApiKeyPreviousSecretEnded':
    case 'WebhookEndpointPreviousSecretEnded':
      return `previous secret ended at the departure of ${await directory.who(d.departedUserID)}, who held it`;
    default:
      return event.type;
  }
}

async function entry(event: RecordedEvent, directory: Directory): Promise<HistoryEntry> {
  return {
    position: event.position,
    stream: event.stream,
    revision: event.revision,
    time: event.createdAt,
    type: event.type,
    actor: await directory.actor(event.metadata?.actor),
    ...(typeof event.metadata?.operator === 'string' ? { operator: event.metadata.operator } : {}),
    change: await describe(event, directory),
  };
}

/** The operation's stage inside the service after its last event (the audit shows the executor's stages too). */
const statusAfterLast = (type: string | undefined): string =>
  type !== undefined && isOperationEventType(type) ? statusAfter(type) : 'unknown';

/**
 * The streams an operation's commands write besides its own, named by the operation itself: the payer's hold,
 * releases and debit, the payee's and the fee account's credits, the key's daily volume.
 */
function companionStreams(data: OperationRequested['data']): string[] {
  const names = [
    streams.wallet(data.payer),
    streams.wallet(data.payee),
    streams.wallet({ kind: 'platform', id: 'fees' }),
  ];
  if (data.keyID !== null && data.volumeDay !== null) names.push(streams.keyVolume(data.keyID, data.volumeDay));
  return [...new Set(names)];
}

/**
 * An append writes a few events to a stream at most; the window read on each side of an event in a companion stream.
 */
const BESIDE = 3;

/**
 * A stream's events on either side of a global position: the revision where the stream passes the position
 * is found by bisection (positions only compared, never computed: on KurrentDB a number next to a position
 * is not necessarily one a read may start at), then BESIDE events before and after it are read.
 */
async function streamEventsBeside(
  store: EventStore,
  stream: string,
  length: number,
  position: number,
  read: (revision: number) => Promise<RecordedEvent | undefined>,
): Promise<RecordedEvent[]> {
  let lo = 0;
  let hi = length;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    const event = await read(mid);
    if (event === undefined || event.position > position) hi = mid;
    else lo = mid + 1;
  }
  const from = Math.max(0, lo - BESIDE);
  return store.readStream(stream, { fromRevision: from, maxCount: lo + BESIDE - from });
}

/**
 * The operation's events in order: those of its stream, and those of other streams written in the same
 * appends (the payer's hold, the money movements, the key's volume, the releases). Those are found by stream
 * and correlation id, not by position arithmetic: in each stream the operation names (companionStreams),
 * beside each of its own events, the events that carry its operation id and were written by the same command
 * (the correlation id of one of its own events).
 */
export async function operationHistory(store: EventStore, operationID: string): Promise<OperationHistory> {
  const own = await store.readStream(streams.operation(operationID));
  const requested = own[0];
  if (!requested || requested.type !== 'OperationRequested')
    throw new DomainError('NOT_FOUND', `operation ${operationID} does not exist`);
  const correlations = new Set(own.map((event) => event.metadata?.correlationId));
  const related = new Map<number, RecordedEvent>();
  for (const stream of companionStreams(requested.data as OperationRequested['data'])) {
    const [last] = await store.readStream(stream, { direction: 'backwards', maxCount: 1 });
    if (!last) continue;
    const byRevision = new Map<number, Promise<RecordedEvent | undefined>>();
    const read = (revision: number) => {
      let found = byRevision.get(revision);
      if (!found) {
        found = store.readStream(stream, { fromRevision: revision, maxCount: 1 }).then(([event]) => event);
        byRevision.set(revision, found);
      }
      return found;
    };
    for (const event of own) {
      for (const other of await streamEventsBeside(store, stream, last.revision + 1, event.position, read)) {
        if ((other.data as { operationID?: unknown })?.operationID !== operationID) continue;
        if (!correlations.has(other.metadata?.correlationId)) continue;
        related.set(other.position, other);
      }
    }
  }
  const directory = new Directory(store);
  const all = [...own, ...related.values()].sort((a, b) => a.position - b.position);
  const data = requested.data as { operationType: string; amount: string; fee: string; payer: unknown; payee: unknown };
  return {
    operationID,
    operationType: data.operationType,
    status: statusAfterLast(own[own.length - 1]!.type),
    amount: data.amount,
    fee: data.fee,
    payer: wallet(data.payer),
    payee: wallet(data.payee),
    events: await Promise.all(all.map((event) => entry(event, directory))),
  };
}

// ---- an API key's lifecycle ----------------------------------------------------------------------------------

export interface KeyHistory {
  keyID: string;
  label: string;
  party: string;
  status: string;
  /** Who requested the key and its revocation (emails). */
  makers: string[];
  /** Who decided on those requests (emails). */
  checkers: string[];
  lifecycle: Array<HistoryEntry & { by: string; role: 'maker' | 'checker' }>;
  operations: Array<{
    operationID: string;
    operationType: string;
    amount: string;
    fee: string;
    createdAt: string;
    position: number;
    status: string;
  }>;
}

const KEY_STATUS: Record<string, string> = {
  ApiKeyRequested: 'pending',
  ApiKeyApproved: 'active',
  ApiKeyRejected: 'rejected',
  ApiKeyRequestWithdrawn: 'withdrawn',
  ApiKeyRevocationRequested: 'revocation_pending',
  ApiKeyRevocationRejected: 'active',
  ApiKeyRevoked: 'revoked',
};

export async function keyHistory(store: EventStore, keyID: string, now = new Date()): Promise<KeyHistory> {
  const events = await store.readStream(streams.apiKey(keyID));
  const requested = events[0];
  if (!requested || requested.type !== 'ApiKeyRequested')
    throw new DomainError('NOT_FOUND', `API key ${keyID} does not exist`);
  const directory = new Directory(store);
  const makers = new Set<string>();
  const checkers = new Set<string>();
  const lifecycle: KeyHistory['lifecycle'] = [];
  let expiresAt: string | null = null;
  for (const event of events) {
    const d = event.data as Record<string, unknown>;
    const makerSide = [
      'ApiKeyRequested',
      'ApiKeyRevocationRequested',
      'ApiKeyRequestWithdrawn',
      'ApiKeyRotationRequested',
      'ApiKeyRotationWithdrawn',
    ].includes(event.type);
    // A previous secret ended at a departure: the system ended it (the event names who left).
    const userID =
      d.requestedBy ??
      d.approvedBy ??
      d.rejectedBy ??
      d.withdrawnBy ??
      (event.type === 'ApiKeyPreviousSecretEnded' ? 'system' : undefined);
    const by = await directory.who(userID);
    (makerSide ? makers : checkers).add(by);
    if (event.type === 'ApiKeyApproved') expiresAt = d.expiresAt as string;
    lifecycle.push({ ...(await entry(event, directory)), by, role: makerSide ? 'maker' : 'checker' });
  }
  // A secret rotation leaves the status as it was: the status is the last lifecycle event's.
  let status = KEY_STATUS[[...events].reverse().find((event) => event.type in KEY_STATUS)!.type] ?? 'unknown';
  if ((status === 'active' || status === 'revocation_pending') && expiresAt !== null && now.toISOString() >= expiresAt)
    status = 'expired';

  const operations: KeyHistory['operations'] = [];
  let from = 0;
  for (;;) {
    const page = await store.readAll({
      fromPosition: from,
      maxCount: 5000,
      filter: { eventTypes: ['OperationRequested'] },
    });
    for (const event of page) {
      const d = event.data as {
        keyID: string | null;
        operationID: string;
        operationType: string;
        amount: string;
        fee: string;
        createdAt: string;
      };
      if (d.keyID !== keyID) continue;
      const [last] = await store.readStream(streams.operation(d.operationID), { direction: 'backwards', maxCount: 1 });
      operations.push({
        operationID: d.operationID,
        operationType: d.operationType,
        amount: d.amount,
        fee: d.fee,
        createdAt: d.createdAt,
        position: event.position,
        status: statusAfterLast(last?.type),
      });
    }
    if (page.length < 5000) break;
    from = page[page.length - 1]!.position + 1;
  }
  const data = requested.data as { label: string; party: { type: string; id: string } };
  return {
    keyID,
    label: data.label,
    party: `${data.party.type}:${data.party.id}`,
    status,
    makers: [...makers],
    checkers: [...checkers],
    lifecycle,
    operations,
  };
}
