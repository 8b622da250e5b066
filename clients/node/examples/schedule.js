// Cron schedules: GMQ_URL=http://127.0.0.1:8000 node examples/schedule.js makes (or
// updates) a daily report at 9:00 Berlin time, fires it once now, and lists
// every schedule (GMQ_TOKEN: the broker's [web] token, if any).
import { Client, GmqError } from 'gmq-client';

const client = new Client({ url: process.env.GMQ_URL, token: process.env.GMQ_TOKEN });

// Cron's five fields (or six, seconds first), read in tz. Overlap skip: no
// new report while the last one still waits or is being made.
const report = await client.setSchedule('daily-report', {
  cron: '0 9 * * *',
  tz: 'Europe/Berlin',
  overlap: 'skip',
  job: { topic: 'reports', body: 'daily', ttr: 300 },
});
console.log(`daily-report fires next at ${report.next}`);

// Fire now: its job is pushed at once; its next fire stays.
try {
  const pushed = await client.fireSchedule('daily-report');
  console.log(`fired daily-report now: job ${pushed.id}`);
} catch (err) {
  if (!(err instanceof GmqError && err.status === 409)) throw err;
  console.log('the last report still waits');
}

for (const s of await client.schedules()) {
  console.log(`${s.name}: '${s.cron}' in ${s.tz}, ${s.fires} fires, ${s.skips} skips, last job ${s.last_id ?? 'none'}`);
}
