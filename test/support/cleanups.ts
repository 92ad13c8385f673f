import { afterEach } from 'vitest';

type Cleanup = () => Promise<unknown> | unknown;

/**
 * A stack of cleanups run after each test, last pushed first: every one runs even when one fails, and the first
 * failure is reported. A test pushes what it started (systems, processes, directories) as it starts it.
 */
export function cleanupsAfterEach(): Cleanup[] {
  const cleanups: Cleanup[] = [];
  afterEach(async () => {
    const errors: unknown[] = [];
    for (const cleanup of cleanups.splice(0).reverse()) {
      try {
        await cleanup();
      } catch (error) {
        errors.push(error);
      }
    }
    if (errors.length > 0) throw errors[0];
  });
  return cleanups;
}
