import { DataDirError } from './adapters/data-dir.ts';
import { ConfigError } from './config.ts';
import { ListenError, serve } from './server.ts';

/** `npm start`: the API, the projections and the executor in one process; `npm start -- --demo` seeds a demo. */
serve(undefined, { demo: process.argv.includes('--demo') }).catch((error: unknown) => {
  process.stderr.write(`${error instanceof ConfigError || error instanceof ListenError || error instanceof DataDirError ? error.message : error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
