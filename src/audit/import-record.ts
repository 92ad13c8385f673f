import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EndOfExport } from './export-import.ts';
import type { ExpectedHistory } from './verify-completeness.ts';

/**
 * The record `events import` leaves in the data directory: the export's end marker, written before the first
 * append and marked complete after the last. `audit verify` reads it, so a store whose import was cut short, or
 * a copy of an imported store that lost its tail, is reported incomplete instead of verifying.
 */
export interface ImportRecord extends EndOfExport {
  file: string;
  startedAt: string;
  completedAt: string | null;
}

export const IMPORT_RECORD_FILE = 'history-import.json';

export function importRecordPath(dataDir: string): string {
  return join(dataDir, IMPORT_RECORD_FILE);
}

export function writeImportRecord(dataDir: string, record: ImportRecord): void {
  const path = importRecordPath(dataDir);
  // A server store (PostgreSQL, KurrentDB) needs no data directory of its own: the record's is made here, owner-only.
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  // Replaced whole (rename), so a crash never leaves half a record.
  writeFileSync(`${path}.tmp`, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  renameSync(`${path}.tmp`, path);
}

export function readImportRecord(dataDir: string): ImportRecord | undefined {
  const path = importRecordPath(dataDir);
  if (!existsSync(path)) return undefined;
  return JSON.parse(readFileSync(path, 'utf8')) as ImportRecord;
}

export function expectedFromRecord(record: ImportRecord, dataDir: string): ExpectedHistory {
  return {
    events: record.events,
    lastID: record.lastID,
    lastHash: record.lastHash,
    source: `the import record ${importRecordPath(dataDir)}`,
    complete: record.completedAt !== null,
  };
}

export function expectedFromExport(end: EndOfExport, file: string): ExpectedHistory {
  return { events: end.events, lastID: end.lastID, lastHash: end.lastHash, source: `the end marker of ${file}` };
}
