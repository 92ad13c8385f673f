import type { Router } from 'express';
import type { AccessRequestRecord } from '../commands/access-requests.ts';
import { approveAccessRequest, isRequestID, rejectAccessRequest } from '../commands/user-admin.ts';
import type { AccessChange } from '../domain/events.ts';
import type { UserDirectory } from '../projections/user-directory.ts';
import { commandContext, ConsoleError, field, requireAdmin, settled, viewer, type ConsoleServices } from './context.ts';
import { accessPage, type AccessTab } from './access-requests-pages.ts';
import { redirectWith, renderPage } from './render.ts';

/**
 * Access requests: the second administrator's half of maker-checker on access. The back-office commands
 * check again that the approver is another administrator, and never the subject of the change.
 */
const TABS: AccessTab[] = ['pending', 'decided'];

/** A change in words, for lists and messages. */
export const describeChange = (directory: UserDirectory, change: AccessChange): string => directory.describe(change);

const DONE: Record<AccessChange['kind'], (email: string) => string> = {
  'add-user': (email) => `${email} now exists and must choose a password at the first login.`,
  'add-role': (email) => `${email} has the new role.`,
  'enable-user': (email) => `${email} can log in again.`,
  'reset-password': (email) => `The password of ${email} is reset; their sessions have ended.`,
};

export function accessRoutes(router: Router, services: ConsoleServices, directory: UserDirectory): void {
  const { userReads } = services.deps;
  // A request another administrator filed a moment ago (here, with the CLI, on another instance) is listed too.
  const current = () => settled(userReads.current());

  async function pendingRequest(requestID: string): Promise<AccessRequestRecord> {
    await current();
    const request = isRequestID(requestID) ? directory.request(requestID) : undefined;
    if (!request) throw new ConsoleError(404, 'There is no such access request.');
    return request;
  }

  router.get('/admin/access', async (req, res) => {
    requireAdmin(res);
    await current();
    const tab = TABS.find((t) => t === req.query.tab) ?? 'pending';
    const pending = directory.requests('pending');
    const decided = directory.requests().filter((r) => r.status !== 'pending');
    const { user, session } = viewer(res);
    await renderPage(services, res, {
      title: 'Access requests',
      section: 'access',
      body: accessPage({
        tab,
        requests: tab === 'pending' ? pending : decided,
        counts: { pending: pending.length, decided: decided.length },
        userID: user.userID,
        session,
        describe: (change) => describeChange(directory, change),
        email: (userID) => directory.email(userID),
      }),
    });
  });

  router.post('/admin/access/:requestID/approve', async (req, res) => {
    requireAdmin(res);
    const request = await pendingRequest(String(req.params.requestID));
    const { change, temporaryPassword, position } = await approveAccessRequest(
      services.backOffice,
      viewer(res).user,
      request.requestID,
      commandContext(res),
    );
    // A reset password ends whatever sessions were open with the old one.
    if (change.kind === 'reset-password') await services.sessions.endAllFor(change.userID);
    await settled(userReads.written(position));
    const what = `Request ${request.requestID} approved: ${DONE[change.kind](change.email)}`;
    services.deps.logger.info(
      { requestID: request.requestID, userID: change.userID, kind: change.kind },
      'console: access request approved',
    );
    if (!temporaryPassword)
      return redirectWith(services, res, '/console/admin/access?tab=decided', { kind: 'ok', text: what });
    // Split knowledge: the page this redirects to shows the approver their half, once; the requester sees the
    // other half on their next page. Neither administrator can log in as the user alone.
    const requester = directory.email(request.requestedBy);
    await redirectWith(services, res, '/console/admin/access?tab=decided', {
      kind: 'ok',
      text:
        `${what} Its temporary password is in two halves: yours is shown now, the other to ${requester}. Each of ` +
        `you gives your half to ${change.email}.`,
    });
  });

  router.post('/admin/access/:requestID/reject', async (req, res) => {
    requireAdmin(res);
    const request = await pendingRequest(String(req.params.requestID));
    const { position } = await rejectAccessRequest(
      services.backOffice,
      viewer(res).user,
      request.requestID,
      field(req, 'reason'),
      commandContext(res),
    );
    await settled(userReads.written(position));
    const withdrawn = request.requestedBy === viewer(res).user.userID;
    await redirectWith(services, res, '/console/admin/access?tab=decided', {
      kind: 'ok',
      text:
        `Request ${request.requestID} ${withdrawn ? 'withdrawn' : 'rejected'}: ` +
        `${describeChange(directory, request.change)} will not happen.`,
    });
  });
}
