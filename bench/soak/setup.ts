import { cli, inParallel } from './cli.ts';
import type { SoakOptions } from './options.ts';

/** A distributor or merchant of the soak, with its console users and API keys. */
export interface Party {
  kind: 'distributor' | 'merchant';
  id: string;
  shortCode: string;
  makerEmail: string;
  checkerEmail: string;
  keys: SoakKey[];
}

export interface SoakKey {
  keyID: string;
  /** `<keyID>.<secret>`, as its maker collects it once with `key secret`. */
  apiKey: string;
  party: Party;
  /** `revoking` from the revocation request on (the load stops using it), `revoked` once approved. */
  state: 'active' | 'revoking' | 'revoked';
}

export interface World {
  dataDir: string;
  distributors: Party[];
  merchants: Party[];
  phones: string[];
  /** The treasury issuances of the float (approved at once; the executors carry them out). */
  issuances: string[];
}

export const FLOAT = '1000000';
const PASSWORD = 'soak password 1';
const SETUP_PARALLELISM = 3;

export const partyRef = (party: Party) => `${party.kind}:${party.id}`;
export const liveKeys = (party: Party) => party.keys.filter((key) => key.state === 'active');

/** Onboards everything through the operator CLI (`--json` forms), before the servers start. */
export async function seedWorld(dataDir: string, options: SoakOptions, log: (line: string) => void): Promise<World> {
  const specs = [
    ...Array.from({ length: options.distributors }, (_, i) => ({
      kind: 'distributor' as const,
      shortCode: String(7001 + i),
      name: `Soak Agents ${i + 1}`,
    })),
    ...Array.from({ length: options.merchants }, (_, i) => ({
      kind: 'merchant' as const,
      shortCode: String(8001 + i),
      name: `Soak Shop ${i + 1}`,
    })),
  ];
  const parties = await inParallel(specs, SETUP_PARALLELISM, async (spec): Promise<Party> => {
    const created = await cli(dataDir, [
      'party',
      `add-${spec.kind}`,
      '--name',
      spec.name,
      '--short-code',
      spec.shortCode,
    ]);
    const slug = `${spec.kind}${spec.shortCode}`;
    return {
      kind: spec.kind,
      id: created[`${spec.kind}ID`],
      shortCode: spec.shortCode,
      makerEmail: `maker@${slug}.soak`,
      checkerEmail: `checker@${slug}.soak`,
      keys: [],
    };
  });
  log(`setup: ${parties.length} parties onboarded`);

  const phones = Array.from(
    { length: options.individuals },
    (_, i) => `+234812345${String(1000 + i).padStart(4, '0')}`,
  );
  await inParallel(phones, SETUP_PARALLELISM, (phone, i) =>
    cli(dataDir, ['party', 'add-individual', '--phone', phone, '--name', `Soak Customer ${i + 1}`]),
  );
  log(`setup: ${phones.length} individuals registered`);

  const users = parties.flatMap((party) => [
    { party, email: party.makerEmail, roles: 'maker' },
    { party, email: party.checkerEmail, roles: 'checker' },
  ]);
  await inParallel(users, SETUP_PARALLELISM, (user) =>
    cli(dataDir, [
      'user',
      'add',
      '--party',
      partyRef(user.party),
      '--email',
      user.email,
      '--password',
      PASSWORD,
      '--roles',
      user.roles,
    ]),
  );
  log(`setup: ${users.length} makers and checkers added`);

  const keySlots = parties.flatMap((party) =>
    Array.from({ length: options.keysPerParty }, (_, i) => ({
      party,
      label: `soak ${party.kind} ${party.shortCode} key ${i + 1}`,
    })),
  );
  await inParallel(keySlots, SETUP_PARALLELISM, async ({ party, label }) => {
    const { keyID } = await cli(dataDir, [
      'key',
      'request',
      '--as',
      party.makerEmail,
      '--label',
      label,
      '--permissions',
      'read-balance,read-transactions,perform-operations',
      '--max-transaction-amount',
      '1000',
      '--max-daily-volume',
      '100000000',
      '--expires-in-days',
      '30',
    ]);
    await cli(dataDir, ['key', 'approve', keyID, '--as', party.checkerEmail]);
    // The secret waits for the maker who asked; the checker who approved never sees it.
    const { apiKey } = await cli(dataDir, ['key', 'secret', keyID, '--as', party.makerEmail]);
    party.keys.push({ keyID, apiKey, party, state: 'active' });
  });
  log(`setup: ${keySlots.length} API keys requested and approved`);

  const distributors = parties.filter((party) => party.kind === 'distributor');
  const issuances = await inParallel(
    distributors,
    SETUP_PARALLELISM,
    async (d) =>
      (await cli(dataDir, ['treasury', 'issue', '--to', partyRef(d), '--amount', FLOAT])).operationID as string,
  );
  log(`setup: ${FLOAT} issued to each distributor's float (${issuances.length} issuances, approved at once)`);

  return { dataDir, distributors, merchants: parties.filter((party) => party.kind === 'merchant'), phones, issuances };
}
