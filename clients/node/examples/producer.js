// Push jobs to gmq: GMQ_URL=http://127.0.0.1:8000 node examples/producer.js
// (GMQ_TOKEN: the broker's [web] token, if it has one; GMQ_TOPIC: default "mail")
import { Client, GmqError } from 'gmq-client';

const client = new Client({ url: process.env.GMQ_URL, token: process.env.GMQ_TOKEN });
const topic = process.env.GMQ_TOPIC ?? 'mail';

// One job, with a client id: gmq keeps one live job per id, so a push sent
// twice (a retry, a second run) stores it once. An object (or an array) is
// a JSON body: the worker pops it back as an object.
try {
  const id = await client.push(topic, { to: 'ada@example.com', subject: 'Your receipt' }, {
    id: 'receipt-order-42',
    ttr: 30, // seconds the worker has before the job is given to another (the worker touches it)
  });
  console.log(`pushed ${id}`);
} catch (err) {
  if (!(err instanceof GmqError && err.status === 409)) throw err;
  console.log('receipt-order-42 is already queued');
}

// Several jobs in one request: all are stored, or none.
const ids = await client.pushBatch(
  ['grace', 'alan', 'edsger', 'barbara'].map((name) => ({
    topic,
    body: { to: `${name}@example.com`, subject: 'Newsletter' },
    ttr: 30,
  })),
);
for (const id of ids) console.log(`pushed ${id}`);
