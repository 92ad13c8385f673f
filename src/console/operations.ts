import type { Response, Router } from 'express';
import { actingUser } from '../commands/back-office.ts';
import { decideOperation } from '../commands/operation-handlers.ts';
import { operationState } from '../commands/operations.ts';
import { loadState } from '../commands/pipeline.ts';
import { DomainError } from '../domain/errors.ts';
import { formatAmount } from '../domain/money.ts';
import { samePartyRef, type PartyRef } from '../domain/parties.ts';
import { streams } from '../domain/streams.ts';
import { requiredText } from '../domain/text.ts';
import * as distributorOps from '../projections/distributor-operations.ts';
import * as merchantOps from '../projections/merchant-operations.ts';
import { commandContext, ConsoleError, field, partyOf, requireRole, viewer, type ConsoleServices } from './context.ts';
import { historyPage, pendingPage, rejectPage, type HistoryRow, type PendingOperation } from './operations-pages.ts';
import { redirectWith, renderPage } from './render.ts';

/**
 * Operations of the viewer's party. The lists come from the read models (distributor_operations,
 * merchant_operations); a pending operation's details the documents do not carry (the key that created it,
 * the fee of a distributor's operation) come from its own stream, which also drops from the pending list
 * what a checker decided a moment ago and the read model has not caught up with yet.
 */
const PENDING_LIMIT = 200;
const HISTORY_LIMIT = 50;

type PartyOperationDoc = distributorOps.DistributorOperationDoc | merchantOps.MerchantOperationDoc;

function listQuery(party: PartyRef) {
  return party.type === 'distributor'
    ? { collection: distributorOps.DISTRIBUTOR_OPERATIONS_COLLECTION.name, where: distributorOps.distributorOperationsWhere(party.id), sort: distributorOps.DISTRIBUTOR_OPERATIONS_SORT }
    : { collection: merchantOps.MERCHANT_OPERATIONS_COLLECTION.name, where: merchantOps.merchantOperationsWhere(party.id), sort: merchantOps.MERCHANT_OPERATIONS_SORT };
}

export async function countPending(services: ConsoleServices, party: PartyRef): Promise<number> {
  const { collection, where } = listQuery(party);
  return services.deps.readStore.count(collection, { where: { ...where, status: 'pending' } });
}

function historyRow(doc: PartyOperationDoc, assetScale: number): HistoryRow {
  const d = doc as Partial<distributorOps.DistributorOperationDoc> & Partial<merchantOps.MerchantOperationDoc>;
  const counterpart =
    d.merchantName !== undefined ? `${d.merchantName}${d.merchantShortCode !== undefined ? ` (merchant ${d.merchantShortCode})` : ''}`
    : d.distributorName !== undefined ? `${d.distributorName} (distributor)`
    : (d.phoneTo ?? d.phoneFrom ?? '');
  return {
    operationID: doc.operationID,
    operationType: doc.operationType,
    amount: doc.amount,
    fee: d.fee ?? formatAmount(0, assetScale),
    counterpart,
    memo: doc.memo ?? null,
    status: doc.status,
    blockchainID: doc.blockchainID,
    sequenceNumber: doc.sequenceNumber,
    lastError: doc.lastError,
    createdAt: doc.createdAt,
    updatedAt: doc.updatedAt,
  };
}

export function operationRoutes(router: Router, services: ConsoleServices): void {
  const { readStore, directory, assetScale } = services.deps;
  const assetCode = services.deps.assetCode ?? 'NGN';

  /** The operation's state from its stream, if it is the party's; another party's is as good as absent. */
  async function partyOperation(party: PartyRef, operationID: string) {
    if (!/^op_[0-9a-f]{32}$/.test(operationID)) return null;
    const { state } = await loadState(services.backOffice, streams.operation(operationID), operationState);
    return state.status !== 'none' && samePartyRef(state.operation.party, party) ? state : null;
  }

  const withKeyLabel = (operation: PendingOperation['operation'], viewerID?: string): PendingOperation => {
    const key = operation.keyID ? directory.get(operation.keyID) : undefined;
    return { operation, keyLabel: key?.label ?? null, viewerRequestedKey: viewerID !== undefined && key?.requestedBy === viewerID };
  };

  async function ownPendingOperation(res: Response, operationID: string): Promise<PendingOperation> {
    const state = await partyOperation(partyOf(res), operationID);
    if (!state) throw new ConsoleError(404, 'There is no such operation in your party.');
    if (state.status !== 'pending') throw new ConsoleError(409, `This operation is ${state.status}: only a pending operation can be approved or rejected.`);
    return withKeyLabel(state.operation);
  }

  router.get('/operations', async (_req, res) => {
    const party = partyOf(res);
    const { collection, where, sort } = listQuery(party);
    const docs = await readStore.find<PartyOperationDoc>(collection, { where: { ...where, status: 'pending' }, sort, limit: PENDING_LIMIT });
    const items: PendingOperation[] = [];
    for (const doc of docs) {
      const state = await partyOperation(party, doc.operationID);
      if (state?.status === 'pending') items.push(withKeyLabel(state.operation, viewer(res).user.userID));
    }
    const checker = viewer(res).user.roles.includes('checker');
    await renderPage(services, res, { title: 'Operations', section: 'operations', body: pendingPage(viewer(res).session, items, checker, assetCode) });
  });

  router.get('/operations/history', async (req, res) => {
    const party = partyOf(res);
    const offsetText = typeof req.query.offset === 'string' ? req.query.offset : '0';
    const offset = /^\d{1,7}$/.test(offsetText) ? Number(offsetText) : 0;
    const { collection, where, sort } = listQuery(party);
    const docs = await readStore.find<PartyOperationDoc>(collection, { where, sort, skip: offset, limit: HISTORY_LIMIT });
    const rows = await Promise.all(docs.map(async (doc) => {
      const row = historyRow(doc, assetScale);
      // The documents name an individual by phone only; the name is a cached lookup away.
      const individual = row.counterpart.startsWith('+') ? await services.lookup.individual(row.counterpart) : null;
      return individual ? { ...row, counterpart: `${individual.name} (${individual.phone})` } : row;
    }));
    const pendingCount = await countPending(services, party);
    await renderPage(services, res, { title: 'Operation history', section: 'operations', body: historyPage(rows, { offset, limit: HISTORY_LIMIT }, pendingCount, assetCode) });
  });

  router.post('/operations/:operationID/approve', async (req, res) => {
    requireRole(res, 'checker');
    const { operation } = await ownPendingOperation(res, String(req.params.operationID));
    await decideOperation(services.backOffice, actingUser(viewer(res).user), operation.operationID, { type: 'approve' }, commandContext(res));
    await redirectWith(services, res, '/console/operations', { kind: 'ok', text: `Operation ${operation.operationID} approved: it is being executed. Its outcome appears in the history.` });
  });

  router.get('/operations/:operationID/reject', async (req, res) => {
    requireRole(res, 'checker');
    const pending = await ownPendingOperation(res, String(req.params.operationID));
    await renderPage(services, res, { title: 'Reject operation', section: 'operations', body: rejectPage(viewer(res).session, pending, assetCode) });
  });

  router.post('/operations/:operationID/reject', async (req, res) => {
    requireRole(res, 'checker');
    const pending = await ownPendingOperation(res, String(req.params.operationID));
    let reason: string;
    try {
      reason = requiredText('reason', field(req, 'reason'), 500);
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      const message = error.message.charAt(0).toUpperCase() + error.message.slice(1) + '.';
      return renderPage(services, res, { title: 'Reject operation', section: 'operations', status: 400, body: rejectPage(viewer(res).session, pending, assetCode, message) });
    }
    await decideOperation(services.backOffice, actingUser(viewer(res).user), pending.operation.operationID, { type: 'reject', reason }, commandContext(res));
    await redirectWith(services, res, '/console/operations', { kind: 'ok', text: `Operation ${pending.operation.operationID} rejected; what it held is released.` });
  });
}
