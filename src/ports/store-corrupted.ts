/**
 * A store whose content fails its own integrity checks (a damaged file, a page that is not what its structure
 * says, an event that no longer matches its hash). Unlike an unavailable store it does not heal by waiting:
 * the process refuses to serve from it (/health says "corrupted", the API answers 503 /problems/store-corrupted)
 * until an operator restores it (docs/operations.md, "Failure modes"). `store` names what is damaged (a file
 * such as events.sqlite), `reason` what is wrong with it.
 */
export class StoreCorruptedError extends Error {
  readonly code = 'STORE_CORRUPTED';
  readonly store: string;
  readonly reason: string;
  // Fields assigned in the body: the embedded store's commit thread loads ports with Node's own type stripping.
  constructor(store: string, reason: string, options?: { cause?: unknown }) {
    super(`${store} is corrupted: ${reason}`, options);
    this.name = 'StoreCorruptedError';
    this.store = store;
    this.reason = reason;
  }
}
