/**
 * A decider is the whole behaviour of one aggregate as pure functions: `decide` turns a command and the
 * current state into new events (or throws a DomainError refusing it); `evolve` folds one event into the
 * state. No I/O, no clock, no random ids: time and ids arrive in the command.
 */
export interface Decider<Command, State, Event> {
  initialState: () => State;
  evolve: (state: State, event: Event) => State;
  decide: (command: Command, state: State) => Event[];
}

export function fold<State, Event>(
  decider: Pick<Decider<unknown, State, Event>, 'evolve'>,
  state: State,
  events: Iterable<Event>,
): State {
  let current = state;
  for (const event of events) current = decider.evolve(current, event);
  return current;
}

/** Compile-time exhaustiveness: a forgotten case in a switch over a union fails to type-check here. */
export function assertNever(value: never): never {
  throw new Error(`unexpected value: ${JSON.stringify(value)}`);
}
