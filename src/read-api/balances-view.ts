import type { PartyType } from '../domain/parties.ts';
import type { EventStore, RecordedEvent } from '../ports/event-store.ts';
import type { ReadStore } from '../ports/read-store.ts';
import { balanceDocId, balancesProjection, toApi, type BalanceDoc } from '../projections/balances.ts';
import { balancesOfKind } from '../projections/balances-queries.ts';
import { foldInMemory } from '../projections/fold.ts';
import type { Projection } from '../projections/projection.ts';
import { checkpointIn, Follower, type ConsumerLogger, type Supervision } from '../shared/follower.ts';
import { preparedJson, type PreparedJson } from '../http/conditional.ts';

/** The wallets whose balance the read API serves: the other kinds (individuals, the platform's) are not kept. */
const SERVED_KINDS: readonly PartyType[] = ['distributor', 'merchant'];
/** Documents read per page when the view is seeded. */
const SEED_PAGE = 5000;

export interface BalancesViewOptions {
  assetScale: number;
  /** Documents per page of the seed (tests: a few, to see the pages). */
  seedPage?: number;
}

interface Entry {
  doc: BalanceDoc;
  /** The answer as sent: recomputed only when the document changes, so a request serializes and hashes nothing. */
  answer: PreparedJson;
}

/**
 * The balances read model a second time, in this process's memory: what GET .../balance answers from, with no
 * round trip to the read store per request. The same projection (src/projections/balances.ts) through the same
 * fold (foldInMemory), fed by the one follower; it keeps one entry per distributor and merchant wallet (the
 * document and its answer, a few hundred bytes).
 *
 * It is seeded once from the read store's model, so a process joining a long history does not replay it: the
 * checkpoint is read first, then the documents. A document read later than the checkpoint may be ahead of it;
 * the fold then skips the events it already holds (by its position), so following from the checkpoint is exact.
 * With no checkpoint (the model never built) it folds the history itself from the first event.
 */
export class BalancesView {
  readonly name: string;
  readonly eventTypes: readonly string[];
  private readonly projection: Projection<BalanceDoc>;
  private readonly entries = new Map<string, Entry>();
  private readonly empty: PreparedJson;
  private readonly assetScale: number;
  private readonly seedPage: number;
  private seeded = false;
  private lastPosition: number | null = null;

  constructor(options: BalancesViewOptions) {
    this.assetScale = options.assetScale;
    this.seedPage = options.seedPage ?? SEED_PAGE;
    this.projection = balancesProjection({ assetScale: this.assetScale });
    this.name = this.projection.name;
    this.eventTypes = this.projection.eventTypes;
    this.empty = preparedJson(toApi(null, this.assetScale));
  }

  /**
   * Every balance event at or below it is applied; null: not seeded yet (0: seeded, no event applied yet). For read
   * freshness.
   */
  position(): number | null {
    return this.seeded ? (this.lastPosition ?? 0) : null;
  }

  /** Where the follower resumes: after this position (null: from the first event). */
  get checkpoint(): number | null {
    return this.lastPosition;
  }

  get isSeeded(): boolean {
    return this.seeded;
  }

  /** How many wallets it keeps. */
  get size(): number {
    return this.entries.size;
  }

  /** The answer for a wallet; one nothing has moved in yet has zero everywhere. */
  answer(kind: PartyType, id: string): PreparedJson {
    return this.entries.get(balanceDocId({ kind, id }))?.answer ?? this.empty;
  }

  /**
   * Reads the read store's model once: its checkpoint, then its documents of served wallets. Later calls do nothing.
   */
  async seed(readStore: ReadStore): Promise<void> {
    if (this.seeded) return;
    const checkpoint = await readStore.getCheckpoint(this.name);
    const docs: BalanceDoc[] = [];
    if (checkpoint !== null)
      for (const kind of SERVED_KINDS)
        for await (const doc of balancesOfKind(readStore, kind, this.seedPage)) docs.push(doc);
    for (const doc of docs) this.entries.set(doc.id, this.entry(doc));
    this.lastPosition = checkpoint;
    this.seeded = true;
  }

  /** Applies a batch of events in position order (an event already applied changes nothing). */
  apply(batch: readonly RecordedEvent[]): void {
    const served = batch.filter((event) =>
      SERVED_KINDS.includes((event.data as { wallet?: { kind?: PartyType } }).wallet?.kind as PartyType),
    );
    if (served.length > 0) {
      const docs = new Map<string, BalanceDoc | null>();
      for (const event of served)
        for (const id of this.projection.documentIds(event))
          if (!docs.has(id)) docs.set(id, this.entries.get(id)?.doc ?? null);
      const changed = new Set<string>();
      foldInMemory(this.projection, served, docs, changed);
      for (const id of changed) {
        const doc = docs.get(id);
        if (doc) this.entries.set(id, this.entry(doc));
      }
    }
    const last = batch.at(-1)?.position;
    if (last !== undefined && last > (this.lastPosition ?? -1)) this.lastPosition = last;
  }

  private entry(doc: BalanceDoc): Entry {
    return { doc, answer: preparedJson(toApi(doc, this.assetScale)) };
  }
}

/**
 * Keeps the view current: the follower's session first seeds it (once; after a failure it resumes from the
 * view's own position), then follows the balance events after it. Its supervision is on /health like the others'.
 */
export function followBalances(deps: {
  eventStore: EventStore;
  readStore: ReadStore;
  view: BalancesView;
  logger: ConsumerLogger;
  supervision?: Supervision;
}): Follower {
  const { view } = deps;
  const follower = new Follower({
    name: 'balances-view',
    eventStore: deps.eventStore,
    filter: { eventTypes: [...view.eventTypes] },
    checkpoint: checkpointIn(() => view.checkpoint),
    prepare: () => view.seed(deps.readStore),
    handle: async (batch) => view.apply(batch),
    logger: deps.logger,
    ...(deps.supervision ? { supervision: deps.supervision } : {}),
  });
  follower.start();
  return follower;
}
