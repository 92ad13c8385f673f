/**
 * The event catalog. Events are facts in the past tense; their data carries everything a read model needs,
 * so projections never query back. Amounts are decimal strings at the asset scale; times are ISO 8601.
 * docs/architecture.md lists the same catalog with its streams.
 */
import type { PartyRef, PartyType } from './parties.ts';

export interface Event<Type extends string, Data> {
  type: Type;
  data: Data;
}

// Parties --------------------------------------------------------------------------------------------------
export type DistributorOnboarded = Event<
  'DistributorOnboarded',
  { distributorID: string; name: string; shortCode: string; onboardedAt: string }
>;
export type MerchantOnboarded = Event<
  'MerchantOnboarded',
  { merchantID: string; name: string; shortCode: string; onboardedAt: string }
>;
export type IndividualRegistered = Event<'IndividualRegistered', { phone: string; name: string; registeredAt: string }>;
/** Written to a claim stream in the same atomic append as the onboarding it belongs to. */
export type ShortCodeClaimed = Event<'ShortCodeClaimed', { partyType: PartyType; shortCode: string; partyID: string }>;
export type PartyEvent = DistributorOnboarded | MerchantOnboarded | IndividualRegistered;

// Console users --------------------------------------------------------------------------------------------
export type UserRole = 'maker' | 'checker';
export type UserAdded = Event<
  'UserAdded',
  {
    userID: string;
    /** null for a platform administrator, who belongs to no party. */
    party: PartyRef | null;
    email: string;
    /** scrypt, self-describing (see domain/passwords.ts). */
    passwordHash: string;
    roles: UserRole[];
    platformAdmin: boolean;
    /**
     * True when the password is a one-time temporary password (a user added through an approved access
     * request), which must be changed at the first login. Absent (false) in events written before it existed.
     */
    mustChangePassword: boolean;
    addedAt: string;
  }
>;
export type EmailClaimed = Event<'EmailClaimed', { email: string; userID: string }>;
/** Narrowing takes effect at once: a disabled user cannot log in, and their sessions end. */
export type UserDisabled = Event<
  'UserDisabled',
  { userID: string; disabledBy: string; reason: string; disabledAt: string }
>;
/** Widening takes effect only through an approved access request, named by `requestID`. */
export type UserEnabled = Event<
  'UserEnabled',
  { userID: string; requestID: string; approvedBy: string; enabledAt: string }
>;
export type UserRoleAdded = Event<
  'UserRoleAdded',
  { userID: string; role: UserRole; requestID: string; approvedBy: string; addedAt: string }
>;
export type UserRoleRemoved = Event<
  'UserRoleRemoved',
  { userID: string; role: UserRole; removedBy: string; removedAt: string }
>;
/** An administrator's reset: a one-time temporary password (scrypt hash) that must be changed at the next login. */
export type UserPasswordReset = Event<
  'UserPasswordReset',
  { userID: string; passwordHash: string; requestID: string; approvedBy: string; resetAt: string }
>;
/** The user changed their own password (the current one was checked). */
export type UserPasswordChanged = Event<
  'UserPasswordChanged',
  { userID: string; passwordHash: string; changedAt: string }
>;
/** The same password, hashed again with today's scrypt cost at a successful login (the old hash had a lower one). */
export type UserPasswordHashUpgraded = Event<
  'UserPasswordHashUpgraded',
  { userID: string; passwordHash: string; upgradedAt: string }
>;
export type UserEvent =
  | UserAdded
  | UserDisabled
  | UserEnabled
  | UserRoleAdded
  | UserRoleRemoved
  | UserPasswordReset
  | UserPasswordChanged
  | UserPasswordHashUpgraded;

// Access requests: maker-checker on access itself ------------------------------------------------------------
/** What an access request asks for: every change that grants or widens a console user's access. */
export type AccessChange =
  | {
      kind: 'add-user';
      userID: string;
      party: PartyRef | null;
      email: string;
      roles: UserRole[];
      platformAdmin: boolean;
    }
  | { kind: 'add-role'; userID: string; email: string; role: UserRole }
  | { kind: 'enable-user'; userID: string; email: string }
  | { kind: 'reset-password'; userID: string; email: string };
export type AccessRequested = Event<
  'AccessRequested',
  { requestID: string; change: AccessChange; reason: string | null; requestedBy: string; requestedAt: string }
>;
/** Appended atomically with the change's own events on the user's stream. */
export type AccessRequestApproved = Event<
  'AccessRequestApproved',
  { requestID: string; approvedBy: string; approvedAt: string }
>;
export type AccessRequestRejected = Event<
  'AccessRequestRejected',
  { requestID: string; rejectedBy: string; reason: string | null; rejectedAt: string }
>;
export type AccessRequestEvent = AccessRequested | AccessRequestApproved | AccessRequestRejected;

// API keys -------------------------------------------------------------------------------------------------
export type Permission = 'Read Balance' | 'Read Transactions' | 'Perform Operations';
export const PERMISSIONS: readonly Permission[] = ['Read Balance', 'Read Transactions', 'Perform Operations'];

export type ApiKeyRequested = Event<
  'ApiKeyRequested',
  {
    keyID: string;
    party: PartyRef;
    label: string;
    permissions: Permission[];
    maxTransactionAmount: string | null;
    maxDailyVolume: string | null;
    /** Normalized addresses and CIDR ranges; empty means any address. */
    allowedIPs: string[];
    expiresInDays: number;
    requestedBy: string;
    requestedAt: string;
  }
>;
export type ApiKeyApproved = Event<
  'ApiKeyApproved',
  {
    keyID: string;
    approvedBy: string;
    approvedAt: string;
    expiresAt: string;
    /** SHA-256 of the secret, hex. The secret itself is never stored. */
    secretHash: string;
  }
>;
export type ApiKeyRejected = Event<
  'ApiKeyRejected',
  { keyID: string; rejectedBy: string; reason: string | null; rejectedAt: string }
>;
/** The maker takes back their own request while it is still pending: final, like a rejection. */
/**
 * `withdrawnBy: 'system'` with `departedUserID`: its maker was disabled or lost the maker role before a checker
 * decided.
 */
export type ApiKeyRequestWithdrawn = Event<
  'ApiKeyRequestWithdrawn',
  { keyID: string; withdrawnBy: string; withdrawnAt: string; departedUserID?: string }
>;
export type ApiKeyRevocationRequested = Event<
  'ApiKeyRevocationRequested',
  { keyID: string; requestedBy: string; reason: string; requestedAt: string }
>;
export type ApiKeyRevocationRejected = Event<
  'ApiKeyRevocationRejected',
  { keyID: string; rejectedBy: string; reason: string | null; rejectedAt: string }
>;
/**
 * `approvedBy: 'system'` with `departedUserID`: revoked at once because the user holding its secret was disabled or
 * lost the maker role.
 */
export type ApiKeyRevoked = Event<
  'ApiKeyRevoked',
  { keyID: string; approvedBy: string; revokedAt: string; departedUserID?: string }
>;
/** A maker asks for a new secret for an active key (src/domain/secret-rotation.ts); a checker decides. */
export type ApiKeyRotationRequested = Event<
  'ApiKeyRotationRequested',
  { keyID: string; requestedBy: string; reason: string; requestedAt: string }
>;
export type ApiKeyRotationRejected = Event<
  'ApiKeyRotationRejected',
  { keyID: string; rejectedBy: string; reason: string | null; rejectedAt: string }
>;
/** By its maker, or by `system` when that maker left (`departedUserID`, in the departure's append). */
export type ApiKeyRotationWithdrawn = Event<
  'ApiKeyRotationWithdrawn',
  { keyID: string; withdrawnBy: string; withdrawnAt: string; departedUserID?: string }
>;
/**
 * The key has a new secret (SHA-256 `secretHash`), held for `secretHolder`, the maker who asked for the rotation;
 * the previous one keeps working until `previousValidUntil`. Id, terms and expiry are unchanged.
 */
export type ApiKeyRotated = Event<
  'ApiKeyRotated',
  {
    keyID: string;
    approvedBy: string;
    rotatedAt: string;
    secretHash: string;
    previousValidUntil: string;
    secretHolder: string;
  }
>;
/**
 * The secret a rotation replaced stops working before its overlap ends, because its holder left (disabled, or
 * no longer a maker): written by `system` in the departure's append. The current secret is untouched.
 */
export type ApiKeyPreviousSecretEnded = Event<
  'ApiKeyPreviousSecretEnded',
  { keyID: string; endedAt: string; departedUserID: string }
>;
export type ApiKeyEvent =
  | ApiKeyRequested
  | ApiKeyApproved
  | ApiKeyRejected
  | ApiKeyRequestWithdrawn
  | ApiKeyRevocationRequested
  | ApiKeyRevocationRejected
  | ApiKeyRevoked
  | ApiKeyRotationRequested
  | ApiKeyRotationRejected
  | ApiKeyRotationWithdrawn
  | ApiKeyRotated
  | ApiKeyPreviousSecretEnded;

// Webhook endpoints: maker-checker, like API keys ------------------------------------------------------------
/** What a client can subscribe an endpoint to (docs/webhooks.md). */
export type WebhookEventType =
  | 'operation.approved'
  | 'operation.rejected'
  | 'operation.completed'
  | 'operation.failed'
  | 'payment.received'
  | 'api_key.revoked';
export const WEBHOOK_EVENT_TYPES: readonly WebhookEventType[] = [
  'operation.approved',
  'operation.rejected',
  'operation.completed',
  'operation.failed',
  'payment.received',
  'api_key.revoked',
];

/** A signing secret sealed with AES-256-GCM under the secrets key (src/domain/webhook-secrets.ts): never in clear. */
export interface SealedWebhookSecret {
  /** Which secrets key sealed it: the first 16 hex digits of its SHA-256. */
  sealedWith: string;
  iv: string;
  tag: string;
  data: string;
}

export type WebhookEndpointRequested = Event<
  'WebhookEndpointRequested',
  {
    endpointID: string;
    party: PartyRef;
    /** Validated: https, or http to the loopback host only where the configuration allowed it. */
    url: string;
    eventTypes: WebhookEventType[];
    requestedBy: string;
    requestedAt: string;
  }
>;
/**
 * How deliveries are signed (docs/webhooks.md): `standard-webhooks` (https://www.standardwebhooks.com/), or
 * `stripe-v1`, the legacy `t=…,v1=<hex>` header kept byte for byte for the endpoints approved before it.
 */
export type WebhookSignatureScheme = 'stripe-v1' | 'standard-webhooks';

/**
 * The signing secret is made at approval, shown once to the maker, and kept sealed here for signing.
 * `signatureScheme` is the secret's scheme; events written before it existed have none: `stripe-v1`.
 */
export type WebhookEndpointApproved = Event<
  'WebhookEndpointApproved',
  {
    endpointID: string;
    approvedBy: string;
    approvedAt: string;
    secret: SealedWebhookSecret;
    signatureScheme?: WebhookSignatureScheme;
  }
>;
export type WebhookEndpointRejected = Event<
  'WebhookEndpointRejected',
  { endpointID: string; rejectedBy: string; reason: string | null; rejectedAt: string; departedUserID?: string }
>;
/** Final. `disabledBy` is a user id, or `system` when deliveries kept failing for a day. */
export type WebhookEndpointDisabled = Event<
  'WebhookEndpointDisabled',
  { endpointID: string; disabledBy: string; reason: string; disabledAt: string; departedUserID?: string }
>;
/** A maker asks for a new signing secret for an active endpoint, like an API key's rotation. */
export type WebhookSecretRotationRequested = Event<
  'WebhookSecretRotationRequested',
  { endpointID: string; requestedBy: string; reason: string; requestedAt: string }
>;
export type WebhookSecretRotationRejected = Event<
  'WebhookSecretRotationRejected',
  { endpointID: string; rejectedBy: string; reason: string | null; rejectedAt: string }
>;
/** By its maker, or by `system` when that maker left (`departedUserID`, in the departure's append). */
export type WebhookSecretRotationWithdrawn = Event<
  'WebhookSecretRotationWithdrawn',
  { endpointID: string; withdrawnBy: string; withdrawnAt: string; departedUserID?: string }
>;
/**
 * The endpoint has a new signing secret, sealed like the approval's and held for `secretHolder`; deliveries are
 * signed with both secrets until `previousValidUntil`, then with the new one only. `signatureScheme` is the new
 * secret's scheme (absent in events written before it existed: `stripe-v1`). When it differs from the previous
 * secret's, the previous scheme goes on, signed with both secrets, until `previousValidUntil`: the switch.
 */
export type WebhookSecretRotated = Event<
  'WebhookSecretRotated',
  {
    endpointID: string;
    approvedBy: string;
    rotatedAt: string;
    secret: SealedWebhookSecret;
    previousValidUntil: string;
    secretHolder: string;
    signatureScheme?: WebhookSignatureScheme;
  }
>;
/** As ApiKeyPreviousSecretEnded, for a signing secret: deliveries stop carrying its signature at once. */
export type WebhookEndpointPreviousSecretEnded = Event<
  'WebhookEndpointPreviousSecretEnded',
  { endpointID: string; endedAt: string; departedUserID: string }
>;
export type WebhookEndpointEvent =
  | WebhookEndpointRequested
  | WebhookEndpointApproved
  | WebhookEndpointRejected
  | WebhookEndpointDisabled
  | WebhookSecretRotationRequested
  | WebhookSecretRotationRejected
  | WebhookSecretRotationWithdrawn
  | WebhookSecretRotated
  | WebhookEndpointPreviousSecretEnded;

export type WalletOpsEvent =
  | PartyEvent
  | ShortCodeClaimed
  | UserEvent
  | EmailClaimed
  | AccessRequestEvent
  | ApiKeyEvent
  | WebhookEndpointEvent
  | OperationEvent
  | WalletEvent
  | KeyVolumeEvent
  | StateSnapshotted
  | IdempotentRequestRecorded
  | CashOutConsentEvent;

// Operations -----------------------------------------------------------------------------------------------
export type DistributorOperationType = 'cash-in' | 'cash-out-fulfillment';
export type MerchantOperationType = 'cash-out' | 'pay-merchant' | 'pay-individual';
/**
 * Operations from other channels, executed like the others but without a checker: e-money issued to a
 * distributor's float by an operator (treasury), and a payment an individual made in the wallet app.
 */
export type ChannelOperationType = 'issue' | 'individual-payment';
export type OperationType = DistributorOperationType | MerchantOperationType | ChannelOperationType;

/** A wallet the ledger knows: a party's, an individual's (by phone), or the platform's fee wallet. */
export type WalletRef =
  | { kind: 'distributor'; id: string }
  | { kind: 'merchant'; id: string }
  | { kind: 'individual'; id: string }
  /** The platform's fee wallet, and the issuing account that e-money is issued from. */
  | { kind: 'platform'; id: 'fees' | 'issuance' };

/** The other side of an operation, resolved at creation so read models never look it up. */
export interface Counterparty {
  kind: 'distributor' | 'merchant' | 'individual';
  /** distributorID, merchantID, or the E.164 phone of an individual. */
  id: string;
  name: string;
  /** Distributors and merchants only. */
  shortCode?: string;
}

export type OperationRequested = Event<
  'OperationRequested',
  {
    operationID: string;
    /** The party that created the operation with its key; null for treasury issuance and individual payments. */
    party: PartyRef | null;
    /** The API key that created it; null for operations from other channels. */
    keyID: string | null;
    /**
     * Which of the key's secrets authenticated the create: its generation (1 = the secret of the key's approval,
     * then one more per rotation), and so who held it. Absent on operations created before it was recorded.
     */
    secretGeneration?: number;
    operationType: OperationType;
    amount: string;
    fee: string;
    /** Who pays amount + fee, and who receives amount. */
    payer: WalletRef;
    payee: WalletRef;
    /** The payer's name, and short code when the payer is a distributor or merchant (what a payee's lists show). */
    payerName: string;
    payerShortCode: string | null;
    /** The other side as the creating party sees it: the payee, or for cash-out-fulfillment the paying individual. */
    counterparty: Counterparty;
    memo: string | null;
    /** cash-out-fulfillment only. */
    cashOutFulfillmentType: 'cash' | null;
    cashOutFulfillmentID: string | null;
    /** The key's volume day (in the configured time zone) the amount counts against, when the key has a limit. */
    volumeDay: string | null;
    createdAt: string;
  }
>;
/** Ready for the executor. `approvedBy` is a checker's user id, or the actor of a channel without a checker. */
export type OperationApproved = Event<
  'OperationApproved',
  { operationID: string; approvedBy: string; approvedAt: string }
>;
export type OperationRejected = Event<
  'OperationRejected',
  { operationID: string; rejectedBy: string; reason: string; rejectedAt: string }
>;
/**
 * An executor claimed the approved operation and is about to submit it to the ledger. Appended at the
 * operation's current revision, so only one executor wins a claim; it holds until `leaseUntil`, after which
 * another executor may take over (and first asks the ledger whether the transaction already happened).
 */
export type OperationExecutionStarted = Event<
  'OperationExecutionStarted',
  { operationID: string; executorID: string; attempt: number; leaseUntil: string; startedAt: string }
>;
/** The ledger accepted the transaction under this sequence number; completion follows. */
export type OperationSubmitted = Event<
  'OperationSubmitted',
  { operationID: string; sequenceNumber: number; submittedAt: string }
>;
/**
 * Executed on the ledger. Appended atomically with the WalletDebited and WalletCredited events that move the
 * money in the write side's wallets (payer: amount + fee; payee: amount; platform fee wallet: fee).
 */
export type OperationCompleted = Event<
  'OperationCompleted',
  {
    operationID: string;
    blockchainID: string;
    /** The ledger-side wallet operation, `wo_...`. */
    walletOperationID: string;
    sequenceNumber: number;
    completedAt: string;
  }
>;
/** Not executed; appended atomically with the releases of what the operation held. */
export type OperationFailed = Event<'OperationFailed', { operationID: string; lastError: string; failedAt: string }>;
/**
 * An operator asks to settle a failed operation whose money moved on the ledger anyway (a transfer that landed
 * after the failure was recorded, before the ledger arbitrated fates): the transaction the ledger has for it.
 * It changes nothing until another operator approves it (OperationSettledFromLedger).
 */
export type OperationSettlementRequested = Event<
  'OperationSettlementRequested',
  {
    operationID: string;
    /** The requesting platform administrator's user id. */
    requestedBy: string;
    reason: string;
    sequenceNumber: number;
    blockchainID: string;
    requestedAt: string;
  }
>;
/**
 * The correction of a failed operation whose money moved: it is completed as the ledger has it. Appended
 * atomically with the WalletDebited (heldAmount 0: the failure released the hold) and WalletCredited events of
 * the ledger's legs, as a completion is. Maker-checker: `approvedBy` is never `requestedBy`.
 */
export type OperationSettledFromLedger = Event<
  'OperationSettledFromLedger',
  {
    operationID: string;
    sequenceNumber: number;
    blockchainID: string;
    walletOperationID: string;
    legs: Array<{ from: string; to: string; amount: string }>;
    requestedBy: string;
    approvedBy: string;
    reason: string;
    settledAt: string;
  }
>;
export type OperationEvent =
  | OperationRequested
  | OperationApproved
  | OperationRejected
  | OperationExecutionStarted
  | OperationSubmitted
  | OperationCompleted
  | OperationFailed
  | OperationSettlementRequested
  | OperationSettledFromLedger;

// Wallets (what the write side needs to keep pending operations from overdrawing a payer) --------------------
/** Funds set aside for a pending or approved operation: they no longer count as available. */
export type FundsHeld = Event<'FundsHeld', { wallet: WalletRef; operationID: string; amount: string }>;
/** A hold given back because its operation was rejected or failed. */
export type HoldReleased = Event<
  'HoldReleased',
  { wallet: WalletRef; operationID: string; amount: string; reason: 'rejected' | 'failed' }
>;
/** Money that really moved on the ledger (written when an operation completes, or when funds are issued). */
export type WalletCredited = Event<'WalletCredited', { wallet: WalletRef; operationID: string; amount: string }>;
/** A completed debit. `heldAmount` is the operation's hold that it settles ("0" when there was none). */
export type WalletDebited = Event<
  'WalletDebited',
  { wallet: WalletRef; operationID: string; amount: string; heldAmount: string }
>;
export type WalletEvent = FundsHeld | HoldReleased | WalletCredited | WalletDebited;

// A key's daily volume ---------------------------------------------------------------------------------------
export type VolumeReserved = Event<
  'VolumeReserved',
  { keyID: string; day: string; operationID: string; amount: string }
>;
export type VolumeReleased = Event<
  'VolumeReleased',
  { keyID: string; day: string; operationID: string; amount: string }
>;
export type KeyVolumeEvent = VolumeReserved | VolumeReleased;

// Snapshots of decision states ---------------------------------------------------------------------------------
/**
 * A summary of a long stream's folded state at one revision (src/commands/snapshots.ts), in its own stream
 * `snapshot-<stream>`: a decision after a restart folds from it instead of from the stream's first event.
 * A cache, never a source: `audit verify` folds the history and reports a snapshot that disagrees with it.
 */
export type StateSnapshotted = Event<
  'StateSnapshotted',
  {
    /** The stream summarized (`wallet-…`, `keyVolume-…`). */
    stream: string;
    /** The last revision of that stream the state includes. */
    revision: number;
    /** Which fold, and its version (`wallet/1`, `keyVolume/1`): a loader ignores a snapshot of another. */
    fold: string;
    /** The folded state: for `wallet/1` {balance, held}; for `keyVolume/1` {total}; decimal strings. */
    state: Record<string, string>;
  }
>;

// Idempotency ------------------------------------------------------------------------------------------------
export type IdempotentRequestRecorded = Event<
  'IdempotentRequestRecorded',
  {
    keyID: string;
    /** SHA-256 of the method, path and canonical body: a repeat must match it. */
    requestHash: string;
    response: { status: number; body: Record<string, unknown> };
    recordedAt: string;
  }
>;

// An individual's consent to cash-outs (CASH_OUT_CONSENT=individual-code) ---------------------------------------
/**
 * A one-time code the individual got from their wallet app, kept only as its HMAC under the secrets key
 * (src/domain/cash-out-codes.ts). `maxAmount` bounds the one cash-out it authorizes (null: any amount).
 */
export type CashOutCodeIssued = Event<
  'CashOutCodeIssued',
  { phone: string; codeID: string; codeHash: string; maxAmount: string | null; issuedAt: string; expiresAt: string }
>;
/**
 * Appended atomically with the cash-out-fulfillment's OperationRequested: the code is spent, whatever becomes of the
 * operation.
 */
export type CashOutCodeUsed = Event<
  'CashOutCodeUsed',
  { phone: string; codeID: string; operationID: string; usedAt: string }
>;
/**
 * A cash-out presented a code that matches none of the individual's live codes: `wrongCount` is the number of
 * such wrong codes against the current live codes, this one included (src/commands/cash-out-consent.ts).
 */
export type WrongCashOutCodePresented = Event<
  'WrongCashOutCodePresented',
  { phone: string; operationID: string; wrongCount: number; presentedAt: string }
>;
/** After MAX_WRONG_CASH_OUT_CODES wrong codes, every live code of the individual is void: they ask for a new one. */
export type CashOutCodesVoided = Event<'CashOutCodesVoided', { phone: string; codeIDs: string[]; voidedAt: string }>;
export type CashOutConsentEvent = CashOutCodeIssued | CashOutCodeUsed | WrongCashOutCodePresented | CashOutCodesVoided;
