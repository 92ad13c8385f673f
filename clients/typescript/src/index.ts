export { createWalletClient, WalletApiError, type Balance, type DistributorOperation, type DistributorOperationRequest, type MerchantOperation, type MerchantOperationRequest, type Payment, type Problem, type WalletClient, type WalletClientOptions } from './client.ts';
export { paginate, type Page } from './pages.ts';
export { retryAfterSeconds, retryingFetch, type RetryOptions } from './retry.ts';
export { verifyWebhook, WebhookVerificationError, type WebhookEvent } from './webhooks.ts';
export type { components, paths, webhooks } from './schema.ts';
