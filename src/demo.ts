import { randomUUID } from 'node:crypto';
import type { EventStore } from './ports/event-store.ts';
import {
  addUser,
  approveApiKey,
  collectCredential,
  findUserByEmail,
  onboardParty,
  registerIndividual,
  requestApiKey,
  type BackOfficeDeps,
  type CredentialDeps,
} from './commands/back-office.ts';
import type { HeldCredentials } from './commands/held-credentials.ts';
import { issueFloat } from './commands/channel-operations.ts';
import { PartyLookup } from './commands/party-lookup.ts';
import { DomainError } from './domain/errors.ts';
import { claimDemoStore } from './demo-store.ts';
import type { PartyRef } from './domain/parties.ts';

/**
 * `npm start -- --demo`: a distributor with float, two merchants, two individuals, a maker and a
 * checker per party, and a fresh API key for the distributor and for a merchant. Seeding twice reuses the
 * parties and issues new keys (a key's secret is shown once, so old ones cannot be printed again). Only into
 * an empty store or one the demo marked: any other is refused with DemoStoreRefusedError.
 */
export interface DemoSeed {
  distributor: PartyRef;
  merchant: PartyRef;
  distributorKey: string;
  merchantKey: string;
  phones: string[];
}

const operator = () => ({ actor: 'operator:demo', correlationId: randomUUID() });
const DEMO_PASSWORD = 'demo password 1';

async function partyByShortCode(
  lookup: PartyLookup,
  type: 'distributor' | 'merchant',
  code: string,
  name: string,
  deps: BackOfficeDeps,
): Promise<{ ref: PartyRef; created: boolean }> {
  const found = await lookup.byShortCode(type, code);
  if (found) return { ref: { type, id: found.id }, created: false };
  const { partyID } = await onboardParty(deps, { partyType: type, name, shortCode: code }, operator());
  return { ref: { type, id: partyID }, created: true };
}

async function ensure<T>(action: () => Promise<T>): Promise<T | null> {
  try {
    return await action();
  } catch (error) {
    if (error instanceof DomainError && ['EMAIL_TAKEN', 'PHONE_TAKEN', 'ALREADY_EXISTS'].includes(error.code))
      return null;
    throw error;
  }
}

/**
 * The demo's maker asks, its checker approves, and the maker collects the secret: the same one-time path as anyone's.
 */
async function freshKey(
  deps: CredentialDeps,
  makerEmail: string,
  checkerEmail: string,
  label: string,
): Promise<string> {
  const maker = await findUserByEmail(deps, makerEmail);
  const { keyID } = await requestApiKey(
    deps,
    maker,
    {
      label,
      permissions: 'read-balance,read-transactions,perform-operations',
      maxTransactionAmount: '5000',
      maxDailyVolume: '50000',
    },
    randomUUID(),
  );
  await approveApiKey(deps, await findUserByEmail(deps, checkerEmail), keyID, randomUUID());
  return (await collectCredential(deps, maker, { kind: 'api-key', id: keyID })).apiKey;
}

export async function seedDemo(store: EventStore, assetScale: number, credentials: HeldCredentials): Promise<DemoSeed> {
  // Only into an empty store (which it marks) or its own: refused before any write otherwise (src/demo-store.ts).
  await claimDemoStore(store, new Date());
  // A demo's keys are a sandbox's, whatever the deployment says: wo_test_….
  const deps: CredentialDeps = { store, clock: () => new Date(), assetScale, credentials, apiKeyEnvironment: 'test' };
  const lookup = new PartyLookup(store);
  const distributor = await partyByShortCode(lookup, 'distributor', '1001', 'Demo Agents Ltd', deps);
  const merchant = await partyByShortCode(lookup, 'merchant', '2001', 'Corner Shop', deps);
  await partyByShortCode(lookup, 'merchant', '2002', 'Market Stall', deps);
  const phones = ['+2348123456781', '+2348123456782'];
  for (const [i, phone] of phones.entries())
    await ensure(() => registerIndividual(deps, { phone, name: `Demo Customer ${i + 1}` }, operator()));
  for (const [party, slug] of [
    [distributor.ref, 'agents'],
    [merchant.ref, 'shop'],
  ] as const) {
    await ensure(() =>
      addUser(deps, { party, email: `maker@${slug}.demo`, password: DEMO_PASSWORD, roles: ['maker'] }, operator()),
    );
    await ensure(() =>
      addUser(deps, { party, email: `checker@${slug}.demo`, password: DEMO_PASSWORD, roles: ['checker'] }, operator()),
    );
  }
  // Two administrators: every change that widens access is requested by one and approved by the other.
  for (const email of ['admin@platform.demo', 'admin2@platform.demo']) {
    await ensure(() =>
      addUser(deps, { party: null, email, password: DEMO_PASSWORD, roles: [], platformAdmin: true }, operator()),
    );
  }
  const channel = { store, lookup, clock: () => new Date(), assetScale };
  // The float; individuals get money the way they would, by cash-in from the distributor (see the curl lines).
  if (distributor.created) await issueFloat(channel, { to: distributor.ref, amount: '100000' }, operator());
  return {
    distributor: distributor.ref,
    merchant: merchant.ref,
    distributorKey: await freshKey(deps, 'maker@agents.demo', 'checker@agents.demo', 'demo distributor key'),
    merchantKey: await freshKey(deps, 'maker@shop.demo', 'checker@shop.demo', 'demo merchant key'),
    phones,
  };
}

/**
 * Ready-to-paste commands for the seeded demo, in an order that works: the two cash-ins are approved (and so
 * carried out) before the individual and the merchant spend what they brought. Each create's operationID is kept in
 * a shell variable for its approval. test/demo-instructions.e2e.test.ts runs them against a demo server.
 */
export function demoInstructions(seed: DemoSeed, baseUrl: string, dataDir: string): string {
  const d = `${baseUrl}/api/v1/distributors/${seed.distributor.id}`;
  const m = `${baseUrl}/api/v1/merchants/${seed.merchant.id}`;
  const json = `-H 'Content-Type: application/json'`;
  const id = `| sed -n 's/.*"operationID":"\\([^"]*\\)".*/\\1/p'`;
  const dataDirArg = `--data-dir '${dataDir}'`;
  return [
    '',
    'Demo data is ready. API keys (shown once):',
    `  DKEY='${seed.distributorKey}'`,
    `  MKEY='${seed.merchantKey}'`,
    '',
    'Try, in this order (a shell keeps each operationID for the lines after it):',
    `  curl -s ${d}/balance -H "Authorization: Bearer $DKEY"`,
    `  OP1=$(curl -s -X POST ${d}/operations -H "Authorization: Bearer $DKEY" ${json} -d ` +
      `'{"operationType":"cash-in","amount":"250.00","phoneTo":"${seed.phones[0]}","memo":"demo"}' ${id}); echo ` +
      '$OP1',
    `  OP2=$(curl -s -X POST ${d}/operations -H "Authorization: Bearer $DKEY" ${json} -d ` +
      `'{"operationType":"cash-in","amount":"300.00","merchantToShortCode":"2001"}' ${id}); echo $OP2`,
    `  curl -s ${d}/operations -H "Authorization: Bearer $DKEY"    # both pending: a checker decides`,
    `  npx wallet-ops operation approve $OP1 --as checker@agents.demo ${dataDirArg}`,
    `  npx wallet-ops operation approve $OP2 --as checker@agents.demo ${dataDirArg}`,
    `  curl -s ${d}/operations -H "Authorization: Bearer $DKEY"    # a moment later: completed`,
    `  curl -s ${m}/operations -H "Authorization: Bearer $MKEY"    # the merchant received 300.00`,
    `  curl -s -X POST ${m}/operations -H "Authorization: Bearer $MKEY" ${json} -d ` +
      `'{"operationType":"pay-merchant","amount":"20.00","merchantToShortCode":"2002"}'`,
    `  npx wallet-ops individual pay --from ${seed.phones[0]} --to-merchant 2001 --amount 15 --memo "coffee" ` +
      `${dataDirArg}    # from the 250.00 of OP1`,
    `  curl -s "${m}/payments?search=8123" -H "Authorization: Bearer $MKEY"`,
    `  curl -s ${baseUrl}/api/v1/docs    # the API reference`,
    `  ${baseUrl}/console    # the web console: maker@agents.demo, checker@agents.demo, admin@platform.demo, ` +
      `password '${DEMO_PASSWORD}'`,
    '',
  ].join('\n');
}
