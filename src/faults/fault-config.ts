import type { StoreDecorators } from '../adapters/open-stores.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import {
  type FaultCounters,
  type FaultPlan,
  isActive,
  newFaultCounters,
  withEventStoreFaults,
  withLedgerFaults,
  withReadStoreFaults,
} from './fault-injection.ts';

export interface FaultPlans {
  eventStore: FaultPlan;
  readStore: FaultPlan;
  ledger: FaultPlan;
}

type FaultConfig = Pick<
  Config,
  | 'FAULT_EVENT_STORE_ERROR_RATE'
  | 'FAULT_EVENT_STORE_LATENCY_MS'
  | 'FAULT_EVENT_STORE_HANG_RATE'
  | 'FAULT_READ_STORE_ERROR_RATE'
  | 'FAULT_READ_STORE_LATENCY_MS'
  | 'FAULT_READ_STORE_HANG_RATE'
  | 'FAULT_LEDGER_ERROR_RATE'
  | 'FAULT_LEDGER_LATENCY_MS'
  | 'FAULT_LEDGER_HANG_RATE'
  | 'FAULT_HANG_MS'
>;

/** The plans the FAULT_* configuration keys describe; with the defaults, none is active. */
export function faultPlansFromConfig(config: FaultConfig): FaultPlans {
  const hangMs = config.FAULT_HANG_MS;
  return {
    eventStore: {
      errorRate: config.FAULT_EVENT_STORE_ERROR_RATE,
      latencyMs: config.FAULT_EVENT_STORE_LATENCY_MS,
      hangRate: config.FAULT_EVENT_STORE_HANG_RATE,
      hangMs,
    },
    readStore: {
      errorRate: config.FAULT_READ_STORE_ERROR_RATE,
      latencyMs: config.FAULT_READ_STORE_LATENCY_MS,
      hangRate: config.FAULT_READ_STORE_HANG_RATE,
      hangMs,
    },
    ledger: {
      errorRate: config.FAULT_LEDGER_ERROR_RATE,
      latencyMs: config.FAULT_LEDGER_LATENCY_MS,
      hangRate: config.FAULT_LEDGER_HANG_RATE,
      hangMs,
    },
  };
}

/** The plans that inject something, by store; empty when fault injection is off. */
export function activeFaultPlans(plans: FaultPlans): Partial<FaultPlans> {
  return Object.fromEntries(Object.entries(plans).filter(([, plan]) => isActive(plan)));
}

/**
 * The decorators that open-stores applies to the raw stores and the ledger (src/adapters may not import
 * src/faults: the layer rules). When a plan is active, one warning names the active plans, so that a process
 * running with injected faults cannot go unnoticed in its logs.
 */
export function faultDecorators(
  plans: FaultPlans,
  logger?: Pick<Logger, 'warn'>,
  counters: FaultCounters = newFaultCounters(),
): StoreDecorators {
  const active = activeFaultPlans(plans);
  if (Object.keys(active).length > 0)
    logger?.warn(
      { faults: active },
      `FAULT INJECTION ACTIVE on ${Object.keys(active).join(', ')}: calls will be slowed and failed on purpose ` +
        '(never in production)',
    );
  return {
    eventStore: (store) => withEventStoreFaults(store, plans.eventStore, counters),
    readStore: (store) => withReadStoreFaults(store, plans.readStore, counters),
    ledger: (ledger) => withLedgerFaults(ledger, plans.ledger, counters),
  };
}
