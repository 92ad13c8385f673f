import { expect } from 'vitest';
import type { Decider } from '../../src/commands/decider.ts';
import { DomainError, type DomainErrorCode } from '../../src/domain/errors.ts';

/**
 * Given/when/then for deciders: given past events, when a command is decided, then these events are
 * produced, or the command is refused with this error code.
 */
export function deciderSpec<Command, State, Event>(decider: Decider<Command, State, Event>) {
  return (given: Event[]) => ({
    when: (command: Command) => {
      const decide = () => decider.decide(command, given.reduce(decider.evolve, decider.initialState()));
      return {
        then: (expected: Event[]) => expect(decide()).toEqual(expected),
        thenRefused: (code: DomainErrorCode, message?: RegExp) => expectRefused(decide, code, message),
      };
    },
  });
}

/** Then the decision is refused with this error code (and a message matching, when given). */
export function expectRefused(decide: () => unknown, code: DomainErrorCode, message?: RegExp): void {
  let caught: unknown;
  try {
    decide();
  } catch (error) {
    caught = error;
  }
  expect(caught, 'the command was accepted, not refused').toBeInstanceOf(DomainError);
  expect((caught as DomainError).code).toBe(code);
  if (message) expect((caught as DomainError).message).toMatch(message);
}
