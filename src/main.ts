import { enableCompileCache } from 'node:module';

/** `npm start`: the API, the projections and the executor in one process; `npm start -- --demo` seeds a demo. */
// Node erases the sources' types as it loads them; its compile cache keeps the result (as bin/wallet-ops.js does),
// so a start only erases the files changed since the last. Turned on before the modules load, hence the import().
enableCompileCache();
const { DataDirError } = await import('./adapters/data-dir.ts');
const { ConfigError } = await import('./config.ts');
const { DemoStoreRefusedError } = await import('./demo-store.ts');
const { ListenError, serve } = await import('./server.ts');
const { startFailure } = await import('./start-failure.ts');

serve(undefined, { demo: process.argv.includes('--demo') }).catch((error: unknown) => {
  const message =
    error instanceof DemoStoreRefusedError
      ? `refused: ${error.message}`
      : error instanceof ConfigError || error instanceof ListenError || error instanceof DataDirError
        ? error.message
        : startFailure(error);
  process.stderr.write(`${message}\n`);
  process.exit(1);
});
