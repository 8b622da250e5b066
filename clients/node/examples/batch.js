// Split a report in parts pushed as one batch, work them, and hear once
// that all are done: the batch's onComplete job comes with its summary
// (withResult): GMQ_URL=http://127.0.0.1:8000 node examples/batch.js
// (GMQ_TOPIC: default "node-report")
import { Client } from 'gmq-client';

const client = new Client({ url: process.env.GMQ_URL, token: process.env.GMQ_TOKEN });
const report = process.env.GMQ_TOPIC ?? 'node-report';

const { id, ids } = await client.createBatch({
  jobs: [1, 2, 3].map((part) => ({ topic: `${report}-part`, body: { part }, ttr: 60 })),
  onComplete: { topic: `${report}-done`, body: { email: 'ops@example.com' }, withResult: true },
  meta: { report: 42 },
  withResults: true, // the summary holds each part's result, by id
});
console.log(`batch ${id}: ${ids.length} parts`);

// A worker makes each part: what it resolves to is the part's result.
let left = ids.length;
const worker = client.worker(
  `${report}-part`,
  async (job) => {
    if (--left === 0) worker.stop(); // the last part: it is acked, then done resolves
    return { pages: job.body.part * 2 };
  },
  { signals: false },
);
await worker.done;

// Once every part has ended (within a second or two), onComplete is pushed, once.
const done = await client.pop(`${report}-done`, { timeout: 10 });
const { state, completed, meta, results } = done.body.result;
const pages = Object.values(results).reduce((sum, r) => sum + r.pages, 0);
console.log(`batch ${state}: ${completed} parts of report ${meta.report}, ${pages} pages, mail ${done.body.body.email}`);
await client.ack(done);
console.log(`the batch is ${(await client.getBatch(id)).state}`);
