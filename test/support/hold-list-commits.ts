/**
 * The read store with each commit of the operation lists' checkpoints held back HOLD_MS, or until the gate opens,
 * as a loaded store does: what the read-your-writes suite runs against. A module of its own, importing only types,
 * so that a followers thread can load it (startTestSystem's `followersThread.hooks`); the gate is closed and opened
 * over a BroadcastChannel, which reaches every thread of the process, this one included.
 */
import { BroadcastChannel } from 'node:worker_threads';
import type { ReadStore } from '../../src/ports/read-store.ts';

export const HOLD_MS = 40;
const LISTS = new Set(['distributor-operations', 'merchant-operations', 'console-operations']);
const CHANNEL = 'test:hold-list-commits';

type GateMessage = { gate: 'close' | 'open'; id: number } | { ack: number };

let gate: Promise<void> | undefined;
let open = () => {};
let listening: BroadcastChannel | undefined;

/** This thread's holding stores follow the gate's messages, and acknowledge each. */
function listen(): void {
  if (listening) return;
  const channel = new BroadcastChannel(CHANNEL);
  channel.unref();
  channel.onmessage = (event) => {
    const message = (event as { data: GateMessage }).data;
    if (!('gate' in message)) return;
    if (message.gate === 'close') gate ??= new Promise((resolve) => (open = resolve));
    else {
      open();
      gate = undefined;
    }
    channel.postMessage({ ack: message.id } satisfies GateMessage);
  };
  listening = channel;
}

export function decorateReadStore(store: ReadStore): ReadStore {
  listen();
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'commit') {
        return async (...args: Parameters<ReadStore['commit']>) => {
          if (args[1] && LISTS.has(args[1].projection))
            await (gate ?? new Promise((resolve) => setTimeout(resolve, HOLD_MS)));
          return target.commit(...args);
        };
      }
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** The lists' next commits wait until the gate opens again ('close'), or go on ('open'), once the store knows. */
export async function listGate(state: 'close' | 'open'): Promise<void> {
  const channel = new BroadcastChannel(CHANNEL);
  const id = Math.random();
  try {
    await new Promise<void>((resolve) => {
      channel.onmessage = (event) => {
        const message = (event as { data: GateMessage }).data;
        if ('ack' in message && message.ack === id) resolve();
      };
      channel.postMessage({ gate: state, id } satisfies GateMessage);
    });
  } finally {
    channel.close();
  }
}
