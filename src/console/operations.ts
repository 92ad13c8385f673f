import type { Response, Router } from 'express';
import { actingUser } from '../commands/back-office.ts';
import { decideOperation, type DecisionLanded } from '../commands/operation-handlers.ts';
import { wroteOperation } from '../projections/read-your-writes.ts';
import { keyKeepers } from '../commands/api-keys.ts';
import { operationState } from '../commands/operations.ts';
import { vouchConflict } from '../domain/segregation.ts';
import { loadState } from '../commands/pipeline.ts';
import { DomainError } from '../domain/errors.ts';
import { samePartyRef, type PartyRef } from '../domain/parties.ts';
import { streams } from '../domain/streams.ts';
import { requiredText } from '../domain/text.ts';
import {
  commandContext,
  ConsoleError,
  field,
  fields,
  partyOf,
  requireRole,
  viewer,
  type ConsoleServices,
  sentence,
} from './context.ts';
import { BULK_LIMIT, confirmApprovalPage, pendingPage, rejectPage, type PendingOperation } from './operations-pages.ts';
import { Decimal } from '../domain/money.ts';
import { isOperationID } from '../domain/operation-ids.ts';
import { pendingOperations } from './party-operations.ts';
import { redirectWith, renderPage } from './render.ts';

/**
 * Operations of the viewer's party waiting for a checker. The list comes from the console_operations read
 * model alone (party-operations.ts), whatever its length: no row's stream is read, and what a checker decided
 * a moment ago (the model not caught up yet) is left out by one read of the decisions past its checkpoint.
 * Deciding is the write side: approve and reject read the operation's own stream, and refuse one that is no
 * longer pending (409), however stale the list it was chosen from.
 */
const PENDING_LIMIT = 200;

export function operationRoutes(router: Router, services: ConsoleServices): void {
  const { directory } = services.deps;
  const assetCode = services.deps.assetCode ?? 'NGN';

  /** The operation's state from its stream, if it is the party's; another party's is as good as absent. */
  async function partyOperation(party: PartyRef, operationID: string) {
    if (!isOperationID(operationID)) return null;
    const { state } = await loadState(services.backOffice, streams.operation(operationID), operationState);
    return state.status !== 'none' && samePartyRef(state.operation.party, party) ? state : null;
  }

  /**
   * The label of the key that created an operation, and whether the viewer holds, or held, a working secret of
   * that key (the directory is in memory): a hint for the page; the decision itself applies the whole rule.
   */
  const keyOf = (keyID: string | null, viewerID?: string) => {
    const key = keyID ? directory.get(keyID) : undefined;
    const now = services.deps.clock().toISOString();
    const holds =
      viewerID !== undefined &&
      key !== undefined &&
      vouchConflict(viewerID, { maker: null, keepers: keyKeepers(key, now) }) !== null;
    return { keyLabel: key?.label ?? null, viewerRequestedKey: holds };
  };
  /** A decision of this process is in its party's next pages here (read-your-writes), whatever the model's lag. */
  const landedFor = (operation: PendingOperation['operation']) => (at: DecisionLanded) =>
    wroteOperation(services.deps.readYourWrites, operation, at);
  const withKeyLabel = (operation: PendingOperation['operation']): PendingOperation => ({
    operation,
    ...keyOf(operation.keyID),
  });

  async function ownPendingOperation(res: Response, operationID: string): Promise<PendingOperation> {
    const state = await partyOperation(partyOf(res), operationID);
    if (!state) throw new ConsoleError(404, 'There is no such operation in your party.');
    if (state.status !== 'pending')
      throw new ConsoleError(
        409,
        `This operation is ${state.status}: only a pending operation can be approved or rejected.`,
      );
    return withKeyLabel(state.operation);
  }

  router.get('/operations', async (_req, res) => {
    const { userID } = viewer(res).user;
    const items = (await pendingOperations(services, partyOf(res), PENDING_LIMIT)).map((doc) => ({
      doc,
      ...keyOf(doc.keyID, userID),
    }));
    const checker = viewer(res).user.roles.includes('checker');
    await renderPage(services, res, {
      title: 'Operations',
      section: 'operations',
      body: pendingPage(viewer(res).session, items, checker, assetCode),
    });
  });

  const threshold = services.deps.confirmAbove ?? null;
  const large = (amount: string) => threshold !== null && new Decimal(amount).gt(threshold);

  router.post('/operations/:operationID/approve', async (req, res) => {
    requireRole(res, 'checker');
    const pending = await ownPendingOperation(res, String(req.params.operationID));
    const { operation } = pending;
    if (large(operation.amount) && field(req, 'confirm') !== 'yes') {
      return renderPage(services, res, {
        title: 'Confirm approval',
        section: 'operations',
        body: confirmApprovalPage(viewer(res).session, [{ ...pending, large: true }], threshold!, false),
      });
    }
    await decideOperation(
      services.backOffice,
      actingUser(viewer(res).user),
      operation.operationID,
      { type: 'approve' },
      commandContext(res),
      landedFor(operation),
    );
    await redirectWith(services, res, '/console/operations', {
      kind: 'ok',
      text: `Operation ${operation.operationID} approved: it is being executed. Its outcome appears in the history.`,
    });
  });

  /**
   * Bulk approve or reject: each selected operation is its own checked decision (the same lookup and command
   * as one at a time), so one that is refused is reported and the others still go ahead.
   */
  router.post('/operations/bulk', async (req, res) => {
    requireRole(res, 'checker');
    const action = field(req, 'action');
    if (action !== 'approve' && action !== 'reject')
      throw new ConsoleError(400, 'Choose Approve selected or Reject selected.');
    const ids = [...new Set(fields(req, 'operationID'))];
    if (ids.length === 0)
      return redirectWith(services, res, '/console/operations', {
        kind: 'error',
        text: 'Select at least one operation first.',
      });
    if (ids.length > BULK_LIMIT) throw new ConsoleError(400, `Select at most ${BULK_LIMIT} operations at a time.`);
    let reason = '';
    if (action === 'reject') {
      try {
        reason = requiredText('reason', field(req, 'reason'), 500);
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        return redirectWith(services, res, '/console/operations', {
          kind: 'error',
          text: 'Give a reason for rejecting the selected operations. Nothing was rejected.',
        });
      }
    }
    if (action === 'approve' && field(req, 'confirm') !== 'yes') {
      const items: PendingOperation[] = [];
      for (const id of ids) {
        const state = await partyOperation(partyOf(res), id);
        if (state?.status === 'pending')
          items.push({ ...withKeyLabel(state.operation), large: large(state.operation.amount) });
      }
      if (items.some((item) => item.large)) {
        return renderPage(services, res, {
          title: 'Confirm approval',
          section: 'operations',
          body: confirmApprovalPage(viewer(res).session, items, threshold!, true),
        });
      }
    }
    const done: string[] = [];
    const failed: string[] = [];
    for (const id of ids) {
      try {
        const { operation } = await ownPendingOperation(res, id);
        await decideOperation(
          services.backOffice,
          actingUser(viewer(res).user),
          operation.operationID,
          action === 'approve' ? { type: 'approve' } : { type: 'reject', reason },
          commandContext(res),
          landedFor(operation),
        );
        done.push(id);
      } catch (error) {
        const known = error instanceof DomainError || error instanceof ConsoleError;
        if (!known)
          services.deps.logger.error(
            { err: error, operationID: id, requestId: String(res.getHeader('X-Request-Id') ?? '') },
            'console: bulk decision failed',
          );
        const message = known ? (error as Error).message.replace(/\.$/, '') : 'an unexpected error (see the logs)';
        failed.push(`${id}: ${message}`);
      }
    }
    const verb = action === 'approve' ? 'approved' : 'rejected';
    const text =
      failed.length === 0
        ? `${done.length} operation${done.length === 1 ? '' : 's'} ${verb}.`
        : `${done.length} of ${ids.length} ${verb}; not ${verb}: ${failed.join('; ')}.`;
    await redirectWith(services, res, '/console/operations', { kind: failed.length === 0 ? 'ok' : 'error', text });
  });

  router.get('/operations/:operationID/reject', async (req, res) => {
    requireRole(res, 'checker');
    const pending = await ownPendingOperation(res, String(req.params.operationID));
    await renderPage(services, res, {
      title: 'Reject operation',
      section: 'operations',
      body: rejectPage(viewer(res).session, pending, assetCode),
    });
  });

  router.post('/operations/:operationID/reject', async (req, res) => {
    requireRole(res, 'checker');
    const pending = await ownPendingOperation(res, String(req.params.operationID));
    let reason: string;
    try {
      reason = requiredText('reason', field(req, 'reason'), 500);
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      return renderPage(services, res, {
        title: 'Reject operation',
        section: 'operations',
        status: 400,
        body: rejectPage(viewer(res).session, pending, assetCode, sentence(error.message)),
      });
    }
    await decideOperation(
      services.backOffice,
      actingUser(viewer(res).user),
      pending.operation.operationID,
      { type: 'reject', reason },
      commandContext(res),
      landedFor(pending.operation),
    );
    await redirectWith(services, res, '/console/operations', {
      kind: 'ok',
      text: `Operation ${pending.operation.operationID} rejected; what it held is released.`,
    });
  });
}
