import type { Request } from 'express';
import { isKeyID } from '../domain/api-key-secrets.ts';
import { Decimal } from '../domain/money.ts';
import { normalizePhone } from '../domain/phone.ts';
import type { OperationType } from '../domain/events.ts';
import type { OperationFilter, PageRequest, SortOrder } from '../projections/console-operation-queries.ts';
import { amountKey } from '../projections/console-operations.ts';
import { CONTRACT_STATUSES, type ContractStatus } from '../domain/operation-status.ts';
import { OPERATION_ID_SOURCE } from '../domain/operation-ids.ts';
import { ConsoleError } from './context.ts';

/**
 * The operations list's query string: every parameter is checked and a wrong one is a 400 page that names it,
 * never a 500 and never silently ignored. Dates are UTC days (the list shows UTC times); `to` includes its day.
 */
export const STATUSES: readonly ContractStatus[] = CONTRACT_STATUSES;
export const TYPES: OperationType[] = ['cash-in', 'cash-out-fulfillment', 'cash-out', 'pay-merchant', 'pay-individual'];
export const PAGE_SIZE = 50;

/** The form's values as typed (shown back in the form, and carried by the paging and export links). */
export interface FilterValues {
  status: string;
  type: string;
  key: string;
  counterparty: string;
  from: string;
  to: string;
  min: string;
  max: string;
  q: string;
  order: SortOrder;
}

export interface ParsedFilters {
  values: FilterValues;
  filter: Omit<OperationFilter, 'party'>;
  page: Omit<PageRequest, 'limit'>;
}

const SORT_KEY = new RegExp(`^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z\\|${OPERATION_ID_SOURCE}$`);
const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

function one(req: Request, name: string): string {
  const value = req.query[name];
  if (value === undefined) return '';
  if (typeof value !== 'string')
    throw new ConsoleError(
      400,
      `The filter “${name}” was given more than once or in a form the console does not read.`,
    );
  if (value.length > 200) throw new ConsoleError(400, `The filter “${name}” is too long.`);
  return value.trim();
}

function day(name: string, value: string): Date {
  const match = DAY.exec(value);
  const date = match ? new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]))) : null;
  if (!date || Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== value)
    throw new ConsoleError(400, `The ${name} date must be a day written as YYYY-MM-DD, such as 2025-03-31.`);
  return date;
}

function amount(name: string, value: string, scale: number): string {
  if (!/^\d{1,18}(\.\d+)?$/.test(value))
    throw new ConsoleError(400, `The ${name} amount must be a decimal number such as 100.00.`);
  if ((value.split('.')[1] ?? '').length > scale)
    throw new ConsoleError(400, `The ${name} amount has more than ${scale} decimal places.`);
  return amountKey(new Decimal(value), scale);
}

export function parseFilters(req: Request, assetScale: number): ParsedFilters {
  const values: FilterValues = {
    status: one(req, 'status'),
    type: one(req, 'type'),
    key: one(req, 'key'),
    counterparty: one(req, 'counterparty'),
    from: one(req, 'from'),
    to: one(req, 'to'),
    min: one(req, 'min'),
    max: one(req, 'max'),
    q: one(req, 'q'),
    order: 'newest',
  };
  const order = one(req, 'order');
  if (order !== '' && order !== 'newest' && order !== 'oldest')
    throw new ConsoleError(400, 'The order must be newest or oldest.');
  values.order = order === 'oldest' ? 'oldest' : 'newest';
  const filter: ParsedFilters['filter'] = {};
  if (values.status) {
    if (!STATUSES.includes(values.status as ContractStatus))
      throw new ConsoleError(400, `The status must be one of ${STATUSES.join(', ')}.`);
    filter.status = values.status as ContractStatus;
  }
  if (values.type) {
    if (!TYPES.includes(values.type as OperationType))
      throw new ConsoleError(400, `The type must be one of ${TYPES.join(', ')}.`);
    filter.operationType = values.type as OperationType;
  }
  if (values.key) {
    if (!isKeyID(values.key))
      throw new ConsoleError(400, 'The key must be an API key id, such as key_AbC123dEf456GhIj.');
    filter.keyID = values.key;
  }
  if (values.counterparty) {
    if (/^\d{1,10}$/.test(values.counterparty)) filter.counterparty = values.counterparty;
    else {
      try {
        filter.counterparty = normalizePhone('counterparty', values.counterparty);
      } catch {
        throw new ConsoleError(
          400,
          'The counterparty must be a phone number in international format (+234…) or a short code.',
        );
      }
    }
  }
  if (values.from) filter.from = day('from', values.from).toISOString();
  if (values.to) filter.to = new Date(day('to', values.to).getTime() + 86_400_000).toISOString();
  if (filter.from && filter.to && filter.from >= filter.to)
    throw new ConsoleError(400, 'The from date must not be after the to date.');
  if (values.min) filter.minAmountKey = amount('minimum', values.min, assetScale);
  if (values.max) filter.maxAmountKey = amount('maximum', values.max, assetScale);
  if (filter.minAmountKey && filter.maxAmountKey && filter.minAmountKey > filter.maxAmountKey)
    throw new ConsoleError(400, 'The minimum amount must not be above the maximum.');
  if (values.q) {
    if (values.q.length > 100) throw new ConsoleError(400, 'The search text is too long (100 characters at most).');
    filter.search = values.q;
  }
  const page: ParsedFilters['page'] = { order: values.order };
  for (const name of ['after', 'before'] as const) {
    const cursor = one(req, name);
    if (cursor === '') continue;
    if (!SORT_KEY.test(cursor))
      throw new ConsoleError(400, 'The page link is not one the console made: start again from the first page.');
    page[name] = cursor;
  }
  return { values, filter, page };
}

/** The query string of the filters (without the page), for links that keep them. */
export function filterQuery(values: FilterValues, extra: Record<string, string> = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries({ ...values, ...extra })) {
    if (value === '' || (name === 'order' && value === 'newest')) continue;
    params.set(name, value);
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}
