import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import Database from 'better-sqlite3';

export interface WalFrames {
  frames: number;
  commits: number;
  /** Frames by the b-tree (table or index) each frame's page belongs to. */
  byOwner: Map<string, number>;
}

/**
 * The WAL frames written into a SQLite file from now on, and the b-tree each frame's page belongs to, counted when
 * the returned function is called. A read transaction held open here keeps the WAL from being restarted by a
 * checkpoint, so every frame written after it stays in the file, after the frame count the shared-memory index
 * holds now. The WAL must hold a frame already (a reader of a fully checkpointed WAL does not hold it).
 */
export function pinWalFrames(file: string): () => WalFrames {
  const pin = new Database(file, { readonly: true });
  pin.prepare('BEGIN').run();
  pin.prepare('SELECT count(*) FROM sqlite_schema').get();
  // Kept open until the pin ends: closing any descriptor of the file would drop this process's POSIX locks on it.
  const shm = openSync(`${file}-shm`, 'r');
  const header = Buffer.alloc(20);
  const maxFrame = () => (readSync(shm, header, 0, 20, 0), header.readUInt32LE(16));
  const from = maxFrame();
  return () => {
    const to = maxFrame();
    pin.prepare('COMMIT').run();
    closeSync(shm);
    const wal = readFileSync(`${file}-wal`);
    const pageSize = wal.readUInt32BE(8);
    const owners = new Map(
      (pin.prepare('SELECT pageno, name FROM dbstat').all() as Array<{ pageno: number; name: string }>).map((r) => [
        r.pageno,
        r.name,
      ]),
    );
    pin.close();
    const byOwner = new Map<string, number>();
    let commits = 0;
    for (let frame = from; frame < to; frame++) {
      const at = 32 + frame * (24 + pageSize);
      const owner = owners.get(wal.readUInt32BE(at)) ?? '(free or new)';
      byOwner.set(owner, (byOwner.get(owner) ?? 0) + 1);
      if (wal.readUInt32BE(at + 4) !== 0) commits++;
    }
    return { frames: to - from, commits, byOwner };
  };
}
