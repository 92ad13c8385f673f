import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { PartyLookup } from '../../src/commands/party-lookup.ts';
import { streams } from '../../src/domain/streams.ts';
import type { EventStore } from '../../src/ports/event-store.ts';
import { tempDir } from '../support/temp-dir.ts';

describe('the party lookup', () => {
  let dir: ReturnType<typeof tempDir>;
  let store: EventStore;
  const phones = Array.from({ length: 5 }, (_, i) => `+23481000000${i}`);

  beforeEach(async () => {
    dir = tempDir('party-lookup-');
    store = openSqliteEventStore({ file: join(dir.path, 'events.sqlite') });
    for (const [i, phone] of phones.entries()) {
      await store.append(
        streams.individual(phone),
        [
          {
            type: 'IndividualRegistered',
            data: { phone, name: `Customer ${i}`, registeredAt: '2026-01-01T00:00:00.000Z' },
          },
        ],
        'no_stream',
      );
    }
  });
  afterEach(async () => {
    await store.close();
    dir.cleanup();
  });

  it('given more individuals looked up than its bound, then it keeps no more than the bound, and one it let go is found again', async () => {
    const lookup = new PartyLookup(store, 2);

    for (const phone of phones)
      expect(await lookup.individual(phone)).toEqual({ phone, name: `Customer ${phones.indexOf(phone)}` });

    expect(lookup.cached).toBe(2);
    expect(await lookup.individual(phones[0]!)).toEqual({ phone: phones[0], name: 'Customer 0' });
    expect(lookup.cached).toBe(2);
  });

  it('given an individual not registered yet, when looked up, then it is not found, and once registered it is', async () => {
    const lookup = new PartyLookup(store);
    expect(await lookup.individual('+2348100000099')).toBeNull();
    await store.append(
      streams.individual('+2348100000099'),
      [
        {
          type: 'IndividualRegistered',
          data: { phone: '+2348100000099', name: 'Late', registeredAt: '2026-01-02T00:00:00.000Z' },
        },
      ],
      'no_stream',
    );
    expect(await lookup.individual('+2348100000099')).toEqual({ phone: '+2348100000099', name: 'Late' });
  });
});
