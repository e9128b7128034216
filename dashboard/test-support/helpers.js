'use strict';
// What the dashboard's tests share: the database (a throwaway cluster from
// scripts/test_dashboard.sh), roles with passwords, a running dashboard,
// and an HTTP client with a cookie jar.
//   JQD_SUPER_DSN  superuser connection for setting up data
//   JQD_DSN        what the dashboard gets (postgresql://127.0.0.1:PORT/db)
const { spawn } = require('child_process');
const path = require('path');
const pg = require('pg');

const SUPER_DSN = process.env.JQD_SUPER_DSN;
const DSN = process.env.JQD_DSN;
const noServer = !SUPER_DSN || !DSN ? 'JQD_SUPER_DSN and JQD_DSN are not set (run scripts/test_dashboard.sh)' : false;
const BIN = path.join(__dirname, '..', 'jobqueue-dashboard');

const ROLES = {
  admin: ['jqd_admin', 'admin-secret'],
  monitor: ['jqd_monitor', 'monitor-secret'],
  nobody: ['jqd_nobody', 'nobody-secret'],
};

let superClient = null;
async function sql(text, values) {
  if (!superClient) {
    superClient = new pg.Client({ connectionString: SUPER_DSN });
    await superClient.connect();
  }
  return (await superClient.query(text, values)).rows;
}
async function closeSql() {
  if (superClient) await superClient.end();
  superClient = null;
}

async function setupRoles() {
  for (const [kind, [name, pw]] of Object.entries(ROLES)) {
    await sql(`DO $$ BEGIN
      IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${name}') THEN CREATE ROLE ${name} LOGIN; END IF;
      END $$`);
    await sql(`ALTER ROLE ${name} PASSWORD '${pw}'`);
    if (kind === 'admin') await sql('SELECT jobqueue.jq_grant_admin($1)', [name]);
    if (kind === 'monitor') await sql('SELECT jobqueue.jq_grant_monitor($1)', [name]);
  }
}

let seq = 0;
// A queue of its own for each test, with `dead` dead jobs failed with code.
async function makeQueue(prefix, { dead = 0, code = 'HTTP_503', ready = 0, payload } = {}) {
  const q = `${prefix}_${process.pid}_${++seq}`;
  await sql('SELECT jobqueue.jq_create_queue($1, max_attempts => 1)', [q]);
  const ids = [];
  for (let i = 0; i < dead; i++) {
    ids.push(Number((await sql('SELECT jobqueue.jq_enqueue($1, $2) AS id', [q, payload || { n: i }]))[0].id));
  }
  if (dead) {
    await sql(`SELECT jobqueue.jq_fail(c.id, c.token, $2, 'the gateway said 503')
               FROM jobqueue.jq_claim($1, $3, 'test-worker') c`, [q, code, dead]);
  }
  for (let i = 0; i < ready; i++) await sql('SELECT jobqueue.jq_enqueue($1, $2)', [q, { ready: i }]);
  return { q, ids };
}

// The dashboard as a user runs it; resolves with its port.
function startDashboard(args = []) {
  return new Promise((resolve, reject) => {
    const child = spawn(BIN, ['--listen', '127.0.0.1:0', '--dsn', DSN, '--poll-interval', '1', ...args],
      { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (https?):\/\/[^:]+:(\d+)\//.exec(out);
      if (m && !child.port) {
        child.port = Number(m[2]);
        child.url = `${m[1]}://127.0.0.1:${child.port}`;
        resolve(child);
      }
    });
    child.stderr.on('data', (d) => { err += d; });
    child.on('exit', (code) => { if (!child.port) reject(new Error(`dashboard exited ${code}: ${err}`)); });
    child.stop = () => new Promise((res) => {
      if (child.exitCode !== null) return res();
      child.once('exit', () => res());
      child.kill('SIGTERM');
    });
  });
}

// Run the program and collect how it ends (for the start-up refusals).
function runDashboard(args) {
  return new Promise((resolve) => {
    const child = spawn(BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    child.on('exit', (code) => resolve({ code, out }));
  });
}

class Agent {
  constructor(base) {
    this.base = base;
    this.cookie = null;
    this.csrf = null;
  }

  async request(method, p, { body, csrf = true, headers = {} } = {}) {
    const h = { ...headers };
    if (this.cookie) h.Cookie = this.cookie;
    if (body !== undefined) h['Content-Type'] = 'application/json';
    if (method === 'POST' && csrf && this.csrf) h['X-CSRF-Token'] = this.csrf;
    const res = await fetch(this.base + p, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
    const set = res.headers.get('set-cookie');
    if (set) {
      const m = /^jqd_session=([^;]*)/.exec(set);
      this.cookie = m && m[1] ? `jqd_session=${m[1]}` : null;
      this.setCookie = set;
    }
    const text = await res.text();
    let json = null;
    try { json = JSON.parse(text); } catch { /* not JSON */ }
    return { status: res.status, body: json, text, headers: res.headers };
  }

  get(p, o) { return this.request('GET', p, o); }
  post(p, body = {}, o = {}) { return this.request('POST', p, { ...o, body }); }

  async login(kind) {
    const [user, password] = ROLES[kind];
    const r = await this.post('/api/login', { user, password });
    if (r.status !== 200) throw new Error(`login as ${user}: ${r.status} ${r.text}`);
    this.csrf = r.body.csrf;
    return r;
  }
}

// Wait until fn() returns something truthy (a condition, not a clock).
async function waitFor(fn, what, tries = 400) {
  for (let i = 0; i < tries; i++) {
    const v = await fn();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

module.exports = { sql, closeSql, setupRoles, makeQueue, startDashboard, runDashboard, Agent, ROLES, noServer, waitFor, DSN };
