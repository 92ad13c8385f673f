import { CHILD_KINDS, type ChildKind, type ExitInfo } from './children.ts';

const perKind = <T>(value: () => T) =>
  Object.fromEntries(CHILD_KINDS.map((kind) => [kind, value()])) as Record<ChildKind, T>;

/** A create the API acknowledged: 2xx with an operationID. */
export interface AcknowledgedCreate {
  operationID: string;
  operationType: string;
  partyKind: 'distributor' | 'merchant';
  checkerEmail: string;
  keyID: string;
  at: number;
}

export interface RevocationRecord {
  keyID: string;
  party: string;
  /** When `key approve-revocation` returned (epoch ms). */
  approvedAt: number;
  /** Milliseconds from then to the first refusal (401, or 429 of the failed-authentication limit); null if none was seen. */
  first401Ms: number | null;
  /** Answers other than 401 (the key was accepted) more than 2 s after the approval. */
  acceptedAfterGrace: number;
  /** How those answers were labelled (status and problem type). */
  acceptedAnswers: string[];
  /** Requests that got no answer (API down) while waiting for the 401. */
  unanswered: number;
  /** The final check, once the load is over: 401 or not. */
  finalStatus: number | null;
}

export interface ChildIncident {
  child: string;
  at: string;
  detail: string;
  logTail?: string;
}

export interface HealthProbe {
  at: number;
  child: string;
  /** null: no answer (down, restarting, or no answer within 2 s). */
  status: number | null;
  /** The child's start count at the probe: a change between two probes is a restart. */
  starts: number;
  /** On a 503: the consumers /health named as failing. */
  failing?: string;
}

export interface ServerFault {
  kind: 'outage' | 'terminate' | 'lock';
  startedAt: number;
  endedAt: number;
  detail: string;
  /** An outage's: the processes steady at its start and not restarted until every one answered 200 again (judged). */
  steady?: string[];
}

/** Everything the soak counts while it runs; the report is made from it and from the stores. */
export class SoakStats {
  readonly startedAt = Date.now();
  loadStartedAt = 0;
  loadEndedAt = 0;

  readonly acknowledged = new Map<string, AcknowledgedCreate>();
  /** 4xx answers to creates, by `status type` (e.g. `403 /problems/insufficient-balance`). */
  readonly createRefusals: Record<string, number> = {};
  /** Creates with no acknowledgement: 5xx, connection errors, timeouts, 2xx without an operationID. */
  readonly createUnacknowledged: Record<string, number> = {};
  readonly reads: Record<string, number> = {};

  readonly decisions = { approved: 0, rejected: 0, refused: 0, failed: 0, retried: 0 };
  readonly decisionErrors: string[] = [];
  readonly individualPays = { ok: 0, refused: 0, failed: 0 };
  readonly individualPayIDs: string[] = [];
  readonly cliErrors: string[] = [];

  readonly revocations: RevocationRecord[] = [];

  readonly kills: Record<ChildKind, number> = perKind(() => 0);
  readonly restarts: Record<ChildKind, number> = perKind(() => 0);
  /** SIGKILL to /health answering again, per restart. */
  readonly restartMs: Record<ChildKind, number[]> = perKind((): number[] => []);
  /** Every /health poll of the health monitor (the truthfulness check reads them). */
  readonly healthProbes: HealthProbe[] = [];
  /** The PostgreSQL faults inflicted (`--store postgres`), in order. */
  readonly serverFaults: ServerFault[] = [];
  /** Webhook deliveries the soak's receiver got (`--store postgres`), and how many distinct events they carried. */
  readonly webhooks = { deliveries: 0, events: new Set<string>() };
  readonly unexpectedExits: ChildIncident[] = [];
  readonly unhealthyRestarts: ChildIncident[] = [];
  readonly restartFailures: ChildIncident[] = [];
  readonly gracefulStops: Array<{ child: string } & ExitInfo & { timedOut: boolean }> = [];

  /** Failed assertions: any makes the soak exit 1. */
  readonly problems: string[] = [];
  /** What was seen and is worth reading but does not fail the run. */
  readonly notes: string[] = [];

  problem(text: string): void {
    this.problems.push(text);
  }
}
