/**
 * The one command that verifies the server stores where Docker runs (`npm run test:servers`) and the CI workflow
 * for a runner that has Docker, read without a Docker engine: the script starts services that docker-compose.yml
 * has, with healthchecks to wait on, at the ports its URLs name, and runs the suites that need them.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
// @ts-expect-error a plain JavaScript script of the repository, without declarations
import { SERVER_URLS, SERVICES, serverSuites } from '../../scripts/test-servers.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (path: string) => readFileSync(`${ROOT}/${path}`, 'utf8');

describe('npm run test:servers', () => {
  const compose = parse(read('docker-compose.yml'), { merge: true }) as {
    services: Record<string, { healthcheck?: unknown; ports?: string[]; profiles?: string[] }>;
  };

  it('is an npm script that runs scripts/test-servers.js', () => {
    expect(JSON.parse(read('package.json')).scripts['test:servers']).toBe('node scripts/test-servers.js');
  });

  it('starts services of docker-compose.yml that start by default, with a healthcheck to wait on, published where its URLs point', () => {
    expect(SERVICES).toEqual(['kurrentdb', 'mongodb']);
    for (const name of SERVICES as string[]) {
      const service = compose.services[name]!;
      expect(service, name).toBeDefined();
      expect(service.profiles, name).toBeUndefined();
      expect(service.healthcheck, name).toBeDefined();
    }
    const urls = SERVER_URLS as Record<string, string>;
    expect(compose.services.kurrentdb!.ports).toContain(`127.0.0.1:${new URL(urls.KURRENTDB_URL!).port}:2113`);
    expect(compose.services.mongodb!.ports).toContain(`127.0.0.1:${new URL(urls.MONGODB_URL!).port}:27017`);
  });

  it('runs both contract suites and every other file that needs the servers', () => {
    expect(serverSuites()).toEqual(
      expect.arrayContaining([
        'test/adapters/kurrentdb-event-store.int.test.ts',
        'test/adapters/mongodb-read-store.int.test.ts',
      ]),
    );
  });

  it('is what the CI workflow for a runner with Docker runs, after npm ci, on Node 24', () => {
    const workflow = parse(read('.github/workflows/servers.yml')) as {
      jobs: Record<string, { steps: Array<{ run?: string; with?: Record<string, unknown> }> }>;
    };
    const steps = Object.values(workflow.jobs).flatMap((job) => job.steps);
    const runs = steps.map((step) => step.run).filter(Boolean);
    expect(runs.indexOf('npm run test:servers')).toBeGreaterThan(runs.indexOf('npm ci'));
    expect(runs.indexOf('npm ci')).toBeGreaterThanOrEqual(0);
    expect(steps.find((step) => step.with?.['node-version'] !== undefined)?.with?.['node-version']).toBe(24);
  });
});
