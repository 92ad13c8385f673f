import type { OperationStatus } from '../domain/operation-status.ts';
import type { RecordedEvent } from '../ports/event-store.ts';
import { ISSUANCE_ADDRESS } from '../ports/ledger.ts';
import { fromUnits, toUnits } from './amounts.ts';
import { ProblemLog, type AuditCheck } from './verify-report.ts';
import { vouchConflict } from '../domain/segregation.ts';
import { AccessChecker, type UserInfo } from './verify-access.ts';

// ---- operations, keys, users, wallets ---------------------------------------------------------------------

type OpStatus = OperationStatus;
const CHANNEL_TYPES = new Set(['issue', 'individual-payment']);
/** Who rejects the pending operations of a revoked or expired key (src/commands/operations.ts KEY_REVOCATION_ACTOR). */
const KEY_REVOCATION_ACTOR = 'system:key-revocation';

/** Whether the key had expired at that time, as src/commands/api-keys.ts isExpired judges it. */
const expiredAt = (key: { expiresAt: string | null } | undefined, at: string) =>
  key?.expiresAt != null && Date.parse(at) >= Date.parse(key.expiresAt);

export interface OpState {
  status: OpStatus;
  channel: boolean;
  party: string | null;
  requester: string;
  keyID: string | null;
  /** The generation of the key secret that created it, as recorded (null: created before it was). */
  secretGeneration: number | null;
  payer: string;
  payee: string;
  amount: string;
  fee: string;
  claimed: boolean;
  completedPosition: number;
  blockchainID: string | null;
  sequenceNumber: number | null;
  moved: boolean;
  ledgerSequence: number | null;
  /** The platform administrator who asked to settle it, while the request waits (a failed operation only). */
  settlementRequestedBy?: string;
}

interface KeyInfo {
  status: 'pending' | 'active' | 'rejected' | 'withdrawn' | 'revocation_pending' | 'revoked';
  party: string;
  requestedBy: string;
  revocationRequestedBy: string | null;
  /** The maker of the pending secret rotation. */
  rotationRequestedBy: string | null;
  holder: string;
  /** Who was handed each secret, by generation, and until when the previous one works (null: it does not). */
  holders: string[];
  previousValidUntil: string | null;
  /**
   * The generations whose secret ended with its holder's departure (their pending operations are the system's to
   * reject).
   */
  endedGenerations: number[];
  expiresAt: string | null;
}

/** What a secret rotation's checks need of a key or endpoint (both rotate the same way). */
interface Rotatable {
  status: string;
  party: string;
  rotationRequestedBy: string | null;
  /** Who holds the current secret: the requesting maker, then each approved rotation's requester. */
  holder: string;
  holders: string[];
  previousValidUntil: string | null;
}

const partyOf = (party: { type: string; id: string } | null | undefined): string | null =>
  party ? `${party.type}:${party.id}` : null;
const addressOf = (wallet: { kind: string; id: string }): string => `${wallet.kind}:${wallet.id}`;
export const FEES_ADDRESS = 'platform:fees';

interface MovementGroup {
  operationID: string;
  position: number;
  deltas: Map<string, bigint>;
}

export class BusinessChecker {
  private readonly problems: ProblemLog;
  private readonly scale: number;
  readonly users = new Map<string, UserInfo>();
  readonly keys = new Map<string, KeyInfo>();
  readonly webhookEndpoints = new Map<
    string,
    Rotatable & { status: 'pending' | 'active' | 'rejected' | 'disabled'; requestedBy: string }
  >();
  readonly operations = new Map<string, OpState>();
  readonly balances = new Map<string, bigint>();
  private readonly negative = new Set<string>();
  private total = 0n;
  private expectedTotal = 0n;
  issued = 0n;
  redeemed = 0n;
  completed = 0;
  private group: MovementGroup | null = null;
  /** Users and access requests (verify-access.ts); it keeps `users` current for the checks below. */
  private access: AccessChecker | undefined;

  constructor(problems: ProblemLog, scale: number) {
    this.problems = problems;
    this.scale = scale;
  }

  /** Every wallet but the issuing account. */
  get supply(): bigint {
    return this.total - (this.balances.get(ISSUANCE_ADDRESS) ?? 0n);
  }

  feed(event: RecordedEvent): void {
    const { type } = event;
    if (type === 'WalletCredited' || type === 'WalletDebited') {
      this.movement(event, type === 'WalletCredited');
      return;
    }
    if (this.group) this.closeGroup();
    if (type.startsWith('Operation')) this.operation(event);
    else if (type.startsWith('ApiKey')) this.apiKey(event);
    else if (type.startsWith('WebhookEndpoint') || type.startsWith('WebhookSecret')) this.webhookEndpoint(event);
    else
      (this.access ??= new AccessChecker(this.users, (e, detail) => this.problem('maker-checker', e, detail))).feed(
        event,
      );
  }

  finish(): void {
    if (this.group) this.closeGroup();
  }

  private problem(check: AuditCheck, event: RecordedEvent, detail: string, operationID?: string): void {
    this.problems.add({
      check,
      position: event.position,
      stream: event.stream,
      ...(operationID ? { operationID } : {}),
      detail,
    });
  }

  /**
   * A key or endpoint ended by `system` for a departure: right only if the user it names requested it and had
   * just been disabled or lost the maker role (the same append, written before it).
   */
  private departure(event: RecordedEvent, requestedBy: string, describe: () => string): void {
    const departed = (event.data as { departedUserID?: unknown }).departedUserID;
    const user = typeof departed === 'string' ? this.users.get(departed) : undefined;
    if (departed !== requestedBy || !user || !(user.disabled || !user.roles.includes('maker'))) {
      this.problem(
        'maker-checker',
        event,
        `${describe()} by the system, but ${String(departed)} is not its maker who left (disabled or no longer a ` +
          'maker)',
      );
    }
  }

  /** A user's decision as a checker: an existing user with the checker role, of the party, not the requester. */
  private checker(
    event: RecordedEvent,
    userID: string,
    party: string | null,
    requester: string | null,
    describe: () => string,
    operationID?: string,
  ): void {
    const user = this.users.get(userID);
    if (user && user.roles.includes('checker') && user.party === party && userID !== requester && !user.disabled)
      return;
    const what = describe();
    if (!user) {
      this.problem('maker-checker', event, `${what} by ${userID}, who is not a user at that point`, operationID);
      return;
    }
    if (!user.roles.includes('checker'))
      this.problem(
        'maker-checker',
        event,
        `${what} by user ${userID}, who does not have the checker role`,
        operationID,
      );
    if (user.party !== party)
      this.problem(
        'maker-checker',
        event,
        `${what} by user ${userID} of ${user.party ?? 'the platform'}, not of ${party ?? 'the platform'}`,
        operationID,
      );
    if (requester !== null && userID === requester)
      this.problem(
        'maker-checker',
        event,
        `${what} by user ${userID}, who requested it (maker and checker must differ)`,
        operationID,
      );
    if (user.disabled) this.problem('maker-checker', event, `${what} by user ${userID}, who is disabled`, operationID);
  }

  private apiKey(event: RecordedEvent): void {
    const data = event.data as Record<string, unknown> & { keyID: string };
    const key = this.keys.get(data.keyID);
    const what = `${event.type.replace('ApiKey', 'key ').toLowerCase()} of ${data.keyID}`;
    if (event.type === 'ApiKeyRequested') {
      if (key) this.problem('operation', event, `API key ${data.keyID} requested twice`);
      const party = partyOf(data.party as { type: string; id: string });
      const maker = this.users.get(data.requestedBy as string);
      if (!maker)
        this.problem('maker-checker', event, `${what} by ${String(data.requestedBy)}, who is not a user at that point`);
      else {
        if (!maker.roles.includes('maker'))
          this.problem(
            'maker-checker',
            event,
            `${what} by user ${String(data.requestedBy)}, who does not have the maker role`,
          );
        if (maker.party !== party)
          this.problem(
            'maker-checker',
            event,
            `${what} by user ${String(data.requestedBy)} of ${maker.party ?? 'the platform'}, not of ` +
              `${party ?? 'the platform'}`,
          );
      }
      this.keys.set(data.keyID, {
        status: 'pending',
        party: party ?? '',
        requestedBy: data.requestedBy as string,
        revocationRequestedBy: null,
        rotationRequestedBy: null,
        holder: data.requestedBy as string,
        holders: [],
        previousValidUntil: null,
        endedGenerations: [],
        expiresAt: null,
      });
      return;
    }
    if (!key) {
      this.problem('operation', event, `${event.type} of API key ${data.keyID}, which was never requested`);
      return;
    }
    const expect = (status: KeyInfo['status']) => {
      if (key.status !== status)
        this.problem(
          'operation',
          event,
          `${event.type} of API key ${data.keyID} while it is ${key.status}, not ${status}`,
        );
    };
    switch (event.type) {
      case 'ApiKeyApproved':
        expect('pending');
        this.checker(event, data.approvedBy as string, key.party, key.requestedBy, () => what);
        key.status = 'active';
        key.expiresAt = data.expiresAt as string;
        key.holders = [key.requestedBy];
        break;
      case 'ApiKeyRejected':
        expect('pending');
        this.checker(event, data.rejectedBy as string, key.party, key.requestedBy, () => what);
        key.status = 'rejected';
        break;
      case 'ApiKeyRequestWithdrawn':
        expect('pending');
        if (data.withdrawnBy === 'system') {
          this.departure(event, key.holder, () => what);
          key.status = 'withdrawn';
          break;
        }
        // Only its maker takes a request back: anyone else would be deciding on it without the checker role.
        if (data.withdrawnBy !== key.requestedBy)
          this.problem(
            'maker-checker',
            event,
            `${what} by ${String(data.withdrawnBy)}, not the maker who requested it (${key.requestedBy})`,
          );
        key.status = 'withdrawn';
        break;
      case 'ApiKeyRevocationRequested': {
        expect('active');
        const maker = this.users.get(data.requestedBy as string);
        if (!maker?.roles.includes('maker') || maker.party !== key.party)
          this.problem('maker-checker', event, `${what} by ${String(data.requestedBy)}, not a maker of ${key.party}`);
        key.status = 'revocation_pending';
        key.revocationRequestedBy = data.requestedBy as string;
        break;
      }
      case 'ApiKeyRevocationRejected':
        expect('revocation_pending');
        this.checker(event, data.rejectedBy as string, key.party, key.revocationRequestedBy, () => what);
        key.status = 'active';
        key.revocationRequestedBy = null;
        break;
      case 'ApiKeyRevoked':
        if (data.approvedBy === 'system') {
          if (key.status !== 'active' && key.status !== 'revocation_pending') expect('active');
          this.departure(event, key.holder, () => what);
          key.status = 'revoked';
          key.previousValidUntil = null;
          break;
        }
        expect('revocation_pending');
        this.checker(event, data.approvedBy as string, key.party, key.revocationRequestedBy, () => what);
        key.status = 'revoked';
        key.rotationRequestedBy = null;
        key.previousValidUntil = null;
        break;
      case 'ApiKeyPreviousSecretEnded':
        this.previousSecretEnded(event, key, () => what);
        key.endedGenerations.push(key.holders.length - 1);
        break;
      case 'ApiKeyRotationRequested':
      case 'ApiKeyRotationRejected':
      case 'ApiKeyRotationWithdrawn':
      case 'ApiKeyRotated':
        this.rotation(event, `API key ${data.keyID}`, key, event.type.slice('ApiKey'.length));
        break;
      default:
        this.problem('operation', event, `unknown API-key event ${event.type}`);
    }
  }

  /** The same maker-checker as API keys: a maker of the party registers, another checker of it decides. */
  private webhookEndpoint(event: RecordedEvent): void {
    const data = event.data as Record<string, unknown> & { endpointID: string };
    const endpoint = this.webhookEndpoints.get(data.endpointID);
    const what = `${event.type.replace('WebhookEndpoint', 'webhook endpoint ').toLowerCase()} of ${data.endpointID}`;
    if (event.type === 'WebhookEndpointRequested') {
      if (endpoint) this.problem('operation', event, `webhook endpoint ${data.endpointID} requested twice`);
      const party = partyOf(data.party as { type: string; id: string }) ?? '';
      const maker = this.users.get(data.requestedBy as string);
      if (!maker?.roles.includes('maker') || maker.party !== party)
        this.problem('maker-checker', event, `${what} by ${String(data.requestedBy)}, not a maker of ${party}`);
      this.webhookEndpoints.set(data.endpointID, {
        status: 'pending',
        party,
        requestedBy: data.requestedBy as string,
        rotationRequestedBy: null,
        holder: data.requestedBy as string,
        holders: [],
        previousValidUntil: null,
      });
      return;
    }
    if (!endpoint) {
      this.problem(
        'operation',
        event,
        `${event.type} of webhook endpoint ${data.endpointID}, which was never requested`,
      );
      return;
    }
    const expect = (status: 'pending' | 'active') => {
      if (endpoint.status !== status)
        this.problem(
          'operation',
          event,
          `${event.type} of webhook endpoint ${data.endpointID} while it is ${endpoint.status}, not ${status}`,
        );
    };
    switch (event.type) {
      case 'WebhookEndpointApproved':
        expect('pending');
        this.checker(event, data.approvedBy as string, endpoint.party, endpoint.requestedBy, () => what);
        endpoint.status = 'active';
        endpoint.holders = [endpoint.requestedBy];
        break;
      case 'WebhookEndpointRejected':
        expect('pending');
        if (data.rejectedBy === 'system') this.departure(event, endpoint.holder, () => what);
        else this.checker(event, data.rejectedBy as string, endpoint.party, endpoint.requestedBy, () => what);
        endpoint.status = 'rejected';
        break;
      case 'WebhookEndpointDisabled': {
        expect('active');
        const by = data.disabledBy as string;
        const user = this.users.get(by);
        if (by === 'system' && data.departedUserID !== undefined) this.departure(event, endpoint.holder, () => what);
        if (
          by !== 'system' &&
          (!user || user.party !== endpoint.party || !(user.roles.includes('maker') || user.roles.includes('checker')))
        ) {
          this.problem(
            'maker-checker',
            event,
            `${what} by ${by}, neither the system nor a maker or checker of ${endpoint.party}`,
          );
        }
        endpoint.status = 'disabled';
        endpoint.rotationRequestedBy = null;
        break;
      }
      case 'WebhookEndpointPreviousSecretEnded':
        this.previousSecretEnded(event, endpoint, () => what);
        break;
      case 'WebhookSecretRotationRequested':
      case 'WebhookSecretRotationRejected':
      case 'WebhookSecretRotationWithdrawn':
      case 'WebhookSecretRotated':
        this.rotation(event, `webhook endpoint ${data.endpointID}`, endpoint, event.type.slice('WebhookSecret'.length));
        break;
      default:
        this.problem('operation', event, `unknown webhook-endpoint event ${event.type}`);
    }
  }

  /**
   * A secret rotation, the same for keys and endpoints (src/domain/secret-rotation.ts): a maker of the party asks
   * while it is active, another checker of it approves or rejects, only the asking maker withdraws, and the new
   * secret is held for that maker.
   */
  private rotation(event: RecordedEvent, subject: string, target: Rotatable, step: string): void {
    const data = event.data as Record<string, unknown>;
    const what = `secret rotation of ${subject}`;
    if (step === 'RotationRequested') {
      if (target.status !== 'active')
        this.problem('operation', event, `${event.type} of ${subject} while it is ${target.status}, not active`);
      if (target.rotationRequestedBy !== null)
        this.problem('operation', event, `${event.type} of ${subject} while another rotation is pending`);
      const maker = this.users.get(data.requestedBy as string);
      if (!maker?.roles.includes('maker') || maker.party !== target.party)
        this.problem(
          'maker-checker',
          event,
          `${what} requested by ${String(data.requestedBy)}, not a maker of ${target.party}`,
        );
      target.rotationRequestedBy = data.requestedBy as string;
      return;
    }
    const requester = target.rotationRequestedBy;
    if (requester === null) this.problem('operation', event, `${event.type} of ${subject} without a pending rotation`);
    if (step === 'RotationWithdrawn' && data.withdrawnBy === 'system') {
      // The maker who asked left: their request went with them (src/commands/departures.ts).
      this.departure(event, requester ?? '', () => what);
    } else if (step === 'RotationWithdrawn') {
      if (requester !== null && data.withdrawnBy !== requester)
        this.problem(
          'maker-checker',
          event,
          `${what} withdrawn by ${String(data.withdrawnBy)}, not the maker who requested it (${requester})`,
        );
    } else if (step === 'RotationRejected') {
      this.checker(event, data.rejectedBy as string, target.party, requester, () => `rejection of the ${what}`);
    } else {
      if (target.status !== 'active')
        this.problem('operation', event, `${event.type} of ${subject} while it is ${target.status}, not active`);
      this.checker(event, data.approvedBy as string, target.party, requester, () => `approval of the ${what}`);
      // The new secret reaches the maker who asked, never the approving checker.
      if (requester !== null && data.secretHolder !== requester)
        this.problem(
          'maker-checker',
          event,
          `${what}: new secret held for ${String(data.secretHolder)}, not for the maker who requested it ` +
            `(${requester})`,
        );
      target.holder = data.secretHolder as string;
      target.holders.push(target.holder);
      target.previousValidUntil = data.previousValidUntil as string;
    }
    target.rotationRequestedBy = null;
  }

  /** A previous secret ended by the system: right only for its holder's departure, while it still worked. */
  private previousSecretEnded(event: RecordedEvent, target: Rotatable, describe: () => string): void {
    const endedAt = String((event.data as { endedAt?: unknown }).endedAt);
    if (target.previousValidUntil === null || !(Date.parse(endedAt) < Date.parse(target.previousValidUntil))) {
      this.problem('operation', event, `${describe()} while no previous secret works`);
    }
    this.departure(event, target.holders.at(-2) ?? '', describe);
    target.previousValidUntil = null;
  }

  private operation(event: RecordedEvent): void {
    const data = event.data as Record<string, unknown> & { operationID: string };
    const { operationID } = data;
    if (event.stream !== `operation-${operationID}`)
      this.problem('operation', event, `${event.type} of ${operationID} in stream ${event.stream}`, operationID);
    const op = this.operations.get(operationID);
    if (event.type === 'OperationRequested') {
      if (op) {
        this.problem('operation', event, `operation ${operationID} requested twice`, operationID);
        return;
      }
      const requested = data as unknown as {
        keyID: string | null;
        party: { type: string; id: string } | null;
        operationType: string;
        amount: string;
        fee: string;
        payer: { kind: string; id: string };
        payee: { kind: string; id: string };
        createdAt: string;
      };
      const party = partyOf(requested.party);
      if (requested.keyID !== null && requested.keyID !== undefined) {
        const key = this.keys.get(requested.keyID);
        if (!key)
          this.problem(
            'operation',
            event,
            `operation ${operationID} created with API key ${requested.keyID}, which does not exist`,
            operationID,
          );
        else {
          if (key.status !== 'active' && key.status !== 'revocation_pending')
            this.problem(
              'operation',
              event,
              `operation ${operationID} created with API key ${requested.keyID} while it was ${key.status}`,
              operationID,
            );
          else if (key.expiresAt !== null && requested.createdAt >= key.expiresAt)
            this.problem(
              'operation',
              event,
              `operation ${operationID} created with API key ${requested.keyID} after it expired (${key.expiresAt})`,
              operationID,
            );
          if (key.party !== party)
            this.problem(
              'operation',
              event,
              `operation ${operationID} of ${party ?? 'no party'} created with a key of ${key.party}`,
              operationID,
            );
        }
      }
      this.operations.set(operationID, {
        status: 'pending',
        channel: CHANNEL_TYPES.has(requested.operationType),
        party,
        requester: String(event.metadata?.actor ?? ''),
        keyID: requested.keyID ?? null,
        secretGeneration: typeof data.secretGeneration === 'number' ? data.secretGeneration : null,
        payer: addressOf(requested.payer),
        payee: addressOf(requested.payee),
        amount: requested.amount,
        fee: requested.fee,
        claimed: false,
        completedPosition: 0,
        blockchainID: null,
        sequenceNumber: null,
        moved: false,
        ledgerSequence: null,
      });
      return;
    }
    if (!op) {
      this.problem(
        'operation',
        event,
        `${event.type} of operation ${operationID}, which was never requested`,
        operationID,
      );
      return;
    }
    switch (event.type) {
      case 'OperationApproved':
      case 'OperationRejected': {
        if (op.status !== 'pending') this.refuse(event, operationID, `it is ${op.status}, not pending`);
        const by = String(event.type === 'OperationApproved' ? data.approvedBy : data.rejectedBy);
        const key = op.keyID === null ? undefined : this.keys.get(op.keyID);
        if (op.channel) {
          if (by !== op.requester)
            this.problem(
              'maker-checker',
              event,
              `${event.type} of ${operationID} (a channel operation, no checker) by ${by}, not by its requester ` +
                `${op.requester}`,
              operationID,
            );
        } else if (event.type === 'OperationRejected' && by === KEY_REVOCATION_ACTOR) {
          // The system rejects only the pending operations of a key already revoked, or expired at the rejection.
          const at = String(data.rejectedAt);
          const secretEnded =
            op.secretGeneration !== null && key?.endedGenerations.includes(op.secretGeneration) === true;
          if (key?.status !== 'revoked' && !expiredAt(key, at) && !secretEnded)
            this.problem(
              'maker-checker',
              event,
              `rejection of operation ${operationID} by ${by}, but its API key ${op.keyID ?? '(none)'} is ` +
                `${key?.status ?? 'unknown'}, not revoked, and not expired at ${at}`,
              operationID,
            );
        } else {
          const requesterUser = op.requester.startsWith('user:') ? op.requester.slice(5) : null;
          this.checker(
            event,
            by,
            op.party,
            requesterUser,
            () => `${event.type === 'OperationApproved' ? 'approval' : 'rejection'} of operation ${operationID}`,
            operationID,
          );
          // Segregation of duties: whoever requested the key saw its secret, so could have made the operation.
          if (event.type === 'OperationApproved' && key && by === key.requestedBy) {
            this.problem(
              'maker-checker',
              event,
              `approval of operation ${operationID} by user ${by}, who requested the API key ${op.keyID} that ` +
                'created it',
              operationID,
            );
          } else if (event.type === 'OperationApproved' && key && op.secretGeneration !== null) {
            // The rule of src/domain/segregation.ts, for operations that recorded their secret (older ones: the line
            // above).
            const at = String(data.approvedAt);
            const previousAccepted =
              key.previousValidUntil !== null && Date.parse(at) < Date.parse(key.previousValidUntil);
            const keepers = { originalRequester: key.requestedBy, holders: key.holders, previousAccepted };
            const conflict = vouchConflict(by, { maker: null, keepers, usedGeneration: op.secretGeneration });
            const approval = `approval of operation ${operationID}`;
            if (conflict !== null)
              this.problem(
                'maker-checker',
                event,
                `${approval} by user ${by}, who held a secret of the API key ${op.keyID} that created it (${conflict})`,
                operationID,
              );
            if (key.endedGenerations.includes(op.secretGeneration))
              this.problem(
                'maker-checker',
                event,
                `${approval}, whose API key secret had ended with its holder's departure`,
                operationID,
              );
          }
          // An expired key's operations may no longer be approved (KEY_EXPIRED), only rejected.
          if (event.type === 'OperationApproved' && expiredAt(key, String(data.approvedAt))) {
            this.problem(
              'maker-checker',
              event,
              `approval of operation ${operationID} at ${String(data.approvedAt)}, after its API key ${op.keyID} ` +
                `expired (${key!.expiresAt})`,
              operationID,
            );
          }
        }
        op.status = event.type === 'OperationApproved' ? 'approved' : 'rejected';
        break;
      }
      case 'OperationExecutionStarted':
        if (op.status !== 'approved' && op.status !== 'executing')
          this.refuse(event, operationID, `claimed while ${op.status}`);
        op.claimed = true;
        if (op.status === 'approved' || op.status === 'executing') op.status = 'executing';
        break;
      case 'OperationSubmitted':
        if (op.status !== 'executing')
          this.refuse(event, operationID, `submitted while ${op.status}${op.claimed ? '' : ' and never claimed'}`);
        if (op.status === 'executing') op.status = 'submitted';
        op.sequenceNumber = data.sequenceNumber as number;
        break;
      case 'OperationCompleted':
        if (op.status === 'completed') this.refuse(event, operationID, 'completed twice');
        else if (op.status === 'failed' || op.status === 'rejected')
          this.refuse(event, operationID, `completed after it ${op.status === 'failed' ? 'failed' : 'was rejected'}`);
        else if (op.status !== 'submitted')
          this.refuse(
            event,
            operationID,
            `completed while ${op.status}${op.claimed ? '' : ', never claimed by an executor'}`,
          );
        if (op.status !== 'completed') this.completed += 1;
        op.status = 'completed';
        op.completedPosition = event.position;
        op.blockchainID = data.blockchainID as string;
        op.sequenceNumber = data.sequenceNumber as number;
        break;
      case 'OperationFailed':
        if (op.status === 'completed' || op.status === 'rejected' || op.status === 'failed' || op.status === 'pending')
          this.refuse(event, operationID, `failed while ${op.status}`);
        if (op.status !== 'completed') op.status = 'failed';
        break;
      case 'OperationSettlementRequested':
        if (op.status !== 'failed')
          this.refuse(event, operationID, `settlement requested while ${op.status}, not failed`);
        this.platformAdministrator(
          event,
          String(data.requestedBy),
          () => `settlement request of operation ${operationID}`,
          operationID,
        );
        op.settlementRequestedBy = String(data.requestedBy);
        break;
      case 'OperationSettledFromLedger': {
        // A correction: completes a failed operation whose money moved, as the ledger has it (the ledger check matches
        // its legs).
        if (op.status !== 'failed') this.refuse(event, operationID, `settled while ${op.status}, not failed`);
        const by = String(data.approvedBy);
        if (op.settlementRequestedBy === undefined || op.settlementRequestedBy !== data.requestedBy) {
          this.problem(
            'maker-checker',
            event,
            `settlement of operation ${operationID} approved by ${by} without a matching request (asked by ` +
              `${op.settlementRequestedBy ?? 'nobody'})`,
            operationID,
          );
        }
        if (by === data.requestedBy)
          this.problem(
            'maker-checker',
            event,
            `settlement of operation ${operationID} approved by ${by}, who asked for it (maker and checker must ` +
              'differ)',
            operationID,
          );
        this.platformAdministrator(event, by, () => `settlement approval of operation ${operationID}`, operationID);
        if (op.status === 'failed') {
          this.completed += 1;
          op.status = 'completed';
          op.completedPosition = event.position;
          op.blockchainID = data.blockchainID as string;
          op.sequenceNumber = data.sequenceNumber as number;
        }
        delete op.settlementRequestedBy;
        break;
      }
      default:
        this.refuse(event, operationID, 'unknown operation event');
    }
  }

  /** A settlement's maker or checker: an active platform administrator at that point. */
  private platformAdministrator(
    event: RecordedEvent,
    userID: string,
    describe: () => string,
    operationID: string,
  ): void {
    const user = this.users.get(userID);
    if (!user)
      this.problem('maker-checker', event, `${describe()} by ${userID}, who is not a user at that point`, operationID);
    else if (!user.platformAdmin || user.disabled)
      this.problem(
        'maker-checker',
        event,
        `${describe()} by user ${userID}, who is not an active platform administrator`,
        operationID,
      );
  }

  private refuse(event: RecordedEvent, operationID: string, detail: string): void {
    this.problem('operation', event, `${event.type} of ${operationID}: ${detail}`, operationID);
  }

  private movement(event: RecordedEvent, credit: boolean): void {
    const data = event.data as { wallet: { kind: string; id: string }; operationID: string; amount: string };
    if (this.group && this.group.operationID !== data.operationID) this.closeGroup();
    this.group ??= { operationID: data.operationID, position: event.position, deltas: new Map() };
    const address = addressOf(data.wallet);
    let units: bigint;
    try {
      units = toUnits(data.amount);
    } catch {
      this.problem(
        'wallet',
        event,
        `${event.type} of ${address}: amount ${JSON.stringify(data.amount)} is not a decimal`,
        data.operationID,
      );
      return;
    }
    const delta = credit ? units : -units;
    const balance = (this.balances.get(address) ?? 0n) + delta;
    this.balances.set(address, balance);
    this.total += delta;
    if (address === ISSUANCE_ADDRESS) {
      if (credit) this.redeemed += units;
      else this.issued += units;
    } else if (balance < 0n && !this.negative.has(address)) {
      this.negative.add(address);
      this.problem(
        'wallet',
        event,
        `wallet ${address} goes below zero: ${fromUnits(balance, this.scale)} after ${event.type} of ${data.amount}`,
        data.operationID,
      );
    }
    this.group.deltas.set(address, (this.group.deltas.get(address) ?? 0n) + delta);
  }

  private closeGroup(): void {
    const group = this.group!;
    this.group = null;
    const report = (check: AuditCheck, detail: string) =>
      this.problems.add({ check, position: group.position, operationID: group.operationID, detail });
    const money = (units: bigint) => fromUnits(units, this.scale);
    if (this.total !== this.expectedTotal) {
      report(
        'supply',
        `after the money movements of ${group.operationID}, all wallets sum to ${money(this.total)} instead of ` +
          `0: supply ${money(this.supply)} != issued ${money(this.issued)} - redeemed ${money(this.redeemed)}`,
      );
      this.expectedTotal = this.total; // report each change once, not every step after it
    }
    const op = this.operations.get(group.operationID);
    if (!op || op.status !== 'completed' || op.moved) {
      report(
        'supply',
        `money moved for operation ${group.operationID}, which ` +
          `${!op ? 'does not exist' : op.moved ? 'had already moved its money' : `is ${op.status}, not completed`}`,
      );
      if (op) op.moved = true;
      return;
    }
    op.moved = true;
    const amount = toUnits(op.amount);
    const fee = toUnits(op.fee);
    const expected = new Map<string, bigint>();
    const add = (address: string, delta: bigint) => expected.set(address, (expected.get(address) ?? 0n) + delta);
    add(op.payer, -(amount + fee));
    add(op.payee, amount);
    if (fee > 0n) add(FEES_ADDRESS, fee);
    const same =
      expected.size === group.deltas.size &&
      [...expected].every(([address, delta]) => group.deltas.get(address) === delta);
    if (!same) {
      const show = (map: Map<string, bigint>) =>
        [...map].map(([address, delta]) => `${address} ${delta > 0n ? '+' : ''}${money(delta)}`).join(', ');
      report(
        'supply',
        `the money movements of ${group.operationID} (${show(group.deltas)}) are not what it requested ` +
          `(${show(expected)})`,
      );
    }
  }
}
