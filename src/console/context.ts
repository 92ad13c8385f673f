import type { ApiKeyEnvironment } from '../domain/api-key-secrets.ts';
import type { Request, Response } from 'express';
import type { ActiveUser, RotationDeps } from '../commands/back-office.ts';
import { userContext } from '../commands/back-office.ts';
import type { PartyLookup } from '../commands/party-lookup.ts';
import type { StateCache } from '../commands/pipeline.ts';
import type { WebhookCommandDeps } from '../commands/webhooks.ts';
import type { CommandContext } from '../commands/pipeline.ts';
import { DomainError } from '../domain/errors.ts';
import type { UserRole } from '../domain/events.ts';
import type { Logger } from '../logger.ts';
import type { EventStore } from '../ports/event-store.ts';
import type { ReadStore } from '../ports/read-store.ts';
import { withTraceparent, type Tracing } from '../ports/tracing.ts';
import { requestTraceparent } from '../http/request-context.ts';
import type { ApiKeyDirectory } from '../projections/api-key-directory.ts';
import type { DirectoryReads } from '../projections/directory-reads.ts';
import type { ReadYourWrites } from '../projections/read-your-writes.ts';
import { formatPartyRef, type PartyRef } from '../domain/parties.ts';
import type { UserDirectory } from '../projections/user-directory.ts';
import type { LoginThrottle, ThrottleLimits } from './login-throttle.ts';
import type { HeldCredentials } from '../commands/held-credentials.ts';
import type { ConsoleSessions, SessionDoc, SessionTimes } from './sessions.ts';

/** What the console needs from the composition root. It calls the back-office commands; it never appends events. */
export interface ConsoleDeps {
  store: EventStore;
  readStore: ReadStore;
  directory: ApiKeyDirectory;
  /** The waits on the follower that keeps `directory` current (src/projections/directory-reads.ts). */
  keyReads: DirectoryReads;
  /** Parties, users and access requests, kept current by a follower of the process (followUsers). */
  users: UserDirectory;
  /** The waits on that follower. */
  userReads: DirectoryReads;
  clock: () => Date;
  assetScale: number;
  logger: Logger;
  cache?: StateCache;
  sessionTimes?: Partial<SessionTimes>;
  throttle?: Partial<ThrottleLimits>;
  /** The 32-byte key that encrypts approved keys' secrets while they wait for their maker in the read store. */
  secretsKey: Buffer;
  /**
   * The credential vault shared with the rest of the process (default: one of the console's own on readStore and
   * secretsKey).
   */
  credentials?: HeldCredentials;
  /** How long an approved key's secret waits for its maker (default 24 h). */
  secretTtlMs?: number;
  /** API_KEY_ENVIRONMENT: the prefix of the keys issued here (default live). */
  apiKeyEnvironment?: ApiKeyEnvironment;
  /** SECRET_ROTATION_OVERLAP_HOURS: how long a rotated secret's predecessor keeps working (default 24). */
  secretRotationOverlapHours?: number;
  /** WEBHOOK_ALLOW_INSECURE_LOCALHOST: a webhook endpoint may be http:// to the loopback host (default false). */
  webhookAllowInsecureLocalhost?: boolean;
  /**
   * CONSOLE_CONFIRM_ABOVE: approving an operation of a larger amount asks once more (a decimal string; absent: never).
   */
  confirmAbove?: string | null;
  /** ASSET_CODE: the currency named beside every amount (default NGN). */
  assetCode?: string;
  /** CONSOLE_WAITING_POLL_MS: how often a visible page asks for its navigation's counts (default 15 s). */
  waitingPollMs?: number;
  /** The process's tracing (an approval continues its operation's trace); none: off. */
  tracing?: Tracing;
  /** A page reading a read model waits (bounded) for this process's own latest write of the party to be in it. */
  readYourWrites?: ReadYourWrites;
}

/** The console's parts, built once per router. */
export interface ConsoleServices {
  deps: ConsoleDeps;
  backOffice: RotationDeps;
  lookup: PartyLookup;
  sessions: ConsoleSessions;
  throttle: LoginThrottle;
  secrets: HeldCredentials;
  /** The back-office deps, plus what the webhook-endpoint commands need. */
  webhooks: WebhookCommandDeps & Pick<RotationDeps, 'secretRotationOverlapHours'>;
  /** Parties, users and access requests: Users, Parties, Access requests and the badge. */
  users: UserDirectory;
}

/**
 * Waits until a directory holds what the page must show (`reads.current()` or `reads.written(position)`): a
 * follower that has not got there within its bound is a store that does not answer, and the page says so.
 */
export async function settled(wait: Promise<boolean>): Promise<void> {
  if (!(await wait))
    throw new ConsoleError(503, 'The console is still reading the latest changes. Try again in a moment.', {
      title: 'Not ready yet',
    });
}

/** The logged-in user of a request, set by the session middleware. */
export interface Viewer {
  user: ActiveUser;
  session: SessionDoc;
}

export class ConsoleError extends Error {
  readonly status: number;
  /** A kinder title than the status's, and the one link that helps (the login page, the page to go back to). */
  readonly page: { title?: string; link?: { href: string; text: string } };
  constructor(status: number, message: string, page: { title?: string; link?: { href: string; text: string } } = {}) {
    super(message);
    this.status = status;
    this.page = page;
    this.name = 'ConsoleError';
  }
}

export function viewer(res: Response): Viewer {
  const found = res.locals.consoleViewer as Viewer | undefined;
  if (!found) throw new Error('console route used without a session');
  return found;
}

/** The viewer's party; platform administrators have none and get 403 on party pages. */
export function partyOf(res: Response) {
  const { user } = viewer(res);
  if (!user.party)
    throw new ConsoleError(
      403,
      'Platform administrators have no party: API keys and operations belong to party users.',
    );
  return user.party;
}

export function requireRole(res: Response, role: UserRole): void {
  partyOf(res);
  if (!viewer(res).user.roles.includes(role)) throw new ConsoleError(403, `This needs the ${role} role.`);
}

export function requireAdmin(res: Response): void {
  if (!viewer(res).user.platformAdmin) throw new ConsoleError(403, 'This needs a platform administrator.');
}

/**
 * The request id as the command's correlation id: events and the request log line share it; and its trace context, if
 * it sent one.
 */
export function commandContext(res: Response): CommandContext {
  return withTraceparent(
    userContext(viewer(res).user, String(res.getHeader('X-Request-Id') ?? '')),
    requestTraceparent(res),
  );
}

/** Waits until the read models a page reads hold this process's own latest writes of the party (read-your-writes). */
export async function untilReadable(services: ConsoleServices, party: PartyRef, ...models: string[]): Promise<void> {
  const reads = services.deps.readYourWrites;
  if (reads) await Promise.all(models.map((model) => reads.untilReadable(model, formatPartyRef(party))));
}

export const correlationId = (res: Response): string => String(res.getHeader('X-Request-Id') ?? '');

/** A domain message as a sentence on a page: capitalised, with its full stop. */
export const sentence = (message: string): string =>
  message.charAt(0).toUpperCase() + message.slice(1) + (message.endsWith('.') ? '' : '.');

/**
 * Runs a command whose INVALID_INPUT refusal goes back to its form: it comes back as the error, for the form to show
 * again; any other error is thrown, to the error page.
 */
export async function formRefusal<T>(
  command: () => Promise<T>,
): Promise<{ refused: DomainError; value?: never } | { refused?: never; value: T }> {
  try {
    return { value: await command() };
  } catch (error) {
    if (!(error instanceof DomainError) || error.code !== 'INVALID_INPUT') throw error;
    return { refused: error };
  }
}

/** One text field of a urlencoded body; a repeated field is refused rather than guessed at. */
export function field(req: Request, name: string): string | undefined {
  const value = (req.body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : undefined;
}

/** A field that may repeat (checkboxes). */
export function fields(req: Request, name: string): string[] {
  const value = (req.body as Record<string, unknown> | undefined)?.[name];
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}
