import { createHash, randomBytes } from 'node:crypto';
import type { CollectionDefinition, ReadStore } from '../ports/read-store.ts';

/**
 * Console sessions, kept in the read store so that they survive a restart and are shared by every process
 * on the same store. A document is keyed by the SHA-256 of the session token, never by the token: someone
 * who reads the store learns no cookie they could present. Sessions end after `idleMs` without a request,
 * after `absoluteMs` in any case, and at logout.
 */
export const SESSIONS_COLLECTION: CollectionDefinition = { name: 'console_sessions', indexes: [['userID']] };

export interface SessionDoc {
  /** SHA-256 (hex) of the token in the cookie. */
  id: string;
  userID: string;
  /** The synchronizer token every state-changing form must carry. */
  csrfToken: string;
  createdAt: string;
  lastSeenAt: string;
  /** A one-line message for the next page (Post/Redirect/Get). */
  flash: { kind: 'ok' | 'error'; text: string } | null;
  [key: string]: unknown;
}

export interface SessionTimes {
  idleMs: number;
  absoluteMs: number;
}

export const DEFAULT_SESSION_TIMES: SessionTimes = { idleMs: 8 * 3_600_000, absoluteMs: 24 * 3_600_000 };

/** A request refreshes `lastSeenAt` at most this often: one write a minute, not one per request. */
const TOUCH_EVERY_MS = 60_000;

export const newToken = (): string => randomBytes(32).toString('base64url');
const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

export class ConsoleSessions {
  private readonly store: ReadStore;
  private readonly clock: () => Date;
  readonly times: SessionTimes;
  constructor(store: ReadStore, clock: () => Date, times: SessionTimes = DEFAULT_SESSION_TIMES) {
    this.store = store;
    this.clock = clock;
    this.times = times;
  }

  /** A new session for the user; returns the token for the cookie. Expired sessions of the user are removed. */
  async create(userID: string): Promise<{ token: string; session: SessionDoc }> {
    const token = newToken();
    const now = this.clock().toISOString();
    const session: SessionDoc = {
      id: hashToken(token),
      userID,
      csrfToken: newToken(),
      createdAt: now,
      lastSeenAt: now,
      flash: null,
    };
    const stale = (await this.store.find<SessionDoc>(SESSIONS_COLLECTION.name, { where: { userID } })).filter((s) =>
      this.expired(s),
    );
    await this.store.commit([
      ...stale.map((s) => ({ op: 'delete' as const, collection: SESSIONS_COLLECTION.name, id: s.id })),
      { op: 'upsert', collection: SESSIONS_COLLECTION.name, doc: session },
    ]);
    return { token, session };
  }

  /** The live session of a cookie token, refreshed; null when unknown or expired (an expired one is removed). */
  async resume(token: string): Promise<SessionDoc | null> {
    const session = await this.store.get<SessionDoc>(SESSIONS_COLLECTION.name, hashToken(token));
    if (!session) return null;
    if (this.expired(session)) {
      await this.destroy(session);
      return null;
    }
    const now = this.clock();
    if (now.getTime() - Date.parse(session.lastSeenAt) >= TOUCH_EVERY_MS) {
      session.lastSeenAt = now.toISOString();
      await this.store.commit([
        {
          op: 'patch',
          collection: SESSIONS_COLLECTION.name,
          id: session.id,
          patch: { lastSeenAt: session.lastSeenAt },
        },
      ]);
    }
    return session;
  }

  /** The live session of a token without refreshing it: a background poll must not keep an idle session alive. */
  async peek(token: string): Promise<SessionDoc | null> {
    const session = await this.store.get<SessionDoc>(SESSIONS_COLLECTION.name, hashToken(token));
    return session && !this.expired(session) ? session : null;
  }

  /** Ends every session of a user (disabled, or their password reset or changed), but `except` one. */
  async endAllFor(userID: string, except?: string): Promise<number> {
    return endSessionsOf(this.store, userID, except);
  }

  async destroy(session: Pick<SessionDoc, 'id'>): Promise<void> {
    await this.store.commit([{ op: 'delete', collection: SESSIONS_COLLECTION.name, id: session.id }]);
  }

  async setFlash(session: SessionDoc, flash: SessionDoc['flash']): Promise<void> {
    session.flash = flash;
    await this.store.commit([{ op: 'patch', collection: SESSIONS_COLLECTION.name, id: session.id, patch: { flash } }]);
  }

  /** The flash message, once: it is cleared as it is read. */
  async takeFlash(session: SessionDoc): Promise<SessionDoc['flash']> {
    const { flash } = session;
    if (flash) await this.setFlash(session, null);
    return flash;
  }

  private expired(session: SessionDoc): boolean {
    const now = this.clock().getTime();
    return (
      now - Date.parse(session.lastSeenAt) > this.times.idleMs ||
      now - Date.parse(session.createdAt) > this.times.absoluteMs
    );
  }
}

/** Ends a user's console sessions at once; also used by the operator CLI, which has no ConsoleSessions. */
export async function endSessionsOf(store: ReadStore, userID: string, except?: string): Promise<number> {
  const ended = (await store.find<SessionDoc>(SESSIONS_COLLECTION.name, { where: { userID } })).filter(
    (s) => s.id !== except,
  );
  if (ended.length > 0)
    await store.commit(ended.map((s) => ({ op: 'delete' as const, collection: SESSIONS_COLLECTION.name, id: s.id })));
  return ended.length;
}
