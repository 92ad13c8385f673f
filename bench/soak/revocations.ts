import { cli } from './cli.ts';
import { answerLabel, balancePath, request, type Answer } from './http.ts';
import { liveKeys, type Party, type SoakKey, type World } from './setup.ts';
import type { RevocationRecord, SoakStats } from './stats.ts';
import { pause, pick, sleep } from './util.ts';

/** A revoked key must be refused (401) within this long after the checker approved the revocation. */
export const REVOCATION_GRACE_MS = 2000;
/** How long the key is probed after the approval: past the grace, to catch a key that comes back. */
const PROBE_MS = 4000;
/** After that, probing goes on until a first 401 is seen, at most this long. */
const PROBE_CAP_MS = 30_000;
/** Gentle: every failed authentication counts against the address (AUTH_FAILURE_LIMIT, 30 a minute by default). */
const PROBE_EVERY_MS = 250;

/**
 * What an answer says about a key: 401 refuses it, and so does a 429 of the failed-authentication limit (the
 * address made too many failed attempts: this one failed too). Any other answer, a 429 of the key's own rate
 * included, means the key was accepted. No answer (the API was down) says nothing.
 */
export function keyVerdict(answer: Answer): 'refused' | 'accepted' | 'unanswered' {
  if (answer.status === null) return 'unanswered';
  if (answer.status === 401) return 'refused';
  const policies: unknown = answer.body?.['violated-policies'];
  if (answer.status === 429 && Array.isArray(policies) && policies.includes('failed-auth')) return 'refused';
  return 'accepted';
}

/** A key to revoke: from a party that keeps at least one other live key, the parties taken in turn. */
function chooseKey(world: World, round: number): SoakKey | undefined {
  const parties: Party[] = [...world.distributors, ...world.merchants].filter((party) => liveKeys(party).length >= 2);
  if (parties.length === 0) return undefined;
  return pick(liveKeys(parties[round % parties.length]!));
}

/** Probes the key with GET balance after the approval: when the first 401 came, and whether it was accepted after the grace. */
async function probe(target: () => string, key: SoakKey, record: RevocationRecord): Promise<void> {
  for (;;) {
    const elapsed = Date.now() - record.approvedAt;
    if (elapsed > PROBE_CAP_MS || (elapsed > PROBE_MS && record.first401Ms !== null)) return;
    const answer = await request(target(), 'GET', balancePath(key.party), key.apiKey, undefined, 2000);
    const at = Date.now() - record.approvedAt;
    const verdict = keyVerdict(answer);
    if (verdict === 'refused') record.first401Ms ??= at;
    else if (verdict === 'unanswered') record.unanswered += 1;
    else if (at > REVOCATION_GRACE_MS) {
      record.acceptedAfterGrace += 1;
      record.acceptedAnswers.push(answerLabel(answer));
    }
    await sleep(PROBE_EVERY_MS);
  }
}

/** One revocation: the maker requests it, the checker approves it (CLI), then the key is probed. */
async function revoke(target: () => string, world: World, key: SoakKey, stats: SoakStats): Promise<void> {
  key.state = 'revoking'; // the load stops using it now
  const party = key.party;
  try {
    await cli(world.dataDir, [
      'key',
      'revoke',
      key.keyID,
      '--as',
      party.makerEmail,
      '--reason',
      'soak: revoked mid-run',
    ]);
    await cli(world.dataDir, ['key', 'approve-revocation', key.keyID, '--as', party.checkerEmail]);
  } catch (error) {
    stats.problem(
      `revocation of key ${key.keyID} could not be carried out through the CLI: ${error instanceof Error ? error.message : String(error)}`,
    );
    return;
  }
  key.state = 'revoked';
  const record: RevocationRecord = {
    keyID: key.keyID,
    party: `${party.kind}:${party.shortCode}`,
    approvedAt: Date.now(),
    first401Ms: null,
    acceptedAfterGrace: 0,
    acceptedAnswers: [],
    unanswered: 0,
    finalStatus: null,
  };
  stats.revocations.push(record);
  await probe(target, key, record);
}

/** Spreads `count` revocations evenly over the load phase; `target` names the API process of each probe. */
export async function revoker(
  target: () => string,
  world: World,
  stats: SoakStats,
  count: number,
  loadMs: number,
  signal: AbortSignal,
): Promise<void> {
  const started = Date.now();
  for (let round = 0; round < count && !signal.aborted; round++) {
    await pause(started + ((round + 1) * loadMs) / (count + 1) - Date.now(), signal);
    if (signal.aborted) return;
    const key = chooseKey(world, round);
    if (!key) {
      stats.notes.push(`revocation ${round + 1}: no party has two live keys left (--keys-per-party)`);
      return;
    }
    await revoke(target, world, key, stats);
  }
}

/** Every revoked key, once more at the end, on every API process: each must be refused by each. */
export async function checkRevokedKeys(baseUrls: string[], world: World, stats: SoakStats): Promise<void> {
  const revoked = [...world.distributors, ...world.merchants]
    .flatMap((party) => party.keys)
    .filter((key) => key.state === 'revoked');
  for (const baseUrl of baseUrls) {
    const where = baseUrls.length > 1 ? ` (${baseUrl})` : '';
    for (const key of revoked) {
      const answer = await finalAnswer(baseUrl, key);
      const record = stats.revocations.find((r) => r.keyID === key.keyID);
      if (record && (record.finalStatus === null || record.finalStatus === 401)) record.finalStatus = answer.status;
      if (keyVerdict(answer) !== 'refused')
        stats.problem(`revoked key ${key.keyID} got ${answerLabel(answer)} at the end instead of 401${where}`);
      else if (answer.status !== 401)
        stats.notes.push(
          `revoked key ${key.keyID} got ${answerLabel(answer)} at the end: refused by the failed-authentication limit${where}`,
        );
    }
  }
  for (const record of stats.revocations) {
    if (record.acceptedAfterGrace > 0) {
      stats.problem(
        `revoked key ${record.keyID} (${record.party}) was accepted ${record.acceptedAfterGrace} time(s) more than ${REVOCATION_GRACE_MS} ms after its revocation was approved ` +
          `(${[...new Set(record.acceptedAnswers)].join(', ')}; first refusal after ${record.first401Ms ?? 'never'} ms)`,
      );
    } else if (record.first401Ms === null) {
      stats.problem(
        `revoked key ${record.keyID} (${record.party}): no 401 within ${PROBE_CAP_MS / 1000} s of its revocation (${record.unanswered} requests unanswered)`,
      );
    } else if (record.first401Ms > REVOCATION_GRACE_MS) {
      stats.notes.push(
        `revoked key ${record.keyID}: first 401 after ${record.first401Ms} ms, but the API did not answer before (${record.unanswered} requests unanswered: it was being restarted)`,
      );
    }
  }
}

/**
 * The key's answer once the load is over: again while the API does not answer, and after the Retry-After of
 * the failed-authentication limit, so that a plain 401 is seen whenever the limit allows it.
 */
const FAILED_AUTH_REFILL_MS = 2500; // 30 failures a minute: one comes back every 2 s

async function finalAnswer(baseUrl: string, key: SoakKey): Promise<Answer> {
  let answer = await request(baseUrl, 'GET', balancePath(key.party), key.apiKey);
  for (let retry = 0; retry < 10 && (answer.status === null || answer.status === 429); retry++) {
    await sleep(answer.status === 429 ? FAILED_AUTH_REFILL_MS : 500);
    answer = await request(baseUrl, 'GET', balancePath(key.party), key.apiKey);
  }
  return answer;
}
