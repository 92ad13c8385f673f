import type { RequestHandler } from 'express';

/**
 * Several handlers as one layer of express's router, with express's contract: a handler goes on with `next()`, fails
 * with `next(error)`, a throw or a rejected promise; after the last one the request goes on to the next layer. Each
 * layer express passes costs a request a match, a params pass and closures: for a balance answered from memory the
 * layers before its route cost about as much as the answer (docs/benchmarks.md, "The HTTP path's CPU").
 */
export function inSequence(handlers: readonly RequestHandler[]): RequestHandler {
  const sequence: RequestHandler = (req, res, next) => {
    let at = 0;
    const step = (error?: unknown): void => {
      // As express's router: a falsy argument is no error.
      if (error) return next(error);
      const handler = handlers[at++];
      if (!handler) return next();
      try {
        const returned: unknown = handler(req, res, step);
        if (isThenable(returned)) returned.then(undefined, (reason: unknown) => next(reason || rejected()));
      } catch (thrown) {
        next(thrown);
      }
    };
    step();
  };
  // As a router shows its layers: what reads an app's routes from `app.router.stack` still finds them in here.
  return Object.assign(sequence, { stack: handlers.map((handle) => ({ handle })) });
}

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  value !== null && typeof value === 'object' && typeof (value as PromiseLike<unknown>).then === 'function';

const rejected = () => new Error('Rejected promise');
