// A pipeline pushed up front: load waits for extract (after) and gets its
// result (withResults); extract's own follow-up (then) is pushed when it
// completes, with its result (withResult), and onDead's if it dies:
// GMQ_URL=http://127.0.0.1:8000 node examples/pipeline.js (GMQ_TOPIC: default "node-etl")
import { Client } from 'gmq-client';

const client = new Client({ url: process.env.GMQ_URL, token: process.env.GMQ_TOKEN });
const etl = process.env.GMQ_TOPIC ?? 'node-etl';

const extract = await client.push(`${etl}-extract`, { day: 5 }, {
  ttr: 60,
  retry: { maxAttempts: 3 },
  then: [{ topic: `${etl}-notify`, body: 'day 5 extracted', withResult: true }],
  onDead: [{ topic: `${etl}-alerts`, body: 'day 5: the extract failed' }],
});
const load = await client.push(`${etl}-load`, { day: 5 }, { ttr: 60, after: [extract], withResults: true });
console.log(`load is ${(await client.getJob(load)).state}`); // waiting, until extract completes

// The extract's consumer knows nothing of what comes next: it acks with a result.
const job = await client.pop(`${etl}-extract`, { timeout: 5 });
await client.ack(job, { result: { rows: 120 } });

// then was pushed by that ack: its body is {body, result}.
const notice = await client.pop(`${etl}-notify`, { timeout: 5 });
console.log(`${notice.body.body}: ${notice.body.result.rows} rows`);
await client.ack(notice);

// load is ready within a second of the extract's ack; its dependencies'
// results are in its view, by number.
const step = await client.pop(`${etl}-load`, { timeout: 5 });
const { dependency_results: results } = await client.getJob(step.id);
console.log(`loading ${Object.values(results)[0].rows} rows`);
await client.ack(step);
