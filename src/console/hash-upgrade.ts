import type { Response } from 'express';
import type { ActiveUser } from '../commands/back-office.ts';
import { upgradePasswordHash } from '../commands/password-upgrade.ts';
import { correlationId, type ConsoleServices } from './context.ts';

/**
 * Right after a successful login, a password hash stored with a lower scrypt cost than today's is replaced
 * (src/commands/password-upgrade.ts). A failure here must not cost the user their login: it is logged, and the
 * next login tries again.
 */
export async function upgradeHashAfterLogin(
  services: ConsoleServices,
  user: ActiveUser,
  password: string,
  res: Response,
): Promise<void> {
  try {
    const upgraded = await upgradePasswordHash(services.backOffice, user, password, {
      actor: `user:${user.userID}`,
      correlationId: correlationId(res),
    });
    if (upgraded)
      services.deps.logger.info({ userID: user.userID }, 'console: password hash upgraded to the current cost');
  } catch (error) {
    services.deps.logger.warn(
      { err: error, userID: user.userID },
      'console: password hash upgrade failed; retried at the next login',
    );
  }
}
