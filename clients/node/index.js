// gmq-client: a client for gmq's HTTP API, and a worker loop. See README.md.
export { Client, defaults } from './lib/client.js';
export { CancelledError, Done, HandlerTimeoutError, ResultError, Worker, workerDefaults } from './lib/worker.js';
export { GmqError } from './lib/errors.js';
export { LOST, eventsDefaults } from './lib/events.js';
export { WebhookVerificationError, verifyWebhook } from './lib/webhook.js';
export const version = '0.1.0'; // package.json's version (gmq's version_test.go checks)
