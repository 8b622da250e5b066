// Unique pushes: GMQ_URL=http://127.0.0.1:8000 node examples/unique.js queues one
// digest of ada's messages, updated while it waits, and her signup mail once
// a day, however often it runs (GMQ_TOKEN: the broker's [web] token, if any).
import { Client, GmqError } from 'gmq-client';

const client = new Client({ url: process.env.GMQ_URL, token: process.env.GMQ_TOKEN });

// Replace: while the digest waits (its minute's delay), a push gives it the
// latest body rather than queueing a second digest.
const digest = await client.push('digest', 'ada: 3 new messages', {
  delay: 60,
  unique: { key: 'digest-ada', for: 600, mode: 'replace' },
});
console.log(digest.unique === 'replaced' ? `updated the waiting digest ${digest.id}` : `queued the digest ${digest.id}`);

// Reject (the default): while the key is held, a push throws 409 naming the
// job that holds it (which may be done already).
try {
  await client.push('signup', 'ada@example.com', { unique: { key: 'signup-ada', for: 86400 } });
  console.log('queued the signup mail');
} catch (err) {
  if (!(err instanceof GmqError && err.heldBy)) throw err;
  console.log(`the signup mail is job ${err.heldBy} already`);
}
