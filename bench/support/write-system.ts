/**
 * The write benches' system: the write API alone (as it runs behind a load balancer in production;
 * projections and executor elsewhere) with PARTIES distributors, each with its own perform-operations key and
 * a large balance, and one create-operation request per key. Shared by bench:write and bench:profile.
 */
import type { Part } from '../../src/wallet-ops.ts';
import { startTestSystem, type TestSystem } from '../../test/support/system.ts';
import type { LoadSpec } from './load-generator.ts';

export async function writeSystem(parties: number, env: Record<string, string> = {}, parts: readonly Part[] = ['write-api']): Promise<{ sys: TestSystem; requests: LoadSpec['requests'] }> {
  const sys = await startTestSystem(env, undefined, parts);
  const phone = await sys.individual('+2348123456781', 'Bench Customer');
  const requests: LoadSpec['requests'] = [];
  for (let i = 0; i < parties; i++) {
    const distributor = await sys.party('distributor');
    const { apiKey } = await distributor.key({ permissions: 'perform-operations' });
    await sys.credit(distributor.wallet, '1000000000.00');
    requests.push({
      method: 'POST',
      path: `/api/v1/distributors/${distributor.ref.id}/operations`,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({ operationType: 'cash-in', amount: '1.00', phoneTo: phone, memo: 'bench' }),
    });
  }
  return { sys, requests };
}
