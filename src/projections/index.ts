import type { Projection } from './projection.ts';
import { balancesProjection } from './balances.ts';
import { consoleOperationsProjection } from './console-operations.ts';
import { distributorOperationsProjection } from './distributor-operations.ts';
import { merchantOperationsProjection } from './merchant-operations.ts';
import { merchantPaymentsProjection } from './merchant-payments.ts';
import { pendingOperationsProjection } from './pending-operations.ts';
import { unsettledOperationsProjection } from './unsettled-operations.ts';
import { webhookEndpointsProjection } from './webhook-endpoints.ts';

/** Every read model, by the name ops use (`projections rebuild --only NAME`). */
export function allProjections(assetScale: number): Projection[] {
  return [
    balancesProjection({ assetScale }),
    distributorOperationsProjection({ assetScale }),
    merchantOperationsProjection({ assetScale }),
    merchantPaymentsProjection({ assetScale }),
    unsettledOperationsProjection(),
    pendingOperationsProjection(),
    webhookEndpointsProjection(),
    consoleOperationsProjection({ assetScale }),
  ] as unknown as Projection[];
}
