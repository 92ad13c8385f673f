import { once } from 'node:events';
import type { Router } from 'express';
import { samePartyRef } from '../domain/parties.ts';
import { streams } from '../domain/streams.ts';
import type { OperationRequested } from '../domain/events.ts';
import { contractStatus, isOperationEventType, statusAfter, type ContractStatus } from '../domain/operation-status.ts';
import { keyUsage } from '../http/key-usage.ts';
import { toPublicApiKey } from '../projections/api-key-directory.ts';
import { allOperations, findOperations, operationsOfKey } from '../projections/console-operation-queries.ts';
import {
  CONSOLE_OPERATIONS_PROJECTION,
  partyKey,
  type ConsoleOperationDoc,
} from '../projections/console-operations.ts';
import { ConsoleError, partyOf, settled, untilReadable, type ConsoleServices } from './context.ts';
import { noStore } from './http-security.ts';
import { keyPage, operationPage, type OperationView } from './operation-detail-pages.ts';
import { PAGE_SIZE, parseFilters } from './operation-filters.ts';
import { operationListPage } from './operation-list-pages.ts';
import { countPending } from './party-operations.ts';
import { renderPage } from './render.ts';
import { emailOf } from './users.ts';
import { timeline } from './timeline.ts';
import { isOperationID } from '../domain/operation-ids.ts';

/**
 * Finding operations (Operations › History with filters, search, keyset paging and a streamed CSV export,
 * from the console_operations read model) and the pages of one operation and one API key, whose timelines
 * are read from the event history.
 */

export const CSV_COLUMNS = [
  'operationID',
  'createdAt',
  'updatedAt',
  'operationType',
  'status',
  'amount',
  'fee',
  'counterpartyKind',
  'counterparty',
  'counterpartyName',
  'memo',
  'keyID',
  'blockchainID',
  'sequenceNumber',
  'lastError',
] as const;

/**
 * One CSV cell: a value a spreadsheet would read as a formula (starting with =, +, -, @, a tab or a carriage
 * return) gets a leading apostrophe, and a cell with a comma, a quote or a line break is quoted.
 */
export function csvCell(value: string | number | null | undefined): string {
  let text = value === null || value === undefined ? '' : String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

const csvRow = (doc: ConsoleOperationDoc): string =>
  CSV_COLUMNS.map((column) => csvCell(column === 'counterparty' ? doc.counterpartyID : doc[column])).join(',') + '\r\n';

export function operationFindRoutes(router: Router, services: ConsoleServices): void {
  const { readStore, directory, store, assetScale, clock } = services.deps;
  const assetCode = services.deps.assetCode ?? 'NGN';

  /** The party's keys for the filter's list (the directory has them in memory). */
  const partyKeys = (res: Parameters<typeof partyOf>[0]) =>
    directory.listByParty(partyOf(res), clock().toISOString()).map((k) => ({ keyID: k.keyID, label: k.label }));

  router.get('/operations/history', async (req, res) => {
    const party = partyOf(res);
    const { values, filter, page } = parseFilters(req, assetScale);
    await untilReadable(services, party, CONSOLE_OPERATIONS_PROJECTION);
    const found = await findOperations(readStore, { ...filter, party: partyKey(party) }, { ...page, limit: PAGE_SIZE });
    const pendingCount = await countPending(services, party);
    const filtered = Object.keys(filter).length > 0;
    await renderPage(services, res, {
      title: 'Operation history',
      section: 'operations',
      body: operationListPage({ values, page: found, keys: partyKeys(res), pendingCount, filtered, assetCode }),
    });
  });

  router.get('/operations/export.csv', async (req, res) => {
    const party = partyOf(res);
    const { filter, values } = parseFilters(req, assetScale);
    await untilReadable(services, party, CONSOLE_OPERATIONS_PROJECTION);
    noStore(res);
    res.status(200).type('text/csv; charset=utf-8');
    res.set('Content-Disposition', `attachment; filename="operations-${clock().toISOString().slice(0, 10)}.csv"`);
    res.write(CSV_COLUMNS.join(',') + '\r\n');
    try {
      let chunk = '';
      for await (const doc of allOperations(readStore, { ...filter, party: partyKey(party) }, values.order)) {
        chunk += csvRow(doc);
        // Written in pieces, waiting for the socket when it is full: memory holds one batch, whatever the export.
        if (chunk.length > 64_000) {
          if (!res.write(chunk)) await once(res, 'drain');
          chunk = '';
        }
      }
      res.end(chunk);
    } catch (error) {
      services.deps.logger.error(
        { err: error, requestId: String(res.getHeader('X-Request-Id') ?? '') },
        'console: CSV export failed midway',
      );
      res.destroy(error as Error); // the client sees a broken download, never a truncated file that looks complete
    }
  });

  router.get('/operations/:operationID', async (req, res) => {
    const party = partyOf(res);
    const operationID = String(req.params.operationID);
    if (!isOperationID(operationID)) throw new ConsoleError(404, 'There is no such operation in your party.');
    const events = await store.readStream(streams.operation(operationID));
    const requested = events[0]?.type === 'OperationRequested' ? (events[0].data as OperationRequested['data']) : null;
    const own = requested?.party ? samePartyRef(requested.party, party) : false;
    const received =
      !own &&
      requested?.operationType === 'cash-in' &&
      requested.payee.kind === 'merchant' &&
      party.type === 'merchant' &&
      requested.payee.id === party.id;
    if (!requested || (!own && !received)) throw new ConsoleError(404, 'There is no such operation in your party.');
    // Status as the contract shows it, from the stream's events.
    let status: ContractStatus = 'pending';
    const view: Omit<OperationView, 'timeline' | 'status'> = {
      request: requested,
      received,
      sequenceNumber: null,
      blockchainID: null,
      walletOperationID: null,
      lastError: null,
      keyLabel: null,
      assetCode,
    };
    for (const event of events) {
      if (isOperationEventType(event.type)) status = contractStatus(statusAfter(event.type));
      const data = event.data as Record<string, unknown>;
      if (typeof data.sequenceNumber === 'number') view.sequenceNumber = data.sequenceNumber;
      if (typeof data.blockchainID === 'string') view.blockchainID = data.blockchainID;
      if (typeof data.walletOperationID === 'string') view.walletOperationID = data.walletOperationID;
      if (typeof data.lastError === 'string') view.lastError = data.lastError;
    }
    view.keyLabel = requested.keyID ? (directory.get(requested.keyID)?.label ?? null) : null;
    // A merchant that received a cash-in sees what happened to it, not who at the distributor did what.
    const entries = received ? [] : await timeline(services, events);
    await renderPage(services, res, {
      title: `Operation ${operationID}`,
      section: 'operations',
      body: operationPage({ ...view, status, timeline: entries }),
    });
  });

  router.get('/keys/:keyID', async (req, res) => {
    const party = partyOf(res);
    const keyID = String(req.params.keyID);
    let key = directory.get(keyID);
    if (!key) {
      await settled(services.deps.keyReads.current()); // created a moment ago by another process
      key = directory.get(keyID);
    }
    if (!key || !samePartyRef(key.party, party)) throw new ConsoleError(404, 'There is no such API key in your party.');
    await untilReadable(services, party, CONSOLE_OPERATIONS_PROJECTION);
    const [events, usage, operations] = await Promise.all([
      store.readStream(streams.apiKey(keyID)),
      keyUsage(readStore, keyID),
      operationsOfKey(readStore, partyKey(party), keyID, 20),
    ]);
    const view = {
      key: toPublicApiKey(key, clock().toISOString()),
      requestedBy: await emailOf(services, key.requestedBy),
      approvedBy: key.approvedBy ? await emailOf(services, key.approvedBy) : null,
      usage,
      timeline: await timeline(services, events),
      operations,
      assetCode,
    };
    await renderPage(services, res, { title: `API key ${key.label}`, section: 'keys', body: keyPage(view) });
  });
}
