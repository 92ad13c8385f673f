import { randomUUID } from 'node:crypto';

/** An operation's id: `op_` and 32 lowercase hex digits (a UUID without its dashes). */
export const OPERATION_ID_SOURCE = 'op_[0-9a-f]{32}';
const OPERATION_ID = new RegExp(`^${OPERATION_ID_SOURCE}$`);

/** Whether a string can name an operation: anything else is not looked up. */
export const isOperationID = (value: string): boolean => OPERATION_ID.test(value);

export const newOperationID = (): string => `op_${randomUUID().replaceAll('-', '')}`;
