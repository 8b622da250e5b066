// Print how the jobs of a topic end, as they end, until Ctrl-C: a stream of
// gmq's events that connects again by itself, resuming after its last
// event. The topic needs events = true (conf.ini's [topic.exports], or PUT
// /api/v1/topics/exports/config {"events": true}):
// GMQ_URL=http://127.0.0.1:8000 node examples/events.js
import { Client, LOST } from 'gmq-client';

const client = new Client({ url: process.env.GMQ_URL, token: process.env.GMQ_TOKEN });
const topic = process.env.GMQ_TOPIC ?? 'exports';

// Ctrl-C (or SIGTERM) aborts the stream, and the loop ends.
const stop = new AbortController();
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => stop.abort());

const events = client.events(topic, {
  types: ['completed', 'dead'],
  signal: stop.signal,
  onReady: () => console.log(`watching ${topic}`), // each time it is connected
});
for await (const event of events) {
  if (event.type === LOST) console.log(`some events were missed: ${event.error}`);
  else if (event.type === 'completed') console.log(`job ${event.id} completed: ${JSON.stringify(event.result)}`);
  else console.log(`job ${event.id} died: ${event.error}`);
}
console.log('stopped');
