// peer.mjs: BullMQ's side of bench/peers.sh. On the given Redis database it
// enqueues N jobs of S bytes with Queue.add (or Queue.addBulk, K a call,
// with --bulk K), then runs one Worker with concurrency C until all N are
// completed, and prints one line of JSON with the same fields as
// `go run ./bench/asynq -peer ...` (bench/asynq/peer.go).
//
//   node peer.mjs --port 6379 --db 2 --jobs 20000 --size 100 --clients 32
//
// Jobs are added with removeOnComplete: true, so a completed job's hash is
// deleted as it completes and Redis's memory does not grow run after run.
// Everything else is BullMQ's default (its events stream included).
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import { Queue, Worker } from 'bullmq';

const { values: a } = parseArgs({
  options: {
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string', default: '6379' },
    db: { type: 'string', default: '2' },
    jobs: { type: 'string', default: '20000' },
    size: { type: 'string', default: '100' },
    clients: { type: 'string', default: '32' }, // adds in flight, and the worker's concurrency
    bulk: { type: 'string', default: '1' }, // jobs a call: 1 is Queue.add, more is Queue.addBulk
    queue: { type: 'string', default: 'peers' },
    timeout: { type: 'string', default: '300' }, // seconds before giving up
  },
});
const n = Number(a.jobs);
const clients = Number(a.clients);
const bulk = Math.max(Number(a.bulk), 1);
const connection = { host: a.host, port: Number(a.port), db: Number(a.db) };
const payload = 'x'.repeat(Number(a.size)); // the job's data: a string, stored as JSON
const version = createRequire(import.meta.url)('bullmq/package.json').version;

// A run that hangs (a lost job, a Redis gone) fails instead of waiting on.
const deadline = setTimeout(() => {
  console.error(`bullmq: not done within ${a.timeout}s`);
  process.exit(1);
}, Number(a.timeout) * 1000);

const queue = new Queue(a.queue, { connection, defaultJobOptions: { removeOnComplete: true } });
await queue.waitUntilReady();

// Enqueue: `clients` loops, each with one call in flight, take from a
// shared count until n are added (as the Go sides' goroutines do).
let next = 0;
const cpu0 = process.cpuUsage(); // the client's CPU over the two phases, node's start left out
let start = performance.now();
await Promise.all(
  Array.from({ length: clients }, async () => {
    for (;;) {
      const k = Math.min(bulk, n - next);
      if (k <= 0) return;
      next += k;
      if (bulk === 1) {
        await queue.add('bench', payload);
      } else {
        await queue.addBulk(Array.from({ length: k }, () => ({ name: 'bench', data: payload })));
      }
    }
  }),
);
const enqueueSecs = (performance.now() - start) / 1000;

// Process: one Worker, concurrency `clients`, whose handler does nothing;
// done when it has completed n jobs (its 'completed' event comes after the
// job is moved to completed, here removed, in Redis).
let completed = 0;
let failed = null;
let done;
const finished = new Promise((resolve) => (done = resolve));
const worker = new Worker(a.queue, async () => {}, { connection, concurrency: clients, autorun: false });
worker.on('completed', () => {
  if (++completed === n) done();
});
worker.on('failed', (job, err) => {
  failed = err;
  done();
});
worker.on('error', (err) => {
  failed = err;
  done();
});
await worker.waitUntilReady();
start = performance.now();
worker.run();
await finished;
const processSecs = (performance.now() - start) / 1000;
const cpu = process.cpuUsage(cpu0);
if (failed) throw failed;

// Nothing may be left: removeOnComplete deleted every completed job.
const left = await queue.getJobCounts('wait', 'active', 'completed', 'failed', 'delayed');
await worker.close();
await queue.close();
clearTimeout(deadline);
if (Object.values(left).some((v) => v !== 0)) {
  throw new Error(`jobs left in Redis: ${JSON.stringify(left)}`);
}

console.log(
  JSON.stringify({
    side: bulk === 1 ? 'bullmq' : 'bullmq-bulk',
    jobs: n,
    size: Number(a.size),
    clients,
    batch: bulk,
    enqueue_s: enqueueSecs,
    enqueue_per_s: n / enqueueSecs,
    process_s: processSecs,
    process_per_s: n / processSecs,
    cpu_s: (cpu.user + cpu.system) / 1e6,
    library: `bullmq ${version} (Queue.${bulk === 1 ? 'add' : 'addBulk'}, Worker), node ${process.version}`,
  }),
);
