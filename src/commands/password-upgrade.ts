import { hashPassword, needsRehash } from '../domain/passwords.ts';
import { streams } from '../domain/streams.ts';
import type { BackOfficeDeps } from './back-office.ts';
import { runCommand, type CommandContext } from './pipeline.ts';
import { userDecider } from './users.ts';

/**
 * Raising the scrypt cost needs the password itself, which wallet-ops only holds while a login checks it: so a
 * hash stored with a lower cost is replaced right after a successful login, by the same password hashed with
 * today's cost (UserPasswordHashUpgraded). Returns whether it was replaced; a password changed since the login
 * checked it is left alone (the decider compares the hash it verified).
 */
export async function upgradePasswordHash(
  deps: BackOfficeDeps,
  user: { userID: string; passwordHash: string },
  password: string,
  context: CommandContext,
): Promise<boolean> {
  if (!needsRehash(user.passwordHash)) return false;
  const passwordHash = await hashPassword(password);
  const { events } = await runCommand(deps, {
    stream: streams.user(user.userID),
    decider: userDecider,
    command: {
      type: 'UpgradePasswordHash',
      data: { userID: user.userID, verifiedHash: user.passwordHash, passwordHash, now: deps.clock().toISOString() },
    },
    context,
  });
  return events.length > 0;
}
