// Push a report job that gmq keeps an hour once it is done, make it with a
// worker whose handler returns a result, and read the result back:
// GMQ_URL=http://127.0.0.1:8000 node examples/report.js
import { Client } from 'gmq-client';

const client = new Client({ url: process.env.GMQ_URL, token: process.env.GMQ_TOKEN });

// keepCompleted (seconds) keeps this job an hour after its ack, with its
// result, whatever the topic's keep_completed says.
const id = await client.push('exports', { user: 42 }, { keepCompleted: 3600 });

// What the handler resolves to is the result its ack carries (undefined: none).
const worker = client.worker(
  'exports',
  async (job) => {
    worker.stop(); // one job is enough here: it is acked, then done resolves
    return { url: `/r/${job.id}.pdf`, pages: 7 };
  },
  { signals: false },
);
await worker.done;

// The producer, or an operator, reads how it ended.
const job = await client.getJob(id);
console.log(`job ${job.id} ${job.state} at ${job.completed_at}: ${job.result?.url}, ${job.result?.pages} pages`);
