export {
  createWalletClient,
  WalletApiError,
  type Balance,
  type DistributorOperation,
  type DistributorOperationRequest,
  type MerchantOperation,
  type MerchantOperationRequest,
  type OperationFilters,
  type Payment,
  type PaymentFilters,
  type Problem,
  type WalletClient,
  type WalletClientOptions,
} from './client.ts';
export { paginate, type Page, type PageOptions } from './pages.ts';
export { retryAfterSeconds, retryingFetch, type RetryOptions } from './retry.ts';
export { verifyWebhook, WebhookVerificationError, type WebhookEvent } from './webhooks.ts';
export type { components, paths, webhooks } from './schema.ts';
