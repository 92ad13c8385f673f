import { answerLabel, balancePath, operationsPath, request } from './http.ts';
import { liveKeys, type Party, type World } from './setup.ts';
import type { AcknowledgedCreate, SoakStats } from './stats.ts';
import { amountBetween, bump, pause, pick, weighted } from './util.ts';

/** Acknowledged creates waiting for a checker; the clients pause while it is full. */
export class DecisionQueue {
  readonly capacity: number;
  private readonly waiting: AcknowledgedCreate[] = [];
  inFlight = 0;

  constructor(capacity: number) {
    this.capacity = capacity;
  }

  get backlog(): number {
    return this.waiting.length + this.inFlight;
  }

  get full(): boolean {
    return this.backlog >= this.capacity;
  }

  push(create: AcknowledgedCreate): void {
    this.waiting.push(create);
  }

  take(): AcknowledgedCreate | undefined {
    const next = this.waiting.shift();
    if (next) this.inFlight += 1;
    return next;
  }

  done(): void {
    this.inFlight -= 1;
  }

  /** Creates that no checker looked at before the load ended: they stay pending. */
  get left(): number {
    return this.waiting.length;
  }
}

/** What the contract lets each party create, with amounts small enough for the balances to last. */
const CREATE_MIX = {
  'cash-in to an individual': 25,
  'cash-in to a merchant': 15,
  'cash-out-fulfillment': 10,
  'cash-out': 10,
  'pay-merchant': 20,
  'pay-individual': 20,
} as const;
type CreateKind = keyof typeof CREATE_MIX;

function createRequest(kind: CreateKind, world: World): { party: Party; body: Record<string, unknown> } {
  const memo = `soak ${kind}`;
  const distributor = () => pick(world.distributors);
  switch (kind) {
    case 'cash-in to an individual':
      return {
        party: distributor(),
        body: { operationType: 'cash-in', amount: amountBetween(20, 100), phoneTo: pick(world.phones), memo },
      };
    case 'cash-in to a merchant':
      return {
        party: distributor(),
        body: {
          operationType: 'cash-in',
          amount: amountBetween(20, 100),
          merchantToShortCode: pick(world.merchants).shortCode,
          memo,
        },
      };
    case 'cash-out-fulfillment':
      return {
        party: distributor(),
        body: {
          operationType: 'cash-out-fulfillment',
          amount: amountBetween(1, 10),
          phoneFrom: pick(world.phones),
          cashOutFulfillmentType: 'cash',
          cashOutFulfillmentID: `rcpt-${Date.now()}`,
          memo,
        },
      };
    case 'cash-out': {
      const merchant = pick(world.merchants);
      return {
        party: merchant,
        body: {
          operationType: 'cash-out',
          amount: amountBetween(1, 10),
          distributorToShortCode: pick(world.distributors).shortCode,
          memo,
        },
      };
    }
    case 'pay-merchant': {
      const merchant = pick(world.merchants);
      const other = pick(world.merchants.filter((m) => m !== merchant));
      return {
        party: merchant,
        body: {
          operationType: 'pay-merchant',
          amount: amountBetween(1, 10),
          merchantToShortCode: other.shortCode,
          memo,
        },
      };
    }
    case 'pay-individual':
      return {
        party: pick(world.merchants),
        body: { operationType: 'pay-individual', amount: amountBetween(1, 10), phoneTo: pick(world.phones), memo },
      };
  }
}

async function createOne(baseUrl: string, world: World, stats: SoakStats, queue: DecisionQueue): Promise<boolean> {
  const kind = weighted(CREATE_MIX);
  const { party, body } = createRequest(kind, world);
  const keys = liveKeys(party);
  if (keys.length === 0) return true;
  const key = pick(keys);
  const answer = await request(baseUrl, 'POST', operationsPath(party), key.apiKey, body);
  const operationID = answer.body?.operationID;
  if (answer.status !== null && answer.status >= 200 && answer.status < 300 && typeof operationID === 'string') {
    const create = {
      operationID,
      operationType: String(body.operationType),
      partyKind: party.kind,
      checkerEmail: party.checkerEmail,
      keyID: key.keyID,
      at: Date.now(),
    };
    stats.acknowledged.set(operationID, create);
    queue.push(create);
  } else if (answer.status !== null && answer.status >= 400 && answer.status < 500) {
    bump(stats.createRefusals, answerLabel(answer));
  } else {
    bump(stats.createUnacknowledged, answerLabel(answer));
  }
  return answer.status !== null;
}

async function readOne(baseUrl: string, world: World, stats: SoakStats): Promise<boolean> {
  const party = pick([...world.distributors, ...world.merchants]);
  const keys = liveKeys(party);
  if (keys.length === 0) return true;
  const path = pick([
    balancePath(party),
    `${operationsPath(party)}?limit=20`,
    ...(party.kind === 'merchant' ? [`/api/v1/merchants/${party.id}/payments?limit=20`] : []),
  ]);
  const answer = await request(baseUrl, 'GET', path, pick(keys).apiKey);
  bump(stats.reads, answer.status === 200 ? '200' : answerLabel(answer));
  return answer.status !== null;
}

/**
 * One HTTP client: creates (the contract's six kinds over every party and live key) and, now and then, a
 * read, until the signal aborts. It only reads while the checkers' backlog is full, and backs off a little
 * when the API does not answer (it is being restarted).
 */
export async function client(
  target: string | (() => string),
  world: World,
  stats: SoakStats,
  queue: DecisionQueue,
  signal: AbortSignal,
): Promise<void> {
  while (!signal.aborted) {
    // Several API processes: the target picks one per request, as a load balancer with health checks would.
    const baseUrl = typeof target === 'string' ? target : target();
    if (queue.full) {
      // The checkers are behind: only reads until they catch up.
      const answered = await readOne(baseUrl, world, stats);
      await pause(answered ? 200 + Math.random() * 200 : 500, signal);
      continue;
    }
    const answered =
      Math.random() < 0.15 ? await readOne(baseUrl, world, stats) : await createOne(baseUrl, world, stats, queue);
    await pause(answered ? 20 + Math.random() * 80 : 500, signal);
  }
}
