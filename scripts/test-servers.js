#!/usr/bin/env node
// `npm run test:servers`: the KurrentDB and MongoDB adapter contract suites on real servers, in one command. Starts
// the two stores of docker-compose.yml (its `kurrentdb` and `mongodb` services, and nothing else) and waits for their
// healthchecks, then runs every test file of test/adapters that needs them with KURRENTDB_URL and MONGODB_URL set to
// their published ports. `npm test` runs the same files without the variables, and reports those suites skipped.
// The servers are left running (a shared server is fine: every test writes under its own streams and database);
// `docker compose stop kurrentdb mongodb` stops them. Needs Docker with the compose plugin. Arguments go to vitest.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const SERVICES = ['kurrentdb', 'mongodb'];
export const SERVER_URLS = {
  KURRENTDB_URL: 'kurrentdb://localhost:2113?tls=false',
  // The replica set's one member is named mongodb:27017, which only the compose network resolves.
  MONGODB_URL: 'mongodb://localhost:27017/?directConnection=true',
};
/**
 * The files that run more when a server URL is set: every KurrentDB and MongoDB adapter integration test (the pure
 * mapping and query tests need no server), and the line that says so.
 */
export const serverSuites = () =>
  readdirSync(join(root, 'test/adapters'))
    .filter((name) => /^(kurrentdb|mongodb)-.*\.int\.test\.ts$/.test(name) || name === 'server-contracts.test.ts')
    .map((name) => `test/adapters/${name}`)
    .sort();

function run(command, args, env = process.env) {
  process.stderr.write(`$ ${command} ${args.join(' ')}\n`);
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit', env });
  if (result.error) process.stderr.write(`${command} did not start: ${result.error.message}\n`);
  return result.status ?? 1;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // The compose file asks for SECRETS_KEY (the wallet-ops services seal secrets with it); the stores alone never use it.
  const env = { ...process.env, SECRETS_KEY: process.env.SECRETS_KEY ?? randomBytes(32).toString('hex') };
  const started = run('docker', ['compose', 'up', '--detach', '--wait', ...SERVICES], env);
  if (started !== 0) {
    process.stderr.write('the servers did not start (is Docker running, with the compose plugin?)\n');
    process.exit(started);
  }
  const vitest = join(root, 'node_modules/.bin/vitest');
  process.exit(run(vitest, ['run', ...serverSuites(), ...process.argv.slice(2)], { ...env, ...SERVER_URLS }));
}
