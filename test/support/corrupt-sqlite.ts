import Database from 'better-sqlite3';
import { closeSync, openSync, readSync, writeSync } from 'node:fs';

/** Damage for the corruption tests: bit flips in a closed SQLite file, at pages chosen by what they hold. */

/** Flips every bit of `length` bytes at `offset` of the file. */
export function flipBytes(file: string, offset: number, length: number): void {
  const fd = openSync(file, 'r+');
  try {
    const bytes = Buffer.alloc(length);
    readSync(fd, bytes, 0, length, offset);
    for (let i = 0; i < length; i++) bytes[i] = bytes[i]! ^ 0xff;
    writeSync(fd, bytes, 0, length, offset);
  } finally {
    closeSync(fd);
  }
}

/** The page size and the interior and leaf pages of a table's b-tree (its root among them), in page order. */
export function tablePages(file: string, table: string): { pageSize: number; pages: number[] } {
  const db = new Database(file, { readonly: true });
  try {
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    const pages = db
      .prepare("SELECT pageno FROM dbstat WHERE name = ? AND pagetype IN ('leaf', 'internal') ORDER BY pageno")
      .pluck()
      .all(table) as number[];
    return { pageSize, pages };
  } finally {
    db.close();
  }
}
