'use strict';
// The HTTP side of bench/dashboard.sh: logs in to a running dashboard and
//   latency URL...   requests each URL N times (sequentially, keep-alive)
//                    and prints "url p50 p95 p99 max" in milliseconds;
//   open SECONDS     keeps the dashboard "open" as the page does: the
//                    overview, reloaded on the event stream's change
//                    events no more often than the page's own rule
//                    (1 s, and at most 1 % of the time in the database).
// Environment: DASH_URL, DASH_USER, DASH_PASSWORD, BENCH_REQUESTS (200).
const http = require('http');

const base = process.env.DASH_URL;
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
let cookie = null;

function request(method, path, body) {
  return new Promise((resolve, reject) => {
    const data = body ? JSON.stringify(body) : null;
    const req = http.request(base + path, {
      method, agent,
      headers: { ...(cookie ? { Cookie: cookie } : {}), ...(data ? { 'Content-Type': 'application/json' } : {}) },
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const set = res.headers['set-cookie'];
        if (set) cookie = set[0].split(';')[0];
        const text = Buffer.concat(chunks).toString();
        if (res.statusCode !== 200) reject(new Error(`${method} ${path}: ${res.statusCode} ${text}`));
        else resolve(JSON.parse(text));
      });
    });
    req.on('error', reject);
    if (data) req.write(data);
    req.end();
  });
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

async function latency(urls) {
  const n = Number(process.env.BENCH_REQUESTS || 200);
  for (const url of urls) {
    for (let i = 0; i < 5; i++) await request('GET', url);  // warm-up
    const times = [];
    for (let i = 0; i < n; i++) {
      const t0 = process.hrtime.bigint();
      await request('GET', url);
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    times.sort((a, b) => a - b);
    console.log([url, pct(times, 50), pct(times, 95), pct(times, 99), times[times.length - 1]]
      .map((x) => (typeof x === 'number' ? x.toFixed(1) : x)).join(' '));
  }
}

async function open(seconds) {
  let lastTook = 0;
  let lastLoad = 0;
  let timer = null;
  let loads = 0;
  let events = 0;
  const load = async () => {
    timer = null;
    lastLoad = Date.now();
    const r = await request('GET', '/api/queues');
    lastTook = r.took_ms;
    loads++;
  };
  await load();
  const req = http.get(base + '/api/events', { headers: { Cookie: cookie } }, (res) => {
    let buf = '';
    res.on('data', (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const ev = buf.slice(0, i);
        buf = buf.slice(i + 2);
        if (!ev.startsWith('event: change')) continue;
        events++;
        if (timer) continue;
        const wait = Math.max(0, lastLoad + Math.max(1000, lastTook * 100) - Date.now());
        timer = setTimeout(() => load().catch((e) => console.error(e.message)), wait);
      }
    });
  });
  req.on('error', () => {});
  await new Promise((r) => setTimeout(r, seconds * 1000));
  req.destroy();
  clearTimeout(timer);
  console.log(`open ${seconds} s: ${loads} overview loads, ${events} change events, last load ${lastTook} ms in the server`);
}

(async () => {
  await request('POST', '/api/login', { user: process.env.DASH_USER, password: process.env.DASH_PASSWORD });
  const [cmd, ...args] = process.argv.slice(2);
  if (cmd === 'latency') await latency(args);
  else if (cmd === 'open') await open(Number(args[0]));
  else throw new Error('usage: dashboard-client.js latency URL... | open SECONDS');
  agent.destroy();
})().catch((e) => {
  console.error(e.message);
  process.exit(1);
});
