import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import type { Command } from 'commander';
import { SingleBar, Presets } from 'cli-progress';
import { openEventStore, openLedger, openStores, type Stores } from '../adapters/open-stores.ts';
import { loadConfig, tracingEnabled, type Config } from '../config.ts';
import { openTracing } from '../adapters/tracing.ts';
import type { Tracing } from '../ports/tracing.ts';
import type { PartyRef } from '../domain/parties.ts';
import type { BackOfficeDeps, RotationDeps } from '../commands/back-office.ts';
import { HeldCredentials, SECRETS_COLLECTION } from '../commands/held-credentials.ts';
import { embeddedSecretsKey } from '../adapters/secrets-key-file.ts';
import type { CommandContext } from '../commands/pipeline.ts';
import type { Ledger } from '../ports/ledger.ts';
import { attributeToOperator } from './operator-attribution.ts';
import { cliIO, stderrIsTerminal } from './io.ts';

/** The options every command takes (`common()`); program.ts says what they do. */
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
export async function withBackOffice<T>(
  options: CommonOptions,
  action: (deps: BackOfficeDeps) => Promise<T>,
  human: (result: T) => string,
): Promise<void> {
  const config = loadConfig(cliIO().env);
  const store = attributeToOperator(
    await openEventStore({ ...config, DATA_DIR: options.dataDir ?? config.DATA_DIR }),
    operatorActor(),
  );
  try {
    const result = await action({ store, clock: () => new Date(), assetScale: config.ASSET_SCALE });
    printResult(options, result, human);
  } finally {
    await store.close();
  }
}

/** Like withBackOffice, for commands that need both stores. */
export async function withStores<T>(
  options: CommonOptions,
  action: (stores: Stores, config: Config) => Promise<T>,
  human: (result: T) => string,
): Promise<void> {
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

/** The logger of a follower a command runs (to read a directory): a failed read it retries, on stderr. */
export const followerLogger = {
  info: () => {},
  warn: (_details: object, message: string) => cliIO().stderr(`warning: ${message}\n`),
};

/** A command's result as the CLI prints it: without the log position a reader of its own write waits for. */
export function withoutPosition<T extends { position: number }>(result: T): Omit<T, 'position'> {
  const { position: _position, ...rest } = result;
  return rest;
}

/** A command's result on stdout: with --json exactly one JSON value, else the human line(s). */
export function printResult<T>(options: CommonOptions, result: T, human: (result: T) => string): void {
  cliIO().stdout(options.json ? `${JSON.stringify(result)}\n` : `${human(result)}\n`);
}

/**
 * SECRETS_KEY, else the embedded key file beside the data directory (moved out of it, with a line on stderr, if an
 * older version left it there).
 */
export function secretsKeyOf(options: CommonOptions, config: Config): Buffer {
  return (
    config.SECRETS_KEY ??
    embeddedSecretsKey(options.dataDir ?? config.DATA_DIR, {
      keyFile: config.SECRETS_KEY_FILE,
      onMoved: (from, to) =>
        cliIO().stderr(
          `secrets key moved out of the data directory: ${from} -> ${to} (back it up apart from the data)\n`,
        ),
    })
  );
}

/**
 * Like withStores, with the credential vault: the commands that approve a key, an endpoint or an access
 * request hold what they make there for its owner, who collects it with `key secret`, `webhook secret` or
 * `access password-half`, `--as` themselves.
 */
export async function withCredentials<T>(
  options: CommonOptions,
  action: (deps: RotationDeps & { secretsKey: Buffer }, stores: Stores, config: Config) => Promise<T>,
  human: (result: T) => string,
): Promise<void> {
  await withStores(
    options,
    async (stores, config) => {
      await stores.readStore.defineCollections([SECRETS_COLLECTION]);
      const secretsKey = secretsKeyOf(options, config);
      const clock = () => new Date();
      const credentials = new HeldCredentials({
        store: stores.readStore,
        key: secretsKey,
        clock,
        logger: { warn: (details, message) => cliIO().stderr(`warning: ${message} (${JSON.stringify(details)})\n`) },
      });
      return action(
        {
          store: stores.eventStore,
          clock,
          assetScale: config.ASSET_SCALE,
          credentials,
          secretsKey,
          secretRotationOverlapHours: config.SECRET_ROTATION_OVERLAP_HOURS,
          apiKeyEnvironment: config.API_KEY_ENVIRONMENT,
        },
        stores,
        config,
      );
    },
    human,
  );
}

/** Progress of a long command: `update` as it goes, `done` once it succeeded (to 100%), `stop` in any case. */
export interface Progress {
  update(value: number, total: number): void;
  done(): void;
  stop(): void;
}

/** How often a long command prints a progress line when stderr is not a terminal (PROGRESS_INTERVAL_MS overrides). */
export const PROGRESS_INTERVAL_MS = 5_000;

/**
 * A long command's progress on stderr (stdout stays one JSON value). On a terminal a bar; elsewhere (kubectl exec
 * without -t, CI, nohup, a caller's injected stderr) a plain line at most every PROGRESS_INTERVAL_MS, so that a
 * run of minutes says how far it is and a run of a second says nothing. `unit` names what is counted.
 */
export function progressBar(label: string, unit = 'position'): Progress {
  return stderrIsTerminal() ? terminalBar(label, unit) : progressLines(label, unit);
}

function terminalBar(label: string, unit: string): Progress {
  const bar = new SingleBar(
    {
      format: `${label.padEnd(24)} [{bar}] {percentage}% | ${unit} {value}/{total} | {eta_formatted} left`,
      stream: process.stderr,
    },
    Presets.shades_classic,
  );
  let started = false;
  let total = 0;
  return {
    update(value, newTotal) {
      if (!started) bar.start(newTotal, value);
      started = true;
      total = newTotal;
      bar.setTotal(newTotal);
      bar.update(value);
    },
    // The last position read need not be the head (a rebuild reads only its projections' event types): a
    // finished run ends at 100%.
    done() {
      if (started) bar.update(total);
    },
    stop: () => bar.stop(),
  };
}

function progressLines(label: string, unit: string): Progress {
  const io = cliIO();
  const every = Number(io.env.PROGRESS_INTERVAL_MS ?? PROGRESS_INTERVAL_MS);
  const interval = Number.isFinite(every) && every >= 0 ? every : PROGRESS_INTERVAL_MS;
  const started = Date.now();
  // The rate is measured from the first update (a rebuild may start past position 0).
  let first: { value: number; at: number } | undefined;
  let lastLine = started;
  let printed = false;
  let last = { value: 0, total: 0 };
  const line = (value: number, total: number, now: number) => {
    const percent = total > 0 ? Math.floor((value / total) * 100) : 100;
    const rate = first ? (value - first.value) / Math.max(now - first.at, 1) : 0;
    const left =
      value >= total ? 'done' : rate > 0 ? `${Math.ceil((total - value) / rate / 1000)} s left` : 'time left unknown';
    io.stderr(`${label}: ${unit} ${value}/${total} (${percent}%), ${left}\n`);
    lastLine = now;
    printed = true;
  };
  let stopped = false;
  return {
    update(value, total) {
      const now = Date.now();
      first ??= { value, at: now };
      last = { value, total };
      if (now - lastLine >= interval) line(value, total, now);
    },
    // A run that printed progress ends with its 100% line; one too short to print any stays silent.
    done() {
      if (printed && !stopped) line(last.total, last.total, Date.now());
      stopped = true;
    },
    stop() {
      stopped = true;
    },
  };
}

/**
 * The CLI's tracing, as a server's: on when the OTEL_* variables ask for it (docs/operations.md, "Tracing"), so that
 * a checker's decision taken here joins the operation's trace. Its spans are exported before the command returns.
 */
export async function withCliTracing<T>(action: (tracing: Tracing) => Promise<T>): Promise<T> {
  const config = loadConfig(cliIO().env);
  const tracing = await openTracing({ enabled: tracingEnabled(config), serviceName: config.OTEL_SERVICE_NAME });
  try {
    return await action(tracing);
  } finally {
    await tracing.shutdown();
  }
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
export async function withLedger<T>(
  options: CommonOptions,
  action: (stores: Stores, ledger: Ledger, config: Config) => Promise<T>,
  human: (result: T) => string,
): Promise<void> {
  await withStores(
    options,
    async (stores, config) => {
      const ledger = await openLedger({ dataDir: options.dataDir ?? config.DATA_DIR, selection: config });
      try {
        return await action(stores, ledger, config);
      } finally {
        await ledger.close();
      }
    },
    human,
  );
}

/** distributor:ID, merchant:ID or individual:PHONE, as a wallet. */
export function parseWalletRef(value: string): { kind: 'distributor' | 'merchant' | 'individual'; id: string } {
  const match = /^(distributor|merchant|individual):(.+)$/.exec(value);
  if (!match)
    throw new UsageError(
      `--party must be distributor:ID, merchant:ID or individual:PHONE, got "${value.slice(0, 60)}"`,
    );
  return { kind: match[1] as 'distributor' | 'merchant' | 'individual', id: match[2]! };
}
