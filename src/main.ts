import { DataDirError } from './adapters/data-dir.ts';
import { ConfigError } from './config.ts';
import { DemoStoreRefusedError } from './demo-store.ts';
import { ListenError, serve } from './server.ts';

/** `npm start`: the API, the projections and the executor in one process; `npm start -- --demo` seeds a demo. */
serve(undefined, { demo: process.argv.includes('--demo') }).catch((error: unknown) => {
  const message = error instanceof DemoStoreRefusedError ? `refused: ${error.message}` : error instanceof ConfigError || error instanceof ListenError || error instanceof DataDirError ? error.message : error instanceof Error ? error.stack : String(error);
  process.stderr.write(`${message}\n`);
  process.exit(1);
});
