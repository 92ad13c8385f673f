import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import {
  findUserByEmail,
  type ActiveUser,
  type RotationDecision,
  type RotationDeps,
  type RotationOutcome,
} from '../commands/back-office.ts';
import { loadUserState } from '../commands/user-admin.ts';
import type { Config } from '../config.ts';
import { common, withCredentials, type CommonOptions } from './support.ts';

/**
 * `key rotate|approve-rotation|reject-rotation|withdraw-rotation` and the same under `webhook`: a secret's
 * rotation under maker-checker, the same four steps for both (src/domain/secret-rotation.ts). The approval
 * prints no secret: it says whom the new one waits for, who collects it with `key secret` / `webhook secret`.
 */
export interface RotationSubject {
  /** The parent command's name: `key` or `webhook`. */
  command: string;
  /** How output names it: `key`, `webhook endpoint`. */
  noun: string;
  idField: 'keyID' | 'endpointID';
  decide(
    deps: RotationDeps & { secretsKey: Buffer },
    config: Config,
    user: ActiveUser,
    id: string,
    decision: RotationDecision,
    correlationId: string,
  ): Promise<RotationOutcome>;
  approve(
    deps: RotationDeps & { secretsKey: Buffer },
    config: Config,
    user: ActiveUser,
    id: string,
    correlationId: string,
  ): Promise<{ heldFor: string; previousValidUntil: string }>;
}

type AsOptions = CommonOptions & { as: string; reason?: string };

export function registerRotationCommands(parent: Command, subject: RotationSubject): void {
  const id = `<${subject.idField}>`;
  const steps: Array<
    [
      name: string,
      description: string,
      reason: 'required' | 'optional' | 'none',
      decision: (reason?: string) => RotationDecision,
    ]
  > = [
    [
      'rotate',
      `a maker asks for a new secret for an active ${subject.noun}; a checker approves it (approve-rotation)`,
      'required',
      (reason) => ({ type: 'request', reason }),
    ],
    [
      'reject-rotation',
      `a checker rejects a pending rotation: the ${subject.noun} keeps its secret`,
      'optional',
      (reason) => ({ type: 'reject', reason }),
    ],
    ['withdraw-rotation', 'the maker who asked for a rotation takes it back', 'none', () => ({ type: 'withdraw' })],
  ];
  for (const [name, description, reason, decision] of steps) {
    const command = common(parent.command(name))
      .description(description)
      .argument(id)
      .requiredOption('--as <email>', 'the acting user');
    if (reason === 'required') command.requiredOption('--reason <text>', 'why');
    if (reason === 'optional') command.option('--reason <text>', 'why');
    command.action(async (value: string, opts: AsOptions) =>
      withCredentials(
        opts,
        async (deps, _stores, config) => {
          const { rotation } = await subject.decide(
            deps,
            config,
            await findUserByEmail(deps, opts.as),
            value,
            decision(opts.reason),
            randomUUID(),
          );
          return { [subject.idField]: value, rotation };
        },
        (r) =>
          `${subject.noun} ${value}: rotation ${r.rotation}${
            r.rotation === 'pending'
              ? ` (a checker of the party approves it with: wallet-ops ${subject.command} approve-rotation ` +
                `${value} --as EMAIL)`
              : ''
          }`,
      ),
    );
  }
  common(parent.command('approve-rotation'))
    .description(
      'a checker approves a pending rotation: a new secret, which waits for the maker who asked ' +
        `(\`${subject.command} secret\`); the previous one works until the overlap (SECRET_ROTATION_OVERLAP_HOURS) ` +
        'ends',
    )
    .argument(id)
    .requiredOption('--as <email>', 'the checker')
    .action(async (value: string, opts: AsOptions) =>
      withCredentials(
        opts,
        async (deps, _stores, config) => {
          const { heldFor, previousValidUntil } = await subject.approve(
            deps,
            config,
            await findUserByEmail(deps, opts.as),
            value,
            randomUUID(),
          );
          return {
            [subject.idField]: value,
            rotation: 'approved',
            secretHeldFor: (await loadUserState(deps, heldFor)).email,
            previousSecretValidUntil: previousValidUntil,
          };
        },
        (r) =>
          [
            `${subject.noun} ${value}: secret rotated; the previous secret keeps working until ` +
              `${r.previousSecretValidUntil}`,
            `the new secret waits for ${r.secretHeldFor}, who collects it once with: wallet-ops ` +
              `${subject.command} secret ${value} --as ${r.secretHeldFor}`,
          ].join('\n'),
      ),
    );
}
