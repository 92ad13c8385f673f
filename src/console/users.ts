import type { ActiveUser } from '../commands/back-office.ts';
import { loadState } from '../commands/pipeline.ts';
import { userDecider } from '../commands/users.ts';
import { streams } from '../domain/streams.ts';
import type { ConsoleServices } from './context.ts';

/** Users as the console loads them from their own streams: the session's user, and who did what in the lists. */
export async function loadUser(services: ConsoleServices, userID: string): Promise<ActiveUser | null> {
  const { state } = await loadState(services.backOffice, streams.user(userID), userDecider);
  return state.status === 'active' ? state : null;
}

/** A user id as people know it: the email. */
export async function emailOf(services: ConsoleServices, userID: string | null): Promise<string> {
  if (!userID) return '';
  if (!/^[0-9a-f-]{36}$/.test(userID)) return userID; // an operator or a system actor
  // Also a disabled user's: lists still say who requested or approved what.
  const { state } = await loadState(services.backOffice, streams.user(userID), userDecider);
  return state.status === 'none' ? userID : state.email;
}
