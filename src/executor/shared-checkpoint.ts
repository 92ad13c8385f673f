import { CheckpointConflictError, type ReadStore } from '../ports/read-store.ts';

/**
 * Moves a checkpoint that several processes share forward only, to `position`: another process may already be
 * further (then nothing is written), or move it at the same moment (compare-and-set, tried again).
 */
export async function advanceSharedCheckpoint(readStore: ReadStore, name: string, position: number): Promise<void> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const current = await readStore.getCheckpoint(name);
    if (current !== null && current >= position) return;
    try {
      await readStore.commit([], { projection: name, position, expected: current });
      return;
    } catch (error) {
      if (!(error instanceof CheckpointConflictError)) throw error;
    }
  }
}
