import { StoreCorruptedError } from '../ports/store-corrupted.ts';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { allProjections } from '../projections/index.ts';
import { projectionStatus, rebuildProjections, type RebuildResult } from '../projections/rebuild.ts';
import { EXECUTOR_CHECKPOINT } from '../executor/executor.ts';
import { KEY_REVOCATION_CHECKPOINT, KEY_REVOCATION_EVENT_TYPES } from '../executor/key-revocation.ts';
import { DomainError } from '../domain/errors.ts';
import {
  approveApiKey,
  approveApiKeyRotation,
  collectCredential,
  decideOnApiKey,
  decideOnApiKeyRotation,
  findUserByEmail,
  onboardParty,
  registerIndividual,
  requestApiKey,
  requireParty,
  type BackOfficeDeps,
  type KeyDecision,
  actingUser,
  userContext,
} from '../commands/back-office.ts';
import { decideOperation } from '../commands/operation-handlers.ts';
import { refuseControlCharacters, requiredText } from '../domain/text.ts';
import {
  common,
  followerLogger,
  operatorContext,
  parsePartyRef,
  progressBar,
  UsageError,
  withBackOffice,
  withCliTracing,
  withCredentials,
  withoutPosition,
  withStores,
  type CommonOptions,
} from './support.ts';
import type { Tracing } from '../ports/tracing.ts';
import { loadUserState } from '../commands/user-admin.ts';
import { registerMoneyCommands } from './money-commands.ts';
import { registerUserCommands } from './user-commands.ts';
import { registerWebhookCommands } from './webhook-commands.ts';
import { registerRotationCommands } from './rotation-commands.ts';
import { registerEventCommands } from './event-commands.ts';
import { registerAuditCommands } from './audit-commands.ts';
import { registerDemoCommands } from './demo-commands.ts';
import { registerPostgresCommand } from './postgres-command.ts';
import { DemoStoreRefusedError } from '../demo-store.ts';
import { registerLedgerCommands } from './ledger-commands.ts';
import type { Part } from '../wallet-ops.ts';

/**
 * The parts `serve` runs, for its help: src/wallet-ops.ts's ALL_PARTS, which the CLI loads only to serve
 * (test/cli/serve-help.test.ts).
 */
export const SERVE_PARTS = [
  'write-api',
  'read-api',
  'projections',
  'executor',
  'webhooks',
] as const satisfies readonly Part[];
import { API_KEY_FILTER, ApiKeyDirectory, followApiKeys } from '../projections/api-key-directory.ts';
import { followToHead } from '../projections/directory-reads.ts';
import { cliIO, isProcessIO, PROCESS_IO, withCliIO, type CliIO } from './io.ts';

/** The package's version: package.json sits two levels up from both src/cli and the image's dist/cli. */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string })
    .version;
}

export function buildCli(): Command {
  const program = new Command('wallet-ops')
    .description(
      'Operator CLI of wallet-ops, straight on the stores: parties, users, API keys, operations, money, read ' +
        'models, servers.',
    )
    .version(packageVersion(), '-V, --version', 'print the version of wallet-ops')
    .showHelpAfterError()
    .exitOverride()
    .configureOutput(commanderOutput(cliIO()))
    .hook('preAction', (_program, action) => refuseControlsIn(action));

  const party = program.command('party').description('onboard distributors, merchants and individuals');
  for (const partyType of ['distributor', 'merchant'] as const) {
    common(party.command(`add-${partyType}`))
      .description(`onboard a ${partyType}`)
      .requiredOption('--name <name>', `the ${partyType}'s name`)
      .requiredOption('--short-code <code>', 'short code, unique among ' + partyType + 's (1 to 9 digits)')
      .action(async (opts: CommonOptions & { name: string; shortCode: string }) =>
        withBackOffice(
          opts,
          async (deps) => {
            const { partyID } = await onboardParty(
              deps,
              { partyType, name: opts.name, shortCode: opts.shortCode },
              operatorContext(),
            );
            return partyType === 'distributor' ? { distributorID: partyID } : { merchantID: partyID };
          },
          (result) => `${partyType} onboarded: ${Object.values(result)[0]}`,
        ),
      );
  }
  common(party.command('add-individual'))
    .description('register an individual wallet holder')
    .requiredOption('--phone <phone>', 'phone in international format, e.g. +2348123456781')
    .requiredOption('--name <name>', 'the individual’s name')
    .action(async (opts: CommonOptions & { phone: string; name: string }) =>
      withBackOffice(
        opts,
        (deps) => registerIndividual(deps, { phone: opts.phone, name: opts.name }, operatorContext()),
        (r) => `individual registered: ${r.phone}`,
      ),
    );

  registerUserCommands(program);
  registerLedgerCommands(program);

  const key = program.command('key').description('the API-key lifecycle (maker-checker)');
  common(key.command('request'))
    .description('a maker requests an API key for their party')
    .requiredOption('--as <email>', 'the maker')
    .requiredOption('--label <label>', 'descriptive name')
    .requiredOption('--permissions <list>', 'read-balance,read-transactions,perform-operations')
    .option('--max-transaction-amount <amount>', 'maximum per operation')
    .option('--max-daily-volume <amount>', 'maximum total per day')
    .option('--allowed-ips <list>', 'comma-separated addresses or CIDR ranges')
    .option('--expires-in-days <days>', 'days from approval until expiry', '365')
    .action(
      async (
        opts: CommonOptions & {
          as: string;
          label: string;
          permissions: string;
          maxTransactionAmount?: string;
          maxDailyVolume?: string;
          allowedIps?: string;
          expiresInDays: string;
        },
      ) =>
        withBackOffice(
          opts,
          async (deps) => {
            const maker = await findUserByEmail(deps, opts.as);
            const terms = {
              label: opts.label,
              permissions: opts.permissions,
              maxTransactionAmount: opts.maxTransactionAmount,
              maxDailyVolume: opts.maxDailyVolume,
              allowedIPs: opts.allowedIps,
              expiresInDays: opts.expiresInDays,
            };
            return withoutPosition(await requestApiKey(deps, maker, terms, randomUUID()));
          },
          (r) => `key requested: ${r.keyID} (pending approval by a checker)`,
        ),
    );
  common(key.command('approve'))
    .description(
      'a checker approves a pending key; its secret waits for the maker who requested it (`key secret`), and is ' +
        'never shown to the checker',
    )
    .argument('<keyID>')
    .requiredOption('--as <email>', 'the checker')
    .action(async (keyID: string, opts: CommonOptions & { as: string }) =>
      withCredentials(
        opts,
        async (deps) => {
          const { heldFor } = await approveApiKey(deps, await findUserByEmail(deps, opts.as), keyID, randomUUID());
          return { keyID, state: 'active', secretHeldFor: (await loadUserState(deps, heldFor)).email };
        },
        (r) =>
          `key approved: ${r.keyID}\nits secret waits for ${r.secretHeldFor}, who collects it once with: ` +
          `wallet-ops key secret ${r.keyID} --as ${r.secretHeldFor}`,
      ),
    );
  common(key.command('secret'))
    .description('the maker who requested an approved key collects its secret, once (within 24 hours of the approval)')
    .argument('<keyID>')
    .requiredOption('--as <email>', 'the maker who requested the key')
    .action(async (keyID: string, opts: CommonOptions & { as: string }) =>
      withCredentials(
        opts,
        async (deps) => {
          const { apiKey } = await collectCredential(deps, await findUserByEmail(deps, opts.as), {
            kind: 'api-key',
            id: keyID,
          });
          return { keyID, apiKey };
        },
        (r) => `API key ${r.keyID} (shown once, store it now): ${r.apiKey}`,
      ),
    );

  const decisions: Array<
    [
      name: string,
      description: string,
      reason: 'required' | 'optional' | 'none',
      toDecision: (reason?: string) => KeyDecision,
    ]
  > = [
    [
      'reject',
      'a checker rejects a pending key',
      'optional',
      (reason) => ({ type: 'RejectApiKey', reason: reason ?? null }),
    ],
    [
      'withdraw',
      'the maker who requested a pending key takes the request back',
      'none',
      () => ({ type: 'WithdrawApiKeyRequest' }),
    ],
    [
      'revoke',
      'a maker asks for an active key to be revoked',
      'required',
      (reason) => ({ type: 'RequestApiKeyRevocation', reason }),
    ],
    [
      'approve-revocation',
      'a checker approves a revocation: the key stops working for good',
      'none',
      () => ({ type: 'ApproveApiKeyRevocation' }),
    ],
    [
      'reject-revocation',
      'a checker rejects a revocation: the key stays active',
      'optional',
      (reason) => ({ type: 'RejectApiKeyRevocation', reason: reason ?? null }),
    ],
  ];
  for (const [name, description, reason, toDecision] of decisions) {
    const command = common(key.command(name))
      .description(description)
      .argument('<keyID>')
      .requiredOption('--as <email>', 'the acting user');
    if (reason === 'required') command.requiredOption('--reason <text>', 'why');
    if (reason === 'optional') command.option('--reason <text>', 'why');
    command.action(async (keyID: string, opts: CommonOptions & { as: string; reason?: string }) =>
      withBackOffice(
        opts,
        async (deps) =>
          withoutPosition(
            await decideOnApiKey(
              deps,
              await findUserByEmail(deps, opts.as),
              keyID,
              toDecision(opts.reason),
              randomUUID(),
            ),
          ),
        (r) => `key ${r.keyID}: ${r.state}`,
      ),
    );
  }
  registerRotationCommands(key, {
    command: 'key',
    noun: 'key',
    idField: 'keyID',
    decide: (deps, _config, user, keyID, decision, correlationId) =>
      decideOnApiKeyRotation(deps, user, keyID, decision, correlationId),
    approve: (deps, _config, user, keyID, correlationId) => approveApiKeyRotation(deps, user, keyID, correlationId),
  });
  common(key.command('list'))
    .description("a party's keys (never a secret nor its hash)")
    .requiredOption('--party <party>', 'distributor:ID or merchant:ID')
    .action(async (opts: CommonOptions & { party: string }) =>
      withBackOffice(
        opts,
        async (deps) => {
          const partyRef = parsePartyRef(opts.party);
          await requireParty(deps, partyRef);
          const directory = new ApiKeyDirectory();
          await followToHead(followApiKeys(deps.store, directory, followerLogger), deps.store, API_KEY_FILTER);
          return directory.listByParty(partyRef, deps.clock().toISOString());
        },
        (keys) =>
          keys
            .map(
              (k) =>
                `${k.keyID}  ${k.state.padEnd(18)} ${k.label}  [${k.permissions.join(', ')}]  expires ` +
                `${k.expiresAt ?? '-'}`,
            )
            .join('\n') || '(no keys)',
      ),
    );
  registerWebhookCommands(program);

  const projections = program
    .command('projections')
    .description('read models: status and rebuild from the event history');
  common(projections.command('status'))
    .description(
      "each projection's, the executor's and the key-revocation consumer's checkpoint and lag behind the head of " +
        "the event store; with a running server, each consumer's live state",
    )
    .option(
      '--server <url>',
      'a running wallet-ops process whose /ready reports its consumers (default: http://HOST:PORT of the ' +
        'configuration)',
    )
    .action(async (opts: CommonOptions & { server?: string }) =>
      withStores(
        opts,
        async ({ eventStore, readStore }, config) => {
          const all = allProjections(config.ASSET_SCALE);
          await readStore.defineCollections(all.map((p) => p.collection));
          const followers = [
            ...all.map((p) => ({ name: p.name, eventTypes: p.eventTypes })),
            { name: EXECUTOR_CHECKPOINT, eventTypes: ['OperationApproved'] },
            { name: KEY_REVOCATION_CHECKPOINT, eventTypes: KEY_REVOCATION_EVENT_TYPES },
          ];
          const checkpoints = await projectionStatus({ eventStore, readStore }, followers);
          const server =
            opts.server ?? `http://${config.HOST === '0.0.0.0' ? '127.0.0.1' : config.HOST}:${config.PORT}`;
          return { checkpoints, server: await liveConsumers(server) };
        },
        ({ checkpoints, server }) =>
          [
            ...checkpoints.map(
              (r) =>
                `${r.projection.padEnd(24)} position ${String(r.position ?? '-').padStart(10)}  head ${r.head}  ` +
                `lag ${r.lagEvents}${r.lagEvents >= 1000 ? '+' : ''} events, ${r.lagSeconds} s`,
            ),
            server.consumers
              ? `consumers of ${server.url}:\n${server.consumers
                  .map(
                    (c) =>
                      `  ${c.name.padEnd(34)} ${c.state.padEnd(9)}${
                        c.failingSince ? ` failing since ${c.failingSince}: ${c.lastError ?? ''}` : ''
                      }`,
                  )
                  .join('\n')}`
              : `no live consumer states: ${server.url} did not answer (${server.error})`,
          ].join('\n'),
      ),
    );
  common(projections.command('rebuild'))
    .description(
      'replay the whole history into fresh read models and swap them in atomically, while the API keeps serving',
    )
    .option('--only <name>', 'rebuild only this projection')
    .action(async (opts: CommonOptions & { only?: string }) =>
      withStores(
        opts,
        async ({ eventStore, readStore }, config) => {
          const all = allProjections(config.ASSET_SCALE);
          const chosen = opts.only ? all.filter((p) => p.name === opts.only) : all;
          if (chosen.length === 0)
            throw new UsageError(`unknown projection "${opts.only}"; one of ${all.map((p) => p.name).join(', ')}`);
          await readStore.defineCollections(all.map((p) => p.collection));
          const bar = progressBar(`rebuild ${chosen.length === 1 ? chosen[0]!.name : 'all read models'}`);
          let results: RebuildResult[];
          try {
            results = await rebuildProjections({ eventStore, readStore }, chosen, (p) =>
              bar.update(p.position, p.head),
            );
            bar.done();
          } finally {
            bar.stop();
          }
          return results.map((r) => ({
            ...r,
            seconds: Math.round(r.seconds * 1000) / 1000,
            eventsPerSecond: Math.round(r.eventsPerSecond),
          }));
        },
        (rows) =>
          rows
            .map(
              (r) =>
                `${r.projection}: ${r.events} events in ${r.seconds} s (${r.eventsPerSecond} events/s), now at ` +
                `position ${r.position}`,
            )
            .join('\n'),
      ),
    );

  const operation = program.command('operation').description("a checker's decisions on pending operations");
  const operationDeps = (deps: BackOfficeDeps, tracing: Tracing) => ({
    store: deps.store,
    clock: deps.clock,
    assetScale: deps.assetScale,
    tracing,
  });
  common(operation.command('approve'))
    .description('a checker approves a pending operation of their party; the executor then carries it out')
    .argument('<operationID>')
    .requiredOption('--as <email>', 'the checker')
    .action(async (operationID: string, opts: CommonOptions & { as: string }) =>
      withBackOffice(
        opts,
        (deps) =>
          withCliTracing(async (tracing) => {
            const checker = await findUserByEmail(deps, opts.as);
            return decideOperation(
              operationDeps(deps, tracing),
              actingUser(checker),
              operationID,
              { type: 'approve' },
              userContext(checker, randomUUID()),
            );
          }),
        (r) => `operation ${r.operationID}: ${r.state}`,
      ),
    );
  common(operation.command('reject'))
    .description('a checker rejects a pending operation; what it held is released')
    .argument('<operationID>')
    .requiredOption('--as <email>', 'the checker')
    .requiredOption('--reason <text>', 'why')
    .action(async (operationID: string, opts: CommonOptions & { as: string; reason: string }) =>
      withBackOffice(
        opts,
        async (deps) => {
          const checker = await findUserByEmail(deps, opts.as);
          const reason = requiredText('reason', opts.reason, 500);
          return withCliTracing((tracing) =>
            decideOperation(
              operationDeps(deps, tracing),
              actingUser(checker),
              operationID,
              { type: 'reject', reason },
              userContext(checker, randomUUID()),
            ),
          );
        },
        (r) => `operation ${r.operationID}: ${r.state}`,
      ),
    );
  registerMoneyCommands(program);
  registerEventCommands(program);
  registerAuditCommands(program);
  registerDemoCommands(program);
  registerPostgresCommand(program);
  program
    .command('openapi')
    .description(
      'print the OpenAPI document the server serves at /api/v1/openapi.json, for this configuration ' +
        '(ASSET_SCALE); `npm run openapi` writes it to openapi.json',
    )
    .action(async () => {
      const [{ loadConfig }, { openApiJson }] = await Promise.all([
        import('../config.ts'),
        import('../read-api/openapi.ts'),
      ]);
      cliIO().stdout(openApiJson(loadConfig(cliIO().env).ASSET_SCALE));
    });
  common(program.command('serve'))
    .description(`run parts of wallet-ops in this process: ${SERVE_PARTS.join(', ')} (default: all)`)
    .argument('[parts...]', SERVE_PARTS.join(' | '))
    .option('--demo', 'seed demo data (into an empty or demo store only) and print ready-to-paste curl commands')
    .action(async (parts: string[], opts: CommonOptions & { demo?: boolean }) => {
      // A server owns its process: its configuration is process.env, its logs stdout, and a signal ends it.
      if (!isProcessIO())
        throw new UsageError(
          "serve runs only as its own process (the wallet-ops binary), not in another program's process",
        );
      // Loaded on demand: the other commands should not pay for starting the HTTP stack.
      const [{ serve }, { ALL_PARTS }] = await Promise.all([import('../server.ts'), import('../wallet-ops.ts')]);
      const unknown = parts.filter((part) => !(ALL_PARTS as readonly string[]).includes(part));
      if (unknown.length > 0) throw new UsageError(`unknown part ${unknown.join(', ')}; use ${ALL_PARTS.join(', ')}`);
      if (opts.dataDir) process.env.DATA_DIR = opts.dataDir;
      await serve(parts.length > 0 ? (parts as Part[]) : ALL_PARTS, { demo: opts.demo ?? false });
      await new Promise(() => {}); // serves until a signal ends the process
    });
  return program;
}

/**
 * `wallet-ops`: the operator CLI, for people with direct access to the store. Every command takes
 * `--data-dir` and `--json`; with `--json` it prints exactly one JSON value on stdout. A refusal exits 1
 * with one line on stderr; a usage error exits 2.
 *
 * `io` runs it inside another program's process (the tests): what it prints goes to `io.stdout` and
 * `io.stderr`, and its configuration comes from `io.env`; each part left out is the process's own. Every
 * command closes what it opens, so runs leave nothing behind. `serve` is the exception: it runs only with
 * the process's own IO (it is refused otherwise), and only the binary (main.ts) ends the process.
 */
export async function runCli(argv: string[], io: Partial<CliIO> = {}): Promise<number> {
  return withCliIO({ ...PROCESS_IO, ...io }, () => run(argv));
}

async function run(argv: string[]): Promise<number> {
  const { stderr } = cliIO();
  try {
    await buildCli().parseAsync(argv, { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    if (error instanceof UsageError) {
      stderr(`error: ${error.message}\n`);
      return 2;
    }
    if (error instanceof DomainError) {
      stderr(`refused (${error.code}): ${error.message}\n`);
      return 1;
    }
    if (error instanceof StoreCorruptedError) {
      stderr(
        `corrupted: ${error.message}. Stop every process using it and restore it from a backup ` +
          `(docs/operations.md, "Backup and restore")\n`,
      );
      return 1;
    }
    if (error instanceof DemoStoreRefusedError) {
      stderr(`refused: ${error.message}\n`);
      return 1;
    }
    stderr(`failed: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

/**
 * No control character in any argument or option reaches a store (issue 40; src/domain/text.ts): checked once,
 * before every command's action. As in a console form, tabs and line breaks may only end a value (a pasted line);
 * passwords are not read (hashed, never stored, shown or searched).
 */
function refuseControlsIn(action: Command): void {
  action.registeredArguments.forEach((argument, i) => {
    for (const value of [action.processedArgs[i] as unknown].flat())
      if (typeof value === 'string') refuseControlCharacters(`<${argument.name()}>`, value, 'trimmed');
  });
  for (const option of action.options) {
    const name = option.attributeName();
    if (/password/i.test(name)) continue;
    for (const value of [action.getOptionValue(name) as unknown].flat())
      if (typeof value === 'string') refuseControlCharacters(option.long ?? name, value, 'trimmed');
  }
}

/** Help and usage errors go where the run's output goes; an injected output is no terminal (80 columns, no colours). */
function commanderOutput(io: CliIO) {
  const writes = { writeOut: (text: string) => io.stdout(text), writeErr: (text: string) => io.stderr(text) };
  if (isProcessIO(io)) return writes;
  // 80 columns: what commander uses when its output is not a terminal (a pipe, as the binary's is in a script).
  return {
    ...writes,
    getOutHelpWidth: () => 80,
    getErrHelpWidth: () => 80,
    getOutHasColors: () => false,
    getErrHasColors: () => false,
  };
}

type LiveConsumer = {
  name: string;
  state: string;
  failingSince: string | null;
  lastError: string | null;
  lagEvents: number | null;
};

/** The consumers' live states, from a running process's /ready (they live in that process's memory). */
async function liveConsumers(url: string): Promise<{ url: string; consumers?: LiveConsumer[]; error?: string }> {
  try {
    const response = await fetch(new URL('/ready', url), { signal: AbortSignal.timeout(2000) });
    const body = (await response.json()) as { consumers?: LiveConsumer[] };
    return { url, consumers: body.consumers ?? [] };
  } catch (error) {
    return { url, error: error instanceof Error ? error.message : String(error) };
  }
}
