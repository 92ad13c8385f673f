/**
 * The Dockerfile without a Docker engine: what the image must be (Node 24, built in stages, production
 * dependencies only, compiled JavaScript as its entry point, an unprivileged user, a health check), read from
 * the file's instructions. Each rule is also shown to refuse a Dockerfile that breaks it, so none is vacuous.
 * That the compiled entry point runs is test/deploy/build.e2e.test.ts's part.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DOCKERFILE = readFileSync(`${ROOT}/Dockerfile`, 'utf8');

interface Instruction {
  keyword: string;
  args: string;
}
interface Stage {
  image: string;
  name: string | undefined;
  instructions: Instruction[];
}

/** The stages of a Dockerfile, each with its instructions (continuation lines joined, comments dropped). */
function stagesOf(text: string): Stage[] {
  const lines: string[] = [];
  let pending = '';
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line.startsWith('#') || (line === '' && pending === '')) continue;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    lines.push(pending + line);
    pending = '';
  }
  const stages: Stage[] = [];
  for (const line of lines.filter(Boolean)) {
    const [, keyword = '', args = ''] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    if (keyword.toUpperCase() === 'FROM') {
      const [, image = '', name] = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?/i.exec(args) ?? [];
      stages.push({ image, name, instructions: [] });
    } else {
      stages.at(-1)?.instructions.push({ keyword: keyword.toUpperCase(), args });
    }
  }
  return stages;
}

const execForm = (args: string): string[] | null => {
  try {
    const parsed: unknown = JSON.parse(args);
    return Array.isArray(parsed) && parsed.every((item) => typeof item === 'string') ? parsed : null;
  } catch {
    return null;
  }
};

/** What is wrong with a Dockerfile, one sentence a problem; none for a good one. */
export function dockerfileProblems(text: string): string[] {
  const problems: string[] = [];
  const stages = stagesOf(text);
  const final = stages.at(-1);
  if (!final) return ['no FROM'];
  const byName = new Map(stages.filter((stage) => stage.name).map((stage) => [stage.name!.toLowerCase(), stage]));
  const runs = (stage: Stage, pattern: RegExp) =>
    stage.instructions.some((i) => i.keyword === 'RUN' && pattern.test(i.args));
  /** The stages the final one copies `what` (a path ending) from. */
  const copiedFrom = (what: RegExp) =>
    final.instructions
      .filter((i) => i.keyword === 'COPY' && what.test(i.args))
      .map((i) => /--from=(\S+)/.exec(i.args)?.[1]?.toLowerCase())
      .map((name) => (name === undefined ? undefined : byName.get(name)));

  if (stages.length < 2 || !final.instructions.some((i) => i.keyword === 'COPY' && i.args.includes('--from='))) {
    problems.push('not a multi-stage build: the final stage must copy what earlier stages built');
  }
  for (const stage of stages) {
    if (byName.has(stage.image.toLowerCase())) continue; // FROM an earlier stage
    if (!/^node:24(?:[.-]|$)/.test(stage.image))
      problems.push(`stage ${stage.name ?? '(final)'} is based on ${stage.image}, not Node 24 (node:24-…)`);
  }

  // Production dependencies only: node_modules comes from an `npm ci --omit=dev`, and nothing installs more.
  const modulesFrom = copiedFrom(/node_modules\s*\S*$/);
  const installsInFinal = final.instructions.filter(
    (i) => i.keyword === 'RUN' && /\bnpm (ci|install|i)\b/.test(i.args),
  );
  const omitsDev = (stage: Stage | undefined) =>
    stage !== undefined &&
    runs(stage, /\bnpm ci\b[^&;|]*--omit=dev/) &&
    !runs(stage, /\bnpm (ci|install|i)\b(?![^&;|]*--omit=dev)/);
  if (modulesFrom.length + installsInFinal.length === 0) problems.push('the final stage has no node_modules');
  if (modulesFrom.some((stage) => !omitsDev(stage)) || installsInFinal.some((i) => !/--omit=dev/.test(i.args))) {
    problems.push(
      "the final stage's node_modules is not installed with `npm ci --omit=dev` (production dependencies only)",
    );
  }

  // The compiled entry point: `node dist/….js`, built by an earlier stage, with no TypeScript in the image.
  const cmd = final.instructions.filter((i) => i.keyword === 'CMD').at(-1);
  const command = cmd ? execForm(cmd.args) : null;
  const entry = command?.[0] === 'node' ? command[1] : undefined;
  if (!entry || !/^dist\/.+\.js$/.test(entry)) {
    problems.push(`the default command is not a compiled entry point (node dist/….js): ${cmd?.args ?? 'no CMD'}`);
  } else if (!existsSync(`${ROOT}/src/${entry.slice('dist/'.length).replace(/\.js$/, '.ts')}`)) {
    problems.push(`the default command's ${entry} is compiled from no source file`);
  }
  if (!copiedFrom(/\bdist\s+\S+$/).some((stage) => stage !== undefined && runs(stage, /\bnpm run build\b|\btsc\b/))) {
    problems.push('the final stage does not copy dist/ from a stage that compiles it');
  }
  if (
    final.instructions.some(
      (i) =>
        (i.keyword === 'COPY' || i.keyword === 'ADD') &&
        /(^|\s)(\.\/)?src\/?\s/.test(`${i.args.replace(/--\S+/g, '')} `),
    )
  ) {
    problems.push('the final stage copies src/: the image runs compiled JavaScript, not TypeScript');
  }
  if (final.instructions.some((i) => /\btsx\b/.test(i.args))) problems.push('the final stage uses tsx');

  // An unprivileged user runs it.
  const user = final.instructions
    .filter((i) => i.keyword === 'USER')
    .at(-1)
    ?.args.split(':')[0];
  if (!user || user === 'root' || user === '0')
    problems.push(`the image runs as ${user ?? 'root (no USER)'}, not as an unprivileged user`);

  const health = final.instructions.filter((i) => i.keyword === 'HEALTHCHECK').at(-1);
  if (!health || /^NONE\b/i.test(health.args) || !health.args.includes('/health'))
    problems.push('no HEALTHCHECK on /health');
  return problems;
}

/** The Dockerfile with one change, which must exist (a mutation that matches nothing proves nothing). */
function changed(from: string | RegExp, to: string): string {
  const result = DOCKERFILE.replace(from, to);
  expect(result, `the Dockerfile contains ${String(from)}`).not.toBe(DOCKERFILE);
  return result;
}

describe('Dockerfile', () => {
  it('when read, then it builds a Node 24 image in stages, with production dependencies only, a compiled entry point, an unprivileged user and a health check', () => {
    expect(dockerfileProblems(DOCKERFILE)).toEqual([]);
  });

  describe('the checks are not vacuous', () => {
    const cases: Array<[string, string, RegExp]> = [
      ['a Node 20 base image', changed(/node:24-slim/g, 'node:20-slim'), /not Node 24/],
      [
        'one stage of the three on Node 22',
        changed(/FROM node:24-slim AS build/, 'FROM node:22-slim AS build'),
        /stage build is based on node:22-slim/,
      ],
      ['devDependencies installed', changed(/RUN npm ci --omit=dev/, 'RUN npm ci'), /--omit=dev/],
      [
        'devDependencies installed in the final stage too',
        changed(/^USER node$/m, 'RUN npm install vitest\nUSER node'),
        /--omit=dev/,
      ],
      [
        'the TypeScript entry point',
        changed(/^CMD .*$/m, 'CMD ["node", "--import", "tsx", "src/main.ts", "serve"]'),
        /not a compiled entry point/,
      ],
      [
        'an entry point compiled from nothing',
        changed(/dist\/cli\/main\.js/, 'dist/cli/nothing.js'),
        /compiled from no source file/,
      ],
      ['the sources in the image', changed(/^COPY bin \.\/bin$/m, 'COPY bin ./bin\nCOPY src ./src'), /copies src/],
      ['root', changed(/^USER node$/m, 'USER root'), /runs as root/],
      ['no USER', changed(/^USER node$/m, ''), /runs as root \(no USER\)/],
      ['no health check', changed(/^HEALTHCHECK [\s\S]*?\n(?=CMD)/m, ''), /no HEALTHCHECK/],
      [
        'one stage',
        `FROM node:24-slim\nWORKDIR /app\nCOPY . .\nRUN npm ci --omit=dev && npm run build\nUSER node\nHEALTHCHECK CMD ["node", "-e", "fetch('http://127.0.0.1:3000/health')"]\nCMD ["node", "dist/cli/main.js", "serve"]\n`,
        /not a multi-stage build/,
      ],
    ];
    for (const [what, dockerfile, problem] of cases) {
      it(`given ${what}, when checked, then it is a problem`, () => {
        expect(dockerfileProblems(dockerfile).join('\n')).toMatch(problem);
      });
    }
  });
});
