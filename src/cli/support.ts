import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import type { Command } from 'commander';
import { SingleBar, Presets } from 'cli-progress';
import { openEventStore, openLedger, openStores, type Stores } from '../adapters/open-stores.ts';
import { loadConfig, type Config } from '../config.ts';
import type { PartyRef } from '../domain/parties.ts';
import type { BackOfficeDeps, RotationDeps } from '../commands/back-office.ts';
import { HeldCredentials, SECRETS_COLLECTION } from '../commands/held-credentials.ts';
import { embeddedSecretsKey } from '../adapters/secrets-key-file.ts';
import type { CommandContext } from '../commands/pipeline.ts';
import type { Ledger } from '../ports/ledger.ts';
import { attributeToOperator } from './operator-attribution.ts';
import { cliIO, stderrIsTerminal } from './io.ts';

/**
 * `wallet-ops`: the operator CLI, for people with direct access to the store. Every command takes
 * `--data-dir` and `--json`; with `--json` it prints exactly one JSON value on stdout. A refusal exits 1
 * with one line on stderr; a usage error exits 2.
 */
export interface CommonOptions {
  dataDir?: string;
  json?: boolean;
}

export class UsageError extends Error {}

export function parsePartyRef(value: string): PartyRef {
  const match = /^(distributor|merchant):(.+)$/.exec(value);
  if (!match) throw new UsageError(`--party must be distributor:ID or merchant:ID, got "${value.slice(0, 60)}"`);
  return { type: match[1] as PartyRef['type'], id: match[2]! };
}

/** Runs one action against the event store named by the options, prints its result, and closes the store. */
export async function withBackOffice<T>(options: CommonOptions, action: (deps: BackOfficeDeps) => Promise<T>, human: (result: T) => string): Promise<void> {
  const config = loadConfig(cliIO().env);
  const store = attributeToOperator(await openEventStore({ ...config, DATA_DIR: options.dataDir ?? config.DATA_DIR }), operatorActor());
  try {
    const result = await action({ store, clock: () => new Date(), assetScale: config.ASSET_SCALE });
    printResult(options, result, human);
  } finally {
    await store.close();
  }
}

/** Like withBackOffice, for commands that need both stores. */
export async function withStores<T>(options: CommonOptions, action: (stores: Stores, config: Config) => Promise<T>, human: (result: T) => string): Promise<void> {
  const config = loadConfig(cliIO().env);
  const opened = await openStores({ ...config, DATA_DIR: options.dataDir ?? config.DATA_DIR });
  const stores: Stores = { ...opened, eventStore: attributeToOperator(opened.eventStore, operatorActor()) };
  try {
    const result = await action(stores, config);
    printResult(options, result, human);
  } finally {
    await stores.close();
  }
}

/** A command's result on stdout: with --json exactly one JSON value, else the human line(s). */
export function printResult<T>(options: CommonOptions, result: T, human: (result: T) => string): void {
  cliIO().stdout(options.json ? `${JSON.stringify(result)}\n` : `${human(result)}\n`);
}

/** SECRETS_KEY, else the embedded key file beside the data directory (moved out of it, with a line on stderr, if an older version left it there). */
export function secretsKeyOf(options: CommonOptions, config: Config): Buffer {
  return config.SECRETS_KEY ?? embeddedSecretsKey(options.dataDir ?? config.DATA_DIR, {
    keyFile: config.SECRETS_KEY_FILE,
    onMoved: (from, to) => cliIO().stderr(`secrets key moved out of the data directory: ${from} -> ${to} (back it up apart from the data)\n`),
  });
}

/**
 * Like withStores, with the credential vault: the commands that approve a key, an endpoint or an access
 * request hold what they make there for its owner, who collects it with `key secret`, `webhook secret` or
 * `access password-half`, `--as` themselves.
 */
export async function withCredentials<T>(options: CommonOptions, action: (deps: RotationDeps & { secretsKey: Buffer }, stores: Stores, config: Config) => Promise<T>, human: (result: T) => string): Promise<void> {
  await withStores(options, async (stores, config) => {
    await stores.readStore.defineCollections([SECRETS_COLLECTION]);
    const secretsKey = secretsKeyOf(options, config);
    const clock = () => new Date();
    const credentials = new HeldCredentials({
      store: stores.readStore,
      key: secretsKey,
      clock,
      logger: { warn: (details, message) => cliIO().stderr(`warning: ${message} (${JSON.stringify(details)})\n`) },
    });
    return action({ store: stores.eventStore, clock, assetScale: config.ASSET_SCALE, credentials, secretsKey, secretRotationOverlapHours: config.SECRET_ROTATION_OVERLAP_HOURS, apiKeyEnvironment: config.API_KEY_ENVIRONMENT }, stores, config);
  }, human);
}

/**
 * A progress bar on a terminal (stderr, so stdout stays one JSON value); nothing when not a terminal, nor when
 * the run's stderr is injected (the CLI run in another program's process).
 */
export function progressBar(label: string): { update(value: number, total: number): void; stop(): void } {
  if (!stderrIsTerminal()) return { update() {}, stop() {} };
  const bar = new SingleBar({ format: `${label.padEnd(24)} [{bar}] {percentage}% | position {value}/{total} | {eta_formatted} left`, stream: process.stderr }, Presets.shades_classic);
  let started = false;
  return {
    update(value, total) {
      if (!started) bar.start(total, value);
      started = true;
      bar.setTotal(total);
      bar.update(value);
    },
    stop: () => bar.stop(),
  };
}

/** The operator running the CLI: the OS user (in a container without a passwd entry, $USER or the uid). */
export function operatorActor(): string {
  let name: string;
  try {
    name = userInfo().username;
  } catch {
    name = cliIO().env.USER ?? `uid-${process.getuid?.() ?? 'unknown'}`;
  }
  return `operator:${name}`;
}

export const operatorContext = (): CommandContext => ({ actor: operatorActor(), correlationId: randomUUID() });

export function common(command: Command): Command {
  return command
    .option('--data-dir <dir>', 'data directory of the embedded stores (default: $DATA_DIR, else ./data)')
    .option('--json', 'print exactly one JSON value on stdout');
}


/** Like withStores, with the ledger too. */
export async function withLedger<T>(options: CommonOptions, action: (stores: Stores, ledger: Ledger, config: Config) => Promise<T>, human: (result: T) => string): Promise<void> {
  await withStores(options, async (stores, config) => {
    const ledger = await openLedger({ dataDir: options.dataDir ?? config.DATA_DIR, selection: config });
    try {
      return await action(stores, ledger, config);
    } finally {
      await ledger.close();
    }
  }, human);
}

/** distributor:ID, merchant:ID or individual:PHONE, as a wallet. */
export function parseWalletRef(value: string): { kind: 'distributor' | 'merchant' | 'individual'; id: string } {
  const match = /^(distributor|merchant|individual):(.+)$/.exec(value);
  if (!match) throw new UsageError(`--party must be distributor:ID, merchant:ID or individual:PHONE, got "${value.slice(0, 60)}"`);
  return { kind: match[1] as 'distributor' | 'merchant' | 'individual', id: match[2]! };
}
