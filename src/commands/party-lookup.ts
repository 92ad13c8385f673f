import type { EventStore } from '../ports/event-store.ts';
import type {
  DistributorOnboarded,
  IndividualRegistered,
  MerchantOnboarded,
  ShortCodeClaimed,
} from '../domain/events.ts';
import type { PartyRef, PartyType } from '../domain/parties.ts';
import { streams } from '../domain/streams.ts';
import { LruMap } from '../shared/lru-map.ts';

export interface PartyInfo {
  type: PartyType;
  id: string;
  name: string;
  shortCode: string;
}

export interface IndividualInfo {
  phone: string;
  name: string;
}

/**
 * Finds parties and individuals by the keys the API uses (short code, phone, id) straight from their
 * streams. Onboarding facts never change, so what is found is cached (and can be read again once evicted);
 * what is not found is not cached, so a party onboarded a moment ago is found on the next request. Bounded:
 * individuals may number millions, and a long-running process would otherwise end up holding them all.
 */
export class PartyLookup {
  private readonly store: EventStore;
  private readonly parties: LruMap<string, PartyInfo>;
  private readonly shortCodes: LruMap<string, string>;
  private readonly individuals: LruMap<string, IndividualInfo>;

  constructor(store: EventStore, maxEntries = 100_000) {
    this.store = store;
    this.parties = new LruMap(maxEntries);
    this.shortCodes = new LruMap(maxEntries);
    this.individuals = new LruMap(maxEntries);
  }

  /** Entries cached, all kinds together. */
  get cached(): number {
    return this.parties.size + this.shortCodes.size + this.individuals.size;
  }

  async party(ref: PartyRef): Promise<PartyInfo | null> {
    const cacheKey = `${ref.type}:${ref.id}`;
    const cached = this.parties.get(cacheKey);
    if (cached) return cached;
    const [first] = await this.store.readStream(streams[ref.type](ref.id), { maxCount: 1 });
    if (!first) return null;
    const event = first as unknown as DistributorOnboarded | MerchantOnboarded;
    const info: PartyInfo = {
      type: ref.type,
      id: ref.id,
      name: event.data.name,
      shortCode: event.data.shortCode,
    };
    this.parties.set(cacheKey, info);
    return info;
  }

  async byShortCode(type: PartyType, shortCode: string): Promise<PartyInfo | null> {
    const cacheKey = `${type}:${shortCode}`;
    let partyID = this.shortCodes.get(cacheKey);
    if (!partyID) {
      const [claim] = await this.store.readStream(streams.shortCode(type, shortCode), { maxCount: 1 });
      if (!claim) return null;
      partyID = (claim as unknown as ShortCodeClaimed).data.partyID;
      this.shortCodes.set(cacheKey, partyID);
    }
    return this.party({ type, id: partyID });
  }

  async individual(phone: string): Promise<IndividualInfo | null> {
    const cached = this.individuals.get(phone);
    if (cached) return cached;
    const [first] = await this.store.readStream(streams.individual(phone), { maxCount: 1 });
    if (!first) return null;
    const info = { phone, name: (first as unknown as IndividualRegistered).data.name };
    this.individuals.set(phone, info);
    return info;
  }
}
