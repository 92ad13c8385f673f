import type { Response, Router } from 'express';
import { disableUser, removeUserRole, requestAccessChange, type AccessChangeInput } from '../commands/user-admin.ts';
import { liveCredentialsOf, type LiveCredential } from '../commands/departures.ts';
import type { PartyRef } from '../domain/parties.ts';
import { toPublicUser } from '../projections/user-directory.ts';
import { accessRoutes, describeChange } from './access-requests.ts';
import { userPage, usersPage } from './admin-users-pages.ts';
import { partiesPage } from './parties-pages.ts';
import {
  commandContext,
  ConsoleError,
  field,
  requireAdmin,
  settled,
  viewer,
  type ConsoleServices,
  formRefusal,
  sentence,
} from './context.ts';
import { redirectWith, renderPage } from './render.ts';

/**
 * Users (platform administrators): every party with its users, and one user's page. Narrowing (disable,
 * remove a role) happens here at once; widening (enable, add a role, reset a password) is filed as an
 * access request for another administrator. One directory serves this page and the access requests.
 */

/** The search box's text: absent is no search; a repeated or overlong one is a malformed request. */
export function searchQuery(value: unknown): string {
  if (value === undefined) return '';
  if (typeof value !== 'string' || value.length > 200)
    throw new ConsoleError(400, 'The search is not one text of up to 200 characters.');
  return value.trim();
}

const matches = (query: string, ...texts: string[]) =>
  query === '' || texts.some((text) => text.toLowerCase().includes(query.toLowerCase()));

function parsePartyFilter(value: unknown): PartyRef | undefined {
  const match = typeof value === 'string' ? /^(distributor|merchant):([0-9a-f-]{36})$/.exec(value) : null;
  return match ? { type: match[1] as PartyRef['type'], id: match[2]! } : undefined;
}

/** What a departure ended, in the flash. */
const endedOne = (c: LiveCredential) =>
  `${c.kind === 'api-key' ? 'API key' : 'webhook endpoint'} ${c.label} ` +
  `(${c.id}${c.ends.includes('credential') ? '' : `: ${c.ends.join(', ').replaceAll('-', ' ')}`})`;
const endedText = (ended: LiveCredential[]) =>
  ended.length === 0 ? '' : ` Ended with it, every secret they knew: ${ended.map(endedOne).join(', ')}.`;

export function userAdminRoutes(router: Router, services: ConsoleServices): void {
  const directory = services.users;
  const { store, userReads } = services.deps;
  // What another administrator, the CLI or another instance wrote a moment ago is on the page too.
  const current = () => settled(userReads.current());

  async function subject(userID: string) {
    await current();
    const user = directory.user(userID);
    if (!user) throw new ConsoleError(404, 'There is no such user.');
    return user;
  }

  async function showUser(res: Response, userID: string, error?: { form: string; message: string }) {
    const user = await subject(userID);
    const me = viewer(res);
    const pending = directory.requests('pending').filter((r) => r.change.userID === userID);
    // What a departure would end, listed before the administrator decides (src/commands/departures.ts).
    const credentials =
      user.status === 'active' ? await liveCredentialsOf(store, user, services.deps.clock().toISOString()) : [];
    await renderPage(services, res, {
      title: user.email,
      section: 'users',
      status: error ? 400 : 200,
      body: userPage(
        {
          user: toPublicUser(user),
          party: user.party ? (directory.party(user.party) ?? null) : null,
          self: user.userID === me.user.userID,
          pending,
          credentials,
          session: me.session,
          ...(error ? { error } : {}),
        },
        (request) => describeChange(directory, request.change),
      ),
    });
  }

  router.get('/admin/parties', async (req, res) => {
    requireAdmin(res);
    const query = searchQuery(req.query.q);
    await current();
    const all = directory.partiesWithUsers();
    const parties = all.filter((party) => matches(query, party.name, party.shortCode));
    await renderPage(services, res, {
      title: 'Parties',
      section: 'parties',
      body: partiesPage({ parties, query, total: all.length }),
    });
  });

  router.get('/admin/users', async (req, res) => {
    requireAdmin(res);
    const query = searchQuery(req.query.q);
    await current();
    const only = parsePartyFilter(req.query.party);
    // A party whose name or short code matches shows all its users; otherwise only the users whose email does.
    const parties = directory
      .partiesWithUsers(only)
      .map((party) =>
        matches(query, party.name, party.shortCode)
          ? party
          : { ...party, users: party.users.filter((u) => matches(query, u.email)) },
      )
      .filter((party) => query === '' || party.users.length > 0 || matches(query, party.name, party.shortCode));
    const administrators = only ? null : directory.administrators().filter((u) => matches(query, u.email));
    await renderPage(services, res, {
      title: 'Users',
      section: 'users',
      body: usersPage({
        administrators: query && administrators?.length === 0 ? null : administrators,
        parties,
        filtered: Boolean(only),
        query,
        onlyParty: only ? (req.query.party as string) : null,
      }),
    });
  });

  router.get('/admin/users/:userID', async (req, res) => {
    requireAdmin(res);
    await showUser(res, String(req.params.userID));
  });

  router.post('/admin/users/:userID/disable', async (req, res) => {
    requireAdmin(res);
    const user = await subject(String(req.params.userID));
    const { refused, value } = await formRefusal(() =>
      disableUser(services.backOffice, viewer(res).user, user.userID, field(req, 'reason'), commandContext(res)),
    );
    if (refused) return showUser(res, user.userID, { form: 'disable', message: sentence(refused.message) });
    const { ended } = value;
    // The session check refuses a disabled user on their next request anyway; this also empties the store.
    await services.sessions.endAllFor(user.userID);
    services.deps.logger.info({ userID: user.userID, ended: ended.map((c) => c.id) }, 'console: user disabled');
    await redirectWith(services, res, `/console/admin/users/${user.userID}`, {
      kind: 'ok',
      text: `${user.email} is disabled: their sessions have ended and they cannot log in.${endedText(ended)}`,
    });
  });

  router.post('/admin/users/:userID/roles/remove', async (req, res) => {
    requireAdmin(res);
    const user = await subject(String(req.params.userID));
    const { role, ended } = await removeUserRole(
      services.backOffice,
      viewer(res).user,
      user.userID,
      field(req, 'role'),
      commandContext(res),
    );
    await redirectWith(services, res, `/console/admin/users/${user.userID}`, {
      kind: 'ok',
      text: `${user.email} no longer has the ${role} role.${endedText(ended)}`,
    });
  });

  const request = (
    path: string,
    form: string,
    change: (userID: string, role: string | undefined) => AccessChangeInput,
  ) =>
    router.post(`/admin/users/:userID/${path}`, async (req, res) => {
      requireAdmin(res);
      const user = await subject(String(req.params.userID));
      const { refused, value: filed } = await formRefusal(() =>
        requestAccessChange(
          services.backOffice,
          viewer(res).user,
          change(user.userID, field(req, 'role')),
          field(req, 'reason'),
          commandContext(res),
        ),
      );
      if (refused) return showUser(res, user.userID, { form, message: sentence(refused.message) });
      await settled(userReads.written(filed.position));
      await redirectWith(services, res, '/console/admin/access', {
        kind: 'ok',
        text:
          `Requested (${filed.requestID}): ${describeChange(directory, filed.change)}. Another administrator ` +
          'must approve it.',
      });
    });
  request('enable', 'enable', (userID) => ({ kind: 'enable-user', userID }));
  request('roles/add', 'add-role', (userID, role) => ({ kind: 'add-role', userID, role }));
  request('reset-password', 'reset', (userID) => ({ kind: 'reset-password', userID }));

  accessRoutes(router, services, directory);
}
