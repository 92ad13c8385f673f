import type { Router } from 'express';
import { keyKeepers } from '../commands/api-keys.ts';
import type { ActiveUser } from '../commands/back-office.ts';
import { vouchConflict } from '../domain/segregation.ts';
import { countPendingOfKey } from '../projections/pending-operations-queries.ts';
import { webhookEndpointsOfParty } from '../projections/webhook-endpoints-queries.ts';
import { settled, type ConsoleServices } from './context.ts';
import { noStore, readCookie, SESSION_COOKIE } from './http-security.ts';
import { countPending } from './party-operations.ts';
import { loadUser } from './users.ts';

/**
 * What waits for the viewer's decision: the count beside each link of the navigation. Only what this user
 * could decide counts (a checker's operations, keys and endpoints; an administrator's access requests), and
 * never a request of their own, nor an operation made with a key they requested (another checker approves it).
 */
export interface Waiting {
  operations: number;
  keys: number;
  webhooks: number;
  access: number;
  total: number;
}

export const NOTHING_WAITING: Waiting = { operations: 0, keys: 0, webhooks: 0, access: 0, total: 0 };

const withTotal = (counts: Omit<Waiting, 'total'>): Waiting => ({
  ...counts,
  total: counts.operations + counts.keys + counts.webhooks + counts.access,
});

export async function waitingFor(services: ConsoleServices, user: ActiveUser): Promise<Waiting> {
  if (user.mustChangePassword) return NOTHING_WAITING;
  if (user.platformAdmin) {
    // Another administrator's request of a moment ago counts (a failure here only leaves the counts out).
    await settled(services.deps.userReads.current());
    const access = services.users
      .requests('pending')
      .filter((r) => r.requestedBy !== user.userID && r.change.userID !== user.userID).length;
    return withTotal({ operations: 0, keys: 0, webhooks: 0, access });
  }
  if (!user.party || !user.roles.includes('checker')) return NOTHING_WAITING;
  const { readStore, directory, clock } = services.deps;
  const now = clock().toISOString();
  const keys = directory.listByParty(user.party, now);
  // Whether the checker holds a working secret of the key, or requested it: its approvals are another checker's.
  const holds = (keyID: string) => {
    const record = directory.get(keyID);
    return (
      record !== undefined && vouchConflict(user.userID, { maker: null, keepers: keyKeepers(record, now) }) !== null
    );
  };
  const keysToDecide =
    keys.filter(
      (k) =>
        (k.state === 'pending' && k.requestedBy !== user.userID) ||
        (k.state === 'revocation_pending' &&
          directory.get(k.keyID)?.revocationRequestedBy !== user.userID &&
          !holds(k.keyID)),
    ).length +
    keys.filter((k) => {
      const rotation =
        k.state === 'active' || k.state === 'revocation_pending' ? directory.get(k.keyID)?.rotation : null;
      return rotation != null && rotation.requestedBy !== user.userID && !holds(k.keyID);
    }).length;
  // Operations made with a key this checker holds a secret of are for another checker: a handful of indexed counts.
  const ownKeys = keys.filter((k) => holds(k.keyID)).map((k) => k.keyID);
  const ownKeysOperations = (await Promise.all(ownKeys.map((keyID) => countPendingOfKey(readStore, keyID)))).reduce(
    (a, b) => a + b,
    0,
  );
  const operations = Math.max(0, (await countPending(services, user.party)) - ownKeysOperations);
  const webhooks = (await webhookEndpointsOfParty(readStore, user.party)).filter(
    (e) =>
      (e.status === 'pending' && e.requestedBy !== user.userID) ||
      (e.status === 'active' && e.rotationRequestedBy != null && e.rotationRequestedBy !== user.userID),
  ).length;
  return withTotal({ operations, keys: keysToDecide, webhooks, access: 0 });
}

/**
 * GET /console/waiting: the counts as JSON, polled by console.js while the tab is visible. Mounted before the
 * session middleware on purpose: it reads the session without refreshing it, so a tab left open does not keep
 * a session alive past its idle limit. An ended session answers 401 and the script stops asking.
 */
export function waitingRoute(router: Router, services: ConsoleServices): void {
  router.get('/waiting', async (req, res) => {
    noStore(res);
    const token = readCookie(req, SESSION_COOKIE);
    const session = token ? await services.sessions.peek(token) : null;
    const user = session ? await loadUser(services, session.userID) : null;
    if (!user) {
      res.status(401).json({ error: 'session ended' });
      return;
    }
    res.json(await waitingFor(services, user));
  });
}
