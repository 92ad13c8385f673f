import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import {
  addUser,
  collectCredential,
  findAnyUserByEmail,
  findUserByEmail,
  userContext,
  type ActiveUser,
  type CredentialDeps,
} from '../commands/back-office.ts';
import {
  approveAccessRequest,
  disableUser,
  loadUserState,
  rejectAccessRequest,
  removeUserRole,
  requestAccessChange,
  type AccessChangeInput,
} from '../commands/user-admin.ts';
import type { AccessRequestRecord } from '../commands/access-requests.ts';
import { endSessionsOf, SESSIONS_COLLECTION } from '../console/sessions.ts';
import { followToHead } from '../projections/directory-reads.ts';
import { followUsers, USER_DIRECTORY_FILTER, UserDirectory, type PublicUser } from '../projections/user-directory.ts';
import type { EventStore } from '../ports/event-store.ts';
import {
  common,
  followerLogger,
  operatorContext,
  parsePartyRef,
  UsageError,
  withBackOffice,
  withCredentials,
  withoutPosition,
  type CommonOptions,
} from './support.ts';

/**
 * `user` and `access`: console users and maker-checker on their access. `user add` is the operator's
 * break-glass path (at once, recorded as the operator's action): the first administrator, scripts. Every
 * other command acts `--as` a platform administrator, under the same rules as the console: narrowing
 * (`disable`, `remove-role`) at once, widening (`request-add`, `enable`, `add-role`, `reset-password`) as an
 * access request that another administrator approves with `access approve`.
 */
type AsOptions = CommonOptions & { as: string; reason?: string };

const asAdmin = (command: Command) =>
  common(command).requiredOption('--as <email>', 'the platform administrator acting');

/**
 * Runs an action as a user, with the event store, the credential vault and the read store (whose console sessions a
 * narrowing ends).
 */
function asUser<T>(
  opts: AsOptions,
  action: (deps: CredentialDeps, admin: ActiveUser, sessions: { end(userID: string): Promise<number> }) => Promise<T>,
  human: (result: T) => string,
) {
  return withCredentials(
    opts,
    async (deps, { readStore }) => {
      await readStore.defineCollections([SESSIONS_COLLECTION]);
      return action(deps, await findUserByEmail(deps, opts.as), { end: (userID) => endSessionsOf(readStore, userID) });
    },
    human,
  );
}

/** Files an access request for another administrator to approve. */
const requestAccess = async (deps: CredentialDeps, admin: ActiveUser, change: AccessChangeInput, reason?: string) =>
  withoutPosition(await requestAccessChange(deps, admin, change, reason, userContext(admin, randomUUID())));
const pending = (r: { requestID: string }) =>
  `access request ${r.requestID}: pending (another administrator approves it with: access approve ` +
  `${r.requestID} --as EMAIL)`;

/** The directory as the store holds it now, read by its follower run to the head once. */
async function usersNow(store: EventStore): Promise<UserDirectory> {
  const directory = new UserDirectory();
  await followToHead(followUsers(store, directory, followerLogger), store, USER_DIRECTORY_FILTER);
  return directory;
}

const userLine = (user: PublicUser) =>
  `  ${user.email.padEnd(32)} ${(user.platformAdmin ? 'administrator' : user.roles.join(',')).padEnd(15)} ` +
  `${user.status}${user.mustChangePassword ? ' (temporary password)' : ''}`;

function requestJson(directory: UserDirectory, request: AccessRequestRecord) {
  return {
    requestID: request.requestID,
    status: request.status,
    change: request.change,
    description: directory.describe(request.change),
    reason: request.reason,
    requestedBy: request.requestedBy,
    requestedByEmail: directory.email(request.requestedBy),
    requestedAt: request.requestedAt,
    decidedBy: request.decidedBy,
    decidedByEmail: request.decidedBy ? directory.email(request.decidedBy) : null,
    decidedAt: request.decidedAt,
    rejectionReason: request.rejectionReason,
  };
}

export function registerUserCommands(program: Command): void {
  const user = program
    .command('user')
    .description('console users: add (break-glass), list, disable, enable, roles, password resets');
  common(user.command('add'))
    .description(
      'break-glass: add a console user to a party, or a platform administrator, at once (recorded as an operator ' +
        'action)',
    )
    .option('--party <party>', 'distributor:ID or merchant:ID')
    .option('--platform-admin', 'a platform administrator, who belongs to no party')
    .requiredOption('--email <email>', 'login email, unique')
    .requiredOption('--password <password>', 'password (at least 10 characters); stored as an scrypt hash')
    .option('--roles <roles>', 'maker, checker or maker,checker', '')
    .action(
      async (
        opts: CommonOptions & {
          party?: string;
          platformAdmin?: boolean;
          email: string;
          password: string;
          roles: string;
        },
      ) => {
        if (Boolean(opts.party) === Boolean(opts.platformAdmin))
          throw new UsageError('give exactly one of --party or --platform-admin');
        const partyRef = opts.party ? parsePartyRef(opts.party) : null;
        await withBackOffice(
          opts,
          (deps) =>
            addUser(
              deps,
              {
                party: partyRef,
                email: opts.email,
                password: opts.password,
                roles: opts.roles,
                platformAdmin: opts.platformAdmin ?? false,
              },
              operatorContext(),
            ),
          (r) => `user added: ${r.userID}`,
        );
      },
    );

  common(user.command('list'))
    .description('platform administrators and every party with its users; or the users of one party')
    .option('--party <party>', 'distributor:ID or merchant:ID: only this party')
    .action(async (opts: CommonOptions & { party?: string }) =>
      withBackOffice(
        opts,
        async (deps) => {
          const only = opts.party ? parsePartyRef(opts.party) : undefined;
          const directory = await usersNow(deps.store);
          const parties = directory.partiesWithUsers(only);
          if (only && parties.length === 0) throw new UsageError(`no party ${opts.party}`);
          return only ? { parties } : { administrators: directory.administrators(), parties };
        },
        (r) =>
          [
            ...(r.administrators
              ? [
                  'platform administrators',
                  ...(r.administrators.length ? r.administrators.map(userLine) : ['  (none)']),
                ]
              : []),
            ...r.parties.flatMap((p) => [
              `${p.type} ${p.shortCode} ${p.name} (${p.id})`,
              ...(p.users.length ? p.users.map(userLine) : ['  (no users)']),
            ]),
          ].join('\n'),
      ),
    );

  asAdmin(user.command('request-add'))
    .description(
      'request a new console user; another administrator approves it (`access approve`), which makes a one-time ' +
        'temporary password',
    )
    .option('--party <party>', 'distributor:ID or merchant:ID')
    .option('--platform-admin', 'a platform administrator, who belongs to no party')
    .requiredOption('--email <email>', 'login email, unique')
    .option('--roles <roles>', 'maker, checker or maker,checker', '')
    .option('--reason <text>', 'why, for the approving administrator')
    .action(async (opts: AsOptions & { party?: string; platformAdmin?: boolean; email: string; roles: string }) => {
      if (Boolean(opts.party) === Boolean(opts.platformAdmin))
        throw new UsageError('give exactly one of --party or --platform-admin');
      const party = opts.party ? parsePartyRef(opts.party) : null;
      await asUser(
        opts,
        (deps, admin) =>
          requestAccess(deps, admin, { kind: 'add-user', party, email: opts.email, roles: opts.roles }, opts.reason),
        pending,
      );
    });

  const requestFor = (
    name: string,
    description: string,
    change: (userID: string, opts: AsOptions & { role?: string }) => AccessChangeInput,
    withRole = false,
  ) => {
    const command = asAdmin(user.command(name))
      .description(description)
      .argument('<email>', 'the user')
      .option('--reason <text>', 'why, for the approving administrator');
    if (withRole) command.requiredOption('--role <role>', 'maker or checker');
    command.action(async (email: string, opts: AsOptions & { role?: string }) =>
      asUser(
        opts,
        async (deps, admin) =>
          requestAccess(deps, admin, change((await findAnyUserByEmail(deps, email)).userID, opts), opts.reason),
        pending,
      ),
    );
  };
  requestFor(
    'enable',
    'request that a disabled user be enabled again (another administrator approves it)',
    (userID) => ({ kind: 'enable-user', userID }),
  );
  requestFor(
    'add-role',
    'request a role for a party user (another administrator approves it)',
    (userID, opts) => ({ kind: 'add-role', userID, role: opts.role }),
    true,
  );
  requestFor(
    'reset-password',
    'request a password reset; the approval makes a one-time temporary password in two halves, one for each ' +
      'administrator (`access password-half`)',
    (userID) => ({ kind: 'reset-password', userID }),
  );

  asAdmin(user.command('disable'))
    .description(
      'disable a user at once: they cannot log in, their console sessions end, and the API keys and webhook ' +
        'endpoints whose secret only they hold stop working',
    )
    .argument('<email>', 'the user')
    .requiredOption('--reason <text>', 'why')
    .action(async (email: string, opts: AsOptions) =>
      asUser(
        opts,
        async (deps, admin, sessions) => {
          const subject = await findAnyUserByEmail(deps, email);
          const result = await disableUser(deps, admin, subject.userID, opts.reason, userContext(admin, randomUUID()));
          return { ...result, status: 'disabled', sessionsEnded: await sessions.end(subject.userID) };
        },
        (r) =>
          `user ${r.email}: disabled (${r.sessionsEnded} console session(s) ` +
          `ended)${r.ended
            .map(
              (c) =>
                `\n  ended with them: ${c.kind} ${c.id} (${c.label})${
                  c.ends.includes('credential') ? '' : `: ${c.ends.join(', ')}`
                }`,
            )
            .join('')}`,
      ),
    );
  asAdmin(user.command('remove-role'))
    .description('remove a role from a party user at once (never their last one: disable the user instead)')
    .argument('<email>', 'the user')
    .requiredOption('--role <role>', 'maker or checker')
    .action(async (email: string, opts: AsOptions & { role: string }) =>
      asUser(
        opts,
        async (deps, admin) => {
          const subject = await findAnyUserByEmail(deps, email);
          return removeUserRole(deps, admin, subject.userID, opts.role, userContext(admin, randomUUID()));
        },
        (r) => `user ${r.email}: ${r.role} role removed`,
      ),
    );

  const access = program
    .command('access')
    .description('access requests: maker-checker on access (another administrator approves)');
  common(access.command('list'))
    .description('access requests, newest first')
    .option('--status <status>', 'pending, approved or rejected')
    .action(async (opts: CommonOptions & { status?: string }) => {
      if (opts.status !== undefined && !['pending', 'approved', 'rejected'].includes(opts.status))
        throw new UsageError('--status must be pending, approved or rejected');
      await withBackOffice(
        opts,
        async (deps) => {
          const directory = await usersNow(deps.store);
          return directory
            .requests(opts.status as AccessRequestRecord['status'] | undefined)
            .map((r) => requestJson(directory, r));
        },
        (rows) =>
          rows
            .map(
              (r) =>
                `${r.requestID}  ${r.status.padEnd(8)} ${r.description}  (by ` +
                `${r.requestedByEmail}${r.decidedByEmail ? `; ${r.status} by ${r.decidedByEmail}` : ''})`,
            )
            .join('\n') || '(no access requests)',
      );
    });
  asAdmin(access.command('approve'))
    .description(
      'another administrator approves an access request; adding a user or resetting a password makes a temporary ' +
        'password in two halves, the first for the requesting administrator, the second for the approving one ' +
        '(`access password-half`)',
    )
    .argument('<requestID>')
    .action(async (requestID: string, opts: AsOptions) =>
      asUser(
        opts,
        async (deps, admin, sessions) => {
          const { change, temporaryPassword } = await approveAccessRequest(
            deps,
            admin,
            requestID,
            userContext(admin, randomUUID()),
          );
          if (change.kind === 'reset-password') await sessions.end(change.userID);
          const halves = temporaryPassword
            ? {
                temporaryPasswordHalves: {
                  first: (await loadUserState(deps, temporaryPassword.firstHalfFor)).email,
                  second: (await loadUserState(deps, temporaryPassword.secondHalfFor)).email,
                },
              }
            : {};
          return { requestID, status: 'approved', userID: change.userID, email: change.email, ...halves };
        },
        (r) =>
          [
            `access request ${r.requestID}: approved (${r.email})`,
            ...(r.temporaryPasswordHalves
              ? [
                  'a temporary password in two halves waits for its two administrators, who each collect theirs ' +
                    `once and give it to ${r.email}:`,
                  `  first half:  wallet-ops access password-half ${r.requestID} --as ` +
                    `${r.temporaryPasswordHalves.first}`,
                  `  second half: wallet-ops access password-half ${r.requestID} --as ` +
                    `${r.temporaryPasswordHalves.second}`,
                ]
              : []),
          ].join('\n'),
      ),
    );
  asAdmin(access.command('password-half'))
    .description(
      'an administrator of an approved access request collects their half of its temporary password, once ' +
        '(within 24 hours of the approval)',
    )
    .argument('<requestID>')
    .action(async (requestID: string, opts: AsOptions) =>
      asUser(
        opts,
        async (deps, admin) => {
          const { email, half, value } = await collectCredential(deps, admin, { kind: 'password-half', id: requestID });
          return { requestID, email, half, value };
        },
        (r) =>
          `${r.half} half of the temporary password for ${r.email} (shown once; give it to them yourself; they ` +
          `type the first half, a hyphen, then the second): ${r.value}`,
      ),
    );
  asAdmin(access.command('reject'))
    .description('reject an access request (its own requester thereby withdraws it)')
    .argument('<requestID>')
    .option('--reason <text>', 'why')
    .action(async (requestID: string, opts: AsOptions) =>
      asUser(
        opts,
        async (deps, admin) => ({
          ...withoutPosition(
            await rejectAccessRequest(deps, admin, requestID, opts.reason, userContext(admin, randomUUID())),
          ),
          status: 'rejected',
        }),
        (r) => `access request ${r.requestID}: rejected`,
      ),
    );
}
