import type Database from 'better-sqlite3';

/**
 * Prepared statements keyed by their SQL. Bounded: a compiled statement costs tens of kilobytes of native
 * memory outside the JS heap, so a caller producing many SQL shapes (IN lists of every length, filter
 * combinations) would otherwise grow the process for as long as it runs. Past the bound the least recently
 * used statement is dropped (and finalized when collected).
 */
export class StatementCache {
  private readonly db: Database.Database;
  private readonly maxStatements: number;
  private readonly statements = new Map<string, Database.Statement>();

  constructor(db: Database.Database, maxStatements = 200) {
    this.db = db;
    this.maxStatements = maxStatements;
  }

  get(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (statement) {
      this.statements.delete(sql); // re-inserted last: the map's order is the eviction order
    } else {
      statement = this.db.prepare(sql);
      if (this.statements.size >= this.maxStatements)
        this.statements.delete(this.statements.keys().next().value as string);
    }
    this.statements.set(sql, statement);
    return statement;
  }

  get size(): number {
    return this.statements.size;
  }

  clear(): void {
    this.statements.clear();
  }
}

/**
 * The length an IN list of `count` values is padded to: the next power of two, so that lists of any length
 * up to `max` share a handful of statements (11 for 1..1024) instead of one each. Padding repeats a value,
 * which an IN list ignores.
 */
export function inListLength(count: number): number {
  let length = 1;
  while (length < count) length *= 2;
  return length;
}
