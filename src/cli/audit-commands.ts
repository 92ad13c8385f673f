import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Option, type Command } from 'commander';
import type { Stores } from '../adapters/open-stores.ts';
import { chainID, openEmbeddedLedger } from '../adapters/ledger/embedded-ledger.ts';
import type { Config } from '../config.ts';
import type { Ledger } from '../ports/ledger.ts';
import { exportEvents, importEvents, readEndOfExport } from '../audit/export-import.ts';
import {
  expectedFromExport,
  expectedFromRecord,
  readImportRecord,
  writeImportRecord,
  type ImportRecord,
} from '../audit/import-record.ts';
import type { ExpectedHistory } from '../audit/verify-completeness.ts';
import { unwrapHashChain } from '../audit/hash-chain.ts';
import { balanceAsOf, keyHistory, operationHistory } from '../audit/queries.ts';
import { formatAge, verifyHistory, type AuditReport } from '../audit/verify.ts';
import { normalizePhone } from '../domain/phone.ts';
import { withoutOperatorAttribution } from './operator-attribution.ts';
import { loadConfig } from '../config.ts';
import { cliIO } from './io.ts';
import {
  common,
  parseWalletRef,
  progressBar,
  UsageError,
  withBackOffice,
  withLedger,
  withStores,
  type CommonOptions,
} from './support.ts';

/**
 * `wallet-ops audit ...` (verify the history, reconstruct balances, tell an operation's or a key's story) and
 * `wallet-ops events export|import` (the history as JSON Lines). The `events` group is shared with `events
 * copy` (event-commands.ts): register these after it, and they join it.
 */
export function registerAuditCommands(program: Command): void {
  const audit = program
    .command('audit')
    .description(
      'auditors: prove the history untampered, reconcile it with the ledger, reconstruct balances and decisions',
    );

  common(audit.command('verify'))
    .description(
      'replay the whole history and check the hash chains, the seals, every operation and key lifecycle ' +
        '(maker-checker), wallets never negative, total supply = issued - redeemed, the reconciliation with the ' +
        'ledger, and operations stuck without an outcome (approved longer than --max-approved-age ago, or executed ' +
        `on the ledger after their executor's lease ran out); exit 1 on any problem`,
    )
    .option(
      '--max-approved-age <duration>',
      'an approved operation with no outcome (completed or failed) for longer is a problem, and so is a ledger ' +
        'transaction this old whose operation no executor claimed: e.g. 900s, 15m, 2h, 1d, or milliseconds',
      '15m',
    )
    .addOption(
      new Option(
        '--ledger <ledger>',
        'the ledger to reconcile the history with: configured (what the configuration opens), embedded (the ' +
          'embedded ledger of --data-dir), or skip (no reconciliation, reported as not done: for a history ' +
          'imported without its ledger, which an export does not carry)',
      )
        .choices(LEDGER_CHOICES)
        .default('configured'),
    )
    .option(
      '--expect <export-file>',
      'the history must hold this export whole (its end marker: count, last event and hash); without it, the ' +
        'import record events import left in --data-dir, when there is one, is checked',
    )
    .action(async (opts: CommonOptions & { maxApprovedAge: string; ledger: LedgerChoice; expect?: string }) => {
      const maxApprovedAgeMs = parseDuration('--max-approved-age', opts.maxApprovedAge);
      let report: AuditReport | undefined;
      const run = async ({ eventStore }: Stores, ledger: Ledger | null, config: Config) => {
        const expected = expectedHistory(opts.expect, opts.dataDir ?? config.DATA_DIR);
        const bar = progressBar('audit verify');
        try {
          report = await verifyHistory({
            eventStore,
            ledger,
            assetScale: config.ASSET_SCALE,
            maxApprovedAgeMs,
            clock: () => new Date(),
            ...(expected ? { expected } : {}),
            // The embedded ledger's ids chain its transactions; a chain's transaction hashes are the chain's own
            // affair.
            ...(ledger
              ? {
                  ledgerChainID: opts.ledger === 'embedded' || config.LEDGER === 'embedded' ? chainID : undefined,
                  ledgerName: opts.ledger,
                }
              : { ledgerSkipped: 'audit verify --ledger skip: the ledger was not reconciled' }),
            onProgress: (position, head) => bar.update(position, head),
          });
          bar.done();
        } finally {
          bar.stop();
        }
        return report;
      };
      if (opts.ledger === 'configured') {
        await withLedger(opts, run, humanReport);
      } else {
        await withStores(
          opts,
          async (stores, config) => {
            // The explicit choice opens the embedded ledger's file itself, whatever the configuration's ledger is.
            const ledger =
              opts.ledger === 'embedded' ? openExistingEmbeddedLedger(opts.dataDir ?? config.DATA_DIR) : null;
            try {
              return await run(stores, ledger, config);
            } finally {
              await ledger?.close();
            }
          },
          humanReport,
        );
      }
      if (report && !report.ok) {
        throw new Error(
          `audit verify found ${report.problemCount} problem${report.problemCount === 1 ? '' : 's'}${
            report.firstBrokenPosition !== null
              ? `; the history is first broken at position ${report.firstBrokenPosition}`
              : ''
          }`,
        );
      }
    });

  common(audit.command('balance'))
    .description(
      "a wallet's balance at a moment, from the history alone (its money movements committed at or before --as-of)",
    )
    .requiredOption('--party <party>', 'distributor:ID, merchant:ID or individual:PHONE')
    .requiredOption('--as-of <time>', 'ISO 8601 time, e.g. 2025-06-30T23:59:59Z')
    .action(async (opts: CommonOptions & { party: string; asOf: string }) => {
      const wallet = parseWalletRef(opts.party);
      if (wallet.kind === 'individual') wallet.id = normalizePhone('party', wallet.id);
      if (!wallet.id) throw new UsageError('--party needs an id');
      const asOf = parseTime(opts.asOf);
      await withBackOffice(
        opts,
        ({ store, assetScale }) => balanceAsOf(store, wallet, asOf, assetScale),
        (r) => `${r.balance} as of ${r.asOf} (history position ${r.position})`,
      );
    });

  common(audit.command('operation'))
    .description(
      "an operation's whole history: each event with its time, actor (API key and label, console user) and what " +
        'changed',
    )
    .argument('<operationID>')
    .action(async (operationID: string, opts: CommonOptions) =>
      withBackOffice(
        opts,
        ({ store }) => operationHistory(store, operationID),
        (h) =>
          [
            `${h.operationID}: ${h.operationType} of ${h.amount} (fee ${h.fee}) from ${h.payer} to ${h.payee}, ` +
              `${h.status}`,
            ...h.events.map(
              (e) =>
                `  ${e.time}  #${e.position}  ${e.type.padEnd(26)} ` +
                `${actorText(e.actor)}${operatorText(e.actor.actor, e.operator)}  ${e.change}`,
            ),
          ].join('\n'),
      ),
    );

  common(audit.command('key'))
    .description("an API key's lifecycle with its makers and checkers, and the operations it created")
    .argument('<keyID>')
    .action(async (keyID: string, opts: CommonOptions) =>
      withBackOffice(
        opts,
        ({ store }) => keyHistory(store, keyID),
        (k) =>
          [
            `${k.keyID} "${k.label}" of ${k.party}: ${k.status}; makers ${k.makers.join(', ')}; checkers ` +
              `${k.checkers.join(', ') || '-'}`,
            ...k.lifecycle.map(
              (e) =>
                `  ${e.time}  #${e.position}  ${e.type.padEnd(26)} ` +
                `${e.by}${operatorText(e.actor.actor, e.operator)}  ${e.change}`,
            ),
            `  ${k.operations.length} operation(s) created:`,
            ...k.operations.map(
              (o) => `    ${o.createdAt}  ${o.operationID}  ${o.operationType} ${o.amount} (fee ${o.fee})  ${o.status}`,
            ),
          ].join('\n'),
      ),
    );

  const events =
    program.commands.find((command) => command.name() === 'events') ??
    program.command('events').description('the event history');
  common(events.command('export'))
    .description(
      'write events in global order to a JSON Lines file (one event per line: id, stream, revision, type, data, ' +
        'metadata, position, createdAt)',
    )
    .requiredOption('--out <file>', 'the file to write (replaced)')
    .option('--from-position <position>', 'first position (inclusive)')
    .option('--to-position <position>', 'last position (inclusive)')
    .option('--stream-prefix <prefix>', 'only streams whose name starts with this, e.g. operation-')
    .action(
      async (
        opts: CommonOptions & { out: string; fromPosition?: string; toPosition?: string; streamPrefix?: string },
      ) => {
        const fromPosition =
          opts.fromPosition === undefined ? undefined : wholeNumber('--from-position', opts.fromPosition);
        const toPosition = opts.toPosition === undefined ? undefined : wholeNumber('--to-position', opts.toPosition);
        await withBackOffice(
          opts,
          async ({ store }) => {
            const bar = progressBar('events export');
            try {
              const exported = await exportEvents(store, opts.out, {
                ...(fromPosition !== undefined ? { fromPosition } : {}),
                ...(toPosition !== undefined ? { toPosition } : {}),
                ...(opts.streamPrefix !== undefined ? { streamPrefix: opts.streamPrefix } : {}),
                onProgress: (position, head) => bar.update(position, head),
              });
              bar.done();
              return exported;
            } finally {
              bar.stop();
            }
          },
          (r) =>
            `exported ${r.events} events (positions ${r.firstPosition ?? '-'} to ${r.lastPosition ?? '-'}) to ` +
            `${r.file}`,
        );
      },
    );
  common(events.command('import'))
    .description(
      'load an export into an EMPTY event store, keeping ids, revisions and hashes; refuses a file whose chains ' +
        'or seals do not verify or that lacks its end marker (truncated), before writing anything; run again after ' +
        'an interruption, it resumes',
    )
    .requiredOption('--in <file>', 'a file written by events export (the whole history)')
    .action(async (opts: CommonOptions & { in: string }) => {
      const dataDir = opts.dataDir ?? loadConfig(cliIO().env).DATA_DIR;
      await withBackOffice(
        opts,
        async ({ store }) => {
          const bar = progressBar('events import', 'events');
          let record: ImportRecord | undefined;
          try {
            // The raw store: the events carry their hashes, which must be kept exactly as they are.
            const result = await importEvents(unwrapHashChain(withoutOperatorAttribution(store)), opts.in, {
              onProgress: (done, total) => bar.update(done, total),
              // Recorded before the first append: a store whose import is cut short is known incomplete (audit verify).
              onStart: (end, skipped) => {
                const earlier = skipped > 0 ? readImportRecord(dataDir) : undefined;
                record = {
                  ...end,
                  file: opts.in,
                  startedAt: earlier?.startedAt ?? new Date().toISOString(),
                  completedAt: null,
                };
                writeImportRecord(dataDir, record);
              },
            });
            writeImportRecord(dataDir, { ...record!, completedAt: new Date().toISOString() });
            bar.done();
            return { ...result, ledger: IMPORT_LEDGER_NOTE };
          } finally {
            bar.stop();
          }
        },
        (r) =>
          `imported ${r.events} events in ${r.streams} streams (${r.seals} ` +
          `seals)${r.skipped > 0 ? `, resuming after the ${r.skipped} an earlier run had imported` : ''}; ` +
          `${IMPORT_LEDGER_NOTE}; now rebuild the read models: wallet-ops projections rebuild`,
      );
    });
}

/** What the history must hold: the export file given, else the import record of the data directory, if any. */
function expectedHistory(exportFile: string | undefined, dataDir: string): ExpectedHistory | undefined {
  if (exportFile !== undefined) {
    if (!existsSync(exportFile)) throw new UsageError(`--expect: there is no file ${exportFile}`);
    const end = readEndOfExport(exportFile);
    if (!end)
      throw new UsageError(
        `--expect: ${exportFile} has no end marker: it is not a complete export (cut short, or written before ` +
          'end markers); export again',
      );
    return expectedFromExport(end, exportFile);
  }
  const record = readImportRecord(dataDir);
  return record ? expectedFromRecord(record, dataDir) : undefined;
}

const LEDGER_CHOICES = ['configured', 'embedded', 'skip'] as const;
type LedgerChoice = (typeof LEDGER_CHOICES)[number];

/** What `events import` says of the ledger: an export is the event history only. */
export const IMPORT_LEDGER_NOTE =
  "the ledger is not part of an export and was not imported (it is the chain's own record): " +
  'verify this history with audit verify --ledger skip, or against the ledger it was executed on';

/** The embedded ledger of a data directory, refused when there is none (opening it would create an empty one). */
function openExistingEmbeddedLedger(dataDir: string): Ledger {
  const file = join(dataDir, 'ledger.sqlite');
  if (!existsSync(file)) throw new UsageError(`--ledger embedded: there is no embedded ledger in ${dataDir} (${file})`);
  return openEmbeddedLedger({ file });
}

function parseTime(value: string): Date {
  const time = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}(T|$)/.test(value) || Number.isNaN(time.getTime()))
    throw new UsageError(`--as-of must be an ISO 8601 time such as 2025-06-30T23:59:59Z, got "${value.slice(0, 40)}"`);
  return time;
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `15m`, `2h`, `900s`, `1d`, `250ms`, or plain milliseconds (`900000`), as milliseconds > 0. */
export function parseDuration(option: string, value: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/i.exec(value);
  const ms = match ? Math.round(Number(match[1]) * DURATION_UNITS[(match[2] ?? 'ms').toLowerCase()]!) : NaN;
  if (!Number.isSafeInteger(ms) || ms <= 0)
    throw new UsageError(
      `${option} must be a duration such as 15m, 2h, 900s or milliseconds, got "${value.slice(0, 40)}"`,
    );
  return ms;
}

function wholeNumber(option: string, value: string): number {
  if (!/^\d{1,15}$/.test(value)) throw new UsageError(`${option} must be a whole number`);
  return Number(value);
}

function actorText(actor: { actor: string; label?: string; email?: string }): string {
  return actor.email ?? (actor.label ? `${actor.actor} ("${actor.label}")` : actor.actor);
}

/** Who typed the CLI command, when it was not the actor themselves: `(by operator:alice at the CLI)`. */
function operatorText(actor: string, operator: string | undefined): string {
  if (operator === undefined) return '';
  return operator === actor ? ' (at the CLI)' : ` (by ${operator} at the CLI)`;
}

function humanReport(report: AuditReport | undefined): string {
  if (!report) return '';
  const c = report.checked;
  const lines = [
    `${report.ok ? 'OK' : 'PROBLEMS FOUND'}: ${c.events} events in ${c.streams} streams (${c.seals} seals over ` +
      `${c.sealedEvents} events, ${c.unsealedEvents} after the last seal), ${c.operations} operations, ` +
      `${c.wallets} wallets, ` +
      `${report.ledger.reconciled ? `${c.ledgerTransactions} ledger transactions` : 'no ledger'}, in ` +
      `${report.seconds} s (${report.eventsPerSecond} events/s)`,
    `supply ${report.supply.supply} = issued ${report.supply.issued} - redeemed ${report.supply.redeemed}`,
    report.ledger.reconciled
      ? `ledger reconciliation: done (${report.ledger.ledger} ledger)`
      : `ledger reconciliation: NOT DONE (${report.ledger.reason}): no completed operation was matched with a ` +
        `ledger transaction, and the ledger's chain was not checked`,
  ];
  const stuck = report.stuck.length;
  lines.push(
    `operations stuck without an outcome as of ${report.asOf} (approved over ` +
      `${formatAge(report.maxApprovedAgeMs)} ago, or on the ledger past their claim's lease): ` +
      `${stuck === 0 ? 'none' : `${stuck} (see the [outcome] problems)`}`,
  );
  const moved = report.failedButMoved;
  lines.push(
    `operations recorded as failed whose money moved on the ledger: ${moved.length === 0 ? 'none' : moved.length}`,
  );
  for (const entry of moved)
    lines.push(
      `  ${entry.operationID} (${entry.operationType}, failed ${entry.failedAt ?? 'at an unknown time'}): ` +
        `${entry.settle}`,
    );
  if (report.inFlight.length > 0)
    lines.push(
      `${report.inFlight.length} execution(s) in flight (on the ledger, not yet completed in the history read): ` +
        `${report.inFlight.slice(0, 5).join(', ')}`,
    );
  if (!report.ok) {
    lines.push(
      `${report.problemCount} problem(s)${
        report.firstBrokenPosition !== null ? `; history first broken at position ${report.firstBrokenPosition}` : ''
      }:`,
    );
    for (const p of report.problems)
      lines.push(
        '  ' +
          `[${p.check}]${
            p.position !== undefined ? ` position ${p.position}` : ''
          }${p.stream ? ` ${p.stream}` : ''}: ` +
          `${p.detail}`,
      );
  }
  return lines.join('\n');
}
