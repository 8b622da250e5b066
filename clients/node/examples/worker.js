// Work on gmq's jobs: GMQ_URL=http://127.0.0.1:8000 node examples/worker.js
// Ctrl-C or SIGTERM stops it: no more jobs are taken, those in hand finish.
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'gmq-client';

const client = new Client({ url: process.env.GMQ_URL, token: process.env.GMQ_TOKEN });
const topic = process.env.GMQ_TOPIC ?? 'mail';

// send stands in for the real work (an SMTP call, say).
async function send(mail) {
  if (!mail.to) throw new Error('no recipient');
  await sleep(500);
}

const worker = client.worker(
  topic,
  async (job) => {
    // A body pushed as an object pops as one; a string (JSON.stringify'd by
    // an older producer) is parsed. A throw (here, or a string that is not
    // JSON) fails the job with the error's message: gmq retries it after a
    // backoff, or marks it dead.
    const mail = typeof job.body === 'string' ? JSON.parse(job.body) : job.body;
    console.log(`sending ${job.id} to ${mail.to}`);
    await send(mail);
    console.log(`sent ${job.id}`); // returning acks the job
  },
  { concurrency: 4 },
);

await worker.done; // after SIGTERM or Ctrl-C, once the jobs in hand are acked or failed
console.log('stopped');
