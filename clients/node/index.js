// gmq-client: a client for gmq's HTTP API, and a worker loop. See README.md.
export { Client, defaults } from './lib/client.js';
export { Worker, workerDefaults } from './lib/worker.js';
export { GmqError } from './lib/errors.js';
