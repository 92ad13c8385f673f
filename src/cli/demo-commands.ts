import type { Command } from 'commander';
import { demoInstructions, seedDemo } from '../demo.ts';
import { common, withCredentials, type CommonOptions } from './support.ts';
import { cliIO } from './io.ts';

/**
 * `wallet-ops demo`: seeds the demo (parties, float, makers, checkers and an administrator, all with a
 * published password, and fresh API keys) into the configured stores and prints how to try it. For a
 * demonstration only: into an empty store or one the demo marked (src/demo-store.ts), never another; the
 * compose demo is a project of its own with its own stores (deploy/demo/compose.yml).
 */
export function registerDemoCommands(program: Command): void {
  common(program.command('demo'))
    .description(
      'seed demo parties, users (published password) and fresh API keys into an empty or demo store (refused on ' +
        'any other), print curl lines, and exit',
    )
    .option('--api-url <url>', 'where the API answers, for the printed commands', 'http://127.0.0.1:3000')
    .action(async (opts: CommonOptions & { apiUrl: string }) => {
      let dataDir = '';
      await withCredentials(
        opts,
        async ({ store, assetScale, credentials }) => {
          dataDir = opts.dataDir ?? cliIO().env.DATA_DIR ?? './data';
          return seedDemo(store, assetScale, credentials);
        },
        (seed) => demoInstructions(seed, opts.apiUrl.replace(/\/+$/, ''), dataDir),
      );
    });
}
