import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestSystem, waitFor, type TestSystem } from '../support/system.ts';
import { issueFloat } from '../../src/commands/channel-operations.ts';
import { PartyLookup } from '../../src/commands/party-lookup.ts';
import { decideOperation } from '../../src/commands/operation-handlers.ts';
import { actingUser, findUserByEmail, userContext } from '../../src/commands/back-office.ts';

describe('smoke executor', () => {
  let sys: TestSystem;
  beforeAll(async () => { sys = await startTestSystem(); });
  afterAll(async () => sys.close());

  it('issues, creates, approves, completes', async () => {
    const d = await sys.party('distributor');
    const phone = await sys.individual('+2348123456781');
    const { apiKey } = await d.key();
    const deps = { store: sys.system.stores.eventStore, lookup: new PartyLookup(sys.system.stores.eventStore), clock: () => new Date(), assetScale: 2 };
    await issueFloat(deps, { to: d.ref, amount: '1000' }, { actor: 'operator:test', correlationId: randomUUID() });
    await waitFor(async () => (await call(sys.baseUrl, 'GET', `/api/v1/distributors/${d.ref.id}/balance`, { apiKey })).body.balance === '1000.00');
    const r = await call(sys.baseUrl, 'POST', `/api/v1/distributors/${d.ref.id}/operations`, { apiKey, body: { operationType: 'cash-in', amount: '100', phoneTo: phone } });
    expect(r.status).toBe(200);
    const checker = await findUserByEmail(sys.backOffice, d.checkerEmail);
    await decideOperation(sys.backOffice, actingUser(checker), r.body.operationID, { type: 'approve' }, userContext(checker, randomUUID()));
    await waitFor(async () => (await call(sys.baseUrl, 'GET', `/api/v1/distributors/${d.ref.id}/operations`, { apiKey })).body[0]?.status === 'completed');
    const list = await call(sys.baseUrl, 'GET', `/api/v1/distributors/${d.ref.id}/operations`, { apiKey });
    console.log(list.body);
    expect((await call(sys.baseUrl, 'GET', `/api/v1/distributors/${d.ref.id}/balance`, { apiKey })).body.balance).toBe('900.00');
    expect(await sys.system.ledger.balance(`individual:${phone}`)).toBe('100');
  });
});
