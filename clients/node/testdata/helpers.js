// What the tests in test/ share: the broker they run against (GMQ_URL, set
// by node_test.go), unique topic names, a stub broker, child processes.
// Not under test/, so that node --test does not take it for a test file.

import { spawn } from 'node:child_process';
import http from 'node:http';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'gmq-client';

/** The live broker's URL, and its token when it has one. */
export const url = process.env.GMQ_URL;
export const token = process.env.GMQ_TOKEN || undefined;

/** noBroker is node:test's skip reason for a test that needs a live broker. */
export const noBroker = url ? false : 'GMQ_URL is not set (go test ./clients/node/ starts a broker)';

/** client is a Client of the live broker. */
export function client(options = {}) {
  return new Client({ url, token, ...options });
}

let topics = 0;
/** topic is a topic name no other test of this run uses. */
export function topic(name) {
  topics++;
  return `node-${name}-${process.pid}-${topics}`;
}

/** elapsed runs call and returns its result and how long it took, in ms. */
export async function elapsed(call) {
  const start = performance.now();
  const result = await call();
  return { result, ms: performance.now() - start };
}

/** until polls check every 50 ms until it returns something truthy, for at most ms. */
export async function until(check, ms = 5000, what = 'condition') {
  const end = Date.now() + ms;
  for (;;) {
    const got = await check();
    if (got) return got;
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(50);
  }
}

/**
 * stub is a tiny HTTP server standing in for gmq: the n-th request gets
 * answers[n] (the last one again past the end): {status, body, headers,
 * after (ms to wait first), hang (never answer)}. seen holds the requests.
 */
export async function stub(answers) {
  const seen = [];
  const server = http.createServer(async (req, res) => {
    let text = '';
    for await (const chunk of req) text += chunk;
    seen.push({ method: req.method, url: req.url, headers: req.headers, body: text ? JSON.parse(text) : undefined });
    const a = answers[Math.min(seen.length, answers.length) - 1];
    if (a.hang) return;
    if (a.after) await sleep(a.after);
    const body = typeof a.body === 'string' ? a.body : a.body === undefined ? '' : JSON.stringify(a.body);
    res.writeHead(a.status, { 'Content-Type': typeof a.body === 'string' ? 'text/plain' : 'application/json', ...a.headers });
    res.end(body);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    seen,
    close() {
      server.closeAllConnections();
      server.close();
    },
  };
}

/**
 * run starts `node file` with env added to this process's, and reads its
 * output by lines: waitFor(regexp) resolves with the first line that
 * matches, exit with {code, signal, out} once it ended.
 */
export function run(file, env = {}) {
  const child = spawn(process.execPath, [file], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines = [];
  const waiting = new Set();
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(line);
    for (const w of waiting) w(line);
  });
  const exit = new Promise((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, out: lines.join('\n'), stderr })),
  );
  return {
    child,
    lines,
    exit,
    waitFor(re, ms = 10000) {
      const found = lines.find((l) => re.test(l));
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting.delete(check);
          reject(new Error(`${file}: no line matching ${re} within ${ms} ms:\n${lines.join('\n')}\n${stderr}`));
        }, ms);
        const check = (line) => {
          if (!re.test(line)) return;
          clearTimeout(timer);
          waiting.delete(check);
          resolve(line);
        };
        waiting.add(check);
      });
    },
    /** stop kills the process if it is still running (a test's cleanup). */
    stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}
