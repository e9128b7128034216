'use strict';
// The pages in headless Chromium (Debian's chromium, driven by
// playwright-core): each renders with data, the buttons follow the role's
// grants, a replay shows on another page without a reload, and a payload
// with markup in it stays text.  Screenshots of every page go to
// JQD_SCREENSHOTS (default test/screenshots, git-ignored).
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');
const h = require('../test-support/helpers');

const CHROMIUM = process.env.JQD_CHROMIUM || '/usr/bin/chromium';
const SHOTS = process.env.JQD_SCREENSHOTS || path.join(__dirname, 'screenshots');
const skip = h.noServer || (!fs.existsSync(CHROMIUM) && `no ${CHROMIUM}`);

let dash;
let browser;
let profile;
let chrome;
let data;

before(async () => {
  if (skip) return;
  const { chromium } = require('playwright-core');
  await h.setupRoles();
  fs.mkdirSync(SHOTS, { recursive: true });
  // Data for every page: a queue with dead letters of two codes, a hostile payload, groups, a schedule.
  const pfx = `b${process.pid}`;
  const emails = `${pfx}_emails`;
  const reports = `${pfx}_reports`;
  await h.sql('SELECT jobqueue.jq_create_queue($1, max_attempts => 1)', [emails]);
  await h.sql('SELECT jobqueue.jq_create_queue($1, group_concurrency => 1)', [reports]);
  await h.sql(`SELECT jobqueue.jq_enqueue_many($1, ARRAY(SELECT jsonb_build_object('to', 'user' || i || '@example.com')
               FROM generate_series(1, 12) i))`, [emails]);
  const xss = Number((await h.sql(`SELECT jobqueue.jq_enqueue($1, $2) AS id`, [emails,
    { html: '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">' }]))[0].id);
  await h.sql(`SELECT jobqueue.jq_fail(c.id, c.token, CASE WHEN c.id % 2 = 0 THEN 'HTTP_503' ELSE 'BAD_ADDRESS' END,
               'the gateway said no') FROM jobqueue.jq_claim($1, 6, 'worker-a') c`, [emails]);
  await h.sql(`SELECT jobqueue.jq_enqueue($1, jsonb_build_object('month', m), group_key => 'customer-' || (m % 3))
               FROM generate_series(1, 9) m`, [reports]);
  await h.sql(`SELECT jobqueue.jq_schedule($1, $2, '0 3 * * *', timezone => 'Europe/Berlin')`, [`${pfx}_nightly`, reports]);
  const dead = await h.sql(`SELECT id, last_error_code FROM jobqueue.jobs WHERE queue_name = $1 AND status = 'dead' ORDER BY id`, [emails]);
  data = { emails, reports, xss, dead, schedule: `${pfx}_nightly` };

  dash = await h.startDashboard();
  profile = fs.mkdtempSync(path.join(os.tmpdir(), 'jqd-chromium-'));
  // Chromium started here with exactly these flags (playwright's launch()
  // would not take --user-data-dir), and driven over its DevTools protocol.
  chrome = spawn(CHROMIUM, ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync', `--user-data-dir=${profile}`,
    '--remote-debugging-port=0', 'about:blank'], { stdio: ['ignore', 'ignore', 'pipe'] });
  const ws = await new Promise((resolve, reject) => {
    let err = '';
    chrome.stderr.on('data', (d) => {
      err += d;
      const m = /DevTools listening on (ws:\/\/\S+)/.exec(err);
      if (m) resolve(m[1]);
    });
    chrome.on('exit', (code) => reject(new Error(`chromium exited ${code}: ${err}`)));
  });
  browser = await chromium.connectOverCDP(ws);
});

after(async () => {
  if (browser) await browser.close();
  if (chrome && chrome.exitCode === null) {
    const gone = new Promise((r) => chrome.once('exit', r));
    chrome.kill('SIGTERM');
    await gone;
  }
  if (dash) await dash.stop();
  if (profile) fs.rmSync(profile, { recursive: true, force: true });
  await h.closeSql();
});

async function loggedIn(kind, viewport = { width: 1200, height: 800 }, colorScheme = 'light') {
  const context = await browser.newContext({ viewport, colorScheme });
  const page = await context.newPage();
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  await page.goto(dash.url + '/');
  await page.fill('input[name=user]', h.ROLES[kind][0]);
  await page.fill('input[name=password]', h.ROLES[kind][1]);
  await page.click('button[type=submit]');
  await page.waitForSelector('#page-overview');
  return page;
}

const shot = (page, name) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
const deadCell = (page, q) => page.locator(`#queues tr[data-queue="${q}"] .dead-count`);

test('a bad password shows the server\'s message on the login form', { skip }, async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(dash.url + '/');
  await shot(page, '0-login');
  await page.fill('input[name=user]', h.ROLES.admin[0]);
  await page.fill('input[name=password]', 'wrong');
  await page.click('button[type=submit]');
  await page.waitForFunction(() => document.querySelector('#login-error').textContent.length > 0);
  assert.match(await page.textContent('#login-error'), /password authentication failed/);
  const cookies = await context.cookies();
  assert.equal(cookies.length, 0);
  await context.close();
});

test('every page renders with data (admin), screenshots of each', { skip }, async () => {
  const page = await loggedIn('admin');
  const { emails, reports } = data;
  assert.match(await page.textContent('#queues'), new RegExp(emails));
  assert.match(await page.textContent('#queues'), new RegExp(reports));
  assert.equal(await deadCell(page, emails).textContent(), '6');
  // the session cookie is not readable by the page's scripts
  assert.equal(await page.evaluate(() => document.cookie), '');
  const cookie = (await page.context().cookies()).find((c) => c.name === 'jqd_session');
  assert.equal(cookie.httpOnly, true);
  assert.equal(cookie.sameSite, 'Strict');
  await shot(page, '1-overview');

  await page.goto(`${dash.url}/#/queue/${reports}`);
  await page.waitForSelector('#page-queue');
  assert.match(await page.textContent('#page-queue'), /customer-1/);
  assert.match(await page.textContent('#page-queue'), new RegExp(data.schedule));
  assert.ok(await page.isVisible('#pause'));
  await shot(page, '2-queue');

  await page.goto(`${dash.url}/#/jobs?queue=${emails}&status=dead`);
  await page.waitForSelector('#jobs');
  assert.equal(await page.locator('#jobs tbody tr').count(), 6);
  assert.match(await page.textContent('#jobs'), /HTTP_503/);
  await shot(page, '3-jobs');

  const deadId = data.dead[0].id;
  await page.goto(`${dash.url}/#/job/${deadId}`);
  await page.waitForSelector('#page-job');
  assert.equal(await page.textContent('#job-status'), 'dead');
  assert.match(await page.textContent('#timeline'), new RegExp(data.dead[0].last_error_code));
  assert.match(await page.textContent('#timeline'), /worker-a/);
  assert.ok(await page.isVisible('#retry'));
  await shot(page, '4-job');

  await page.goto(`${dash.url}/#/dead?queue=${emails}`);
  await page.waitForSelector('#dead-groups');
  assert.match(await page.textContent('#dead-groups'), /HTTP_503/);
  assert.match(await page.textContent('#dead-groups'), /BAD_ADDRESS/);
  assert.equal(await page.locator('#dead-groups .replay-group').count(), 2);
  await shot(page, '5-dead-letters');

  await page.goto(`${dash.url}/#/schedules`);
  await page.waitForSelector('#schedules');
  assert.match(await page.textContent('#schedules'), new RegExp(data.schedule));
  assert.match(await page.textContent('#schedules'), /every day at 03:00/);
  await shot(page, '6-schedules');

  await page.goto(`${dash.url}/#/workers`);
  await page.waitForSelector('#worker-status');
  assert.match(await page.textContent('#tasks'), /reap/);
  await shot(page, '7-workers');
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test('the monitor role sees the dead letters but has no replay, cancel or pause button', { skip }, async () => {
  const page = await loggedIn('monitor');
  await page.goto(`${dash.url}/#/dead?queue=${data.emails}`);
  await page.waitForSelector('#dead-groups');
  assert.match(await page.textContent('#dead-groups'), /HTTP_503/);
  assert.equal(await page.locator('button.replay-group, button.replay-one').count(), 0);
  await page.goto(`${dash.url}/#/job/${data.dead[1].id}?queue=${data.emails}`);
  await page.waitForSelector('#page-job');
  assert.equal(await page.textContent('#job-status'), 'dead');
  assert.equal(await page.locator('#retry, #cancel').count(), 0);
  await page.goto(`${dash.url}/#/queue/${data.emails}`);
  await page.waitForSelector('#page-queue');
  assert.equal(await page.locator('#pause, #resume').count(), 0);
  await shot(page, '8-monitor-dead-letters');
  await page.context().close();
});

test('an admin replays dead letters and the overview\'s dead count drops without a reload', { skip }, async () => {
  const watcher = await loggedIn('admin');
  await watcher.evaluate(() => { window.__sameDocument = true; });
  assert.equal(await deadCell(watcher, data.emails).textContent(), '6');

  const actor = await loggedIn('admin');
  await actor.goto(`${dash.url}/#/dead?queue=${data.emails}`);
  await actor.waitForSelector('#dead-groups');
  await actor.click('#dead-groups tr[data-code="HTTP_503"] .replay-group');
  await actor.click('dialog.confirm button[data-ok]');
  await actor.waitForFunction(() => document.querySelector('#toast').textContent.startsWith('replayed'));
  assert.equal(await actor.textContent('#toast'), 'replayed 3 jobs');

  await watcher.waitForFunction((q) => {
    const c = document.querySelector(`#queues tr[data-queue="${q}"] .dead-count`);
    return c && c.textContent === '3';
  }, data.emails, { timeout: 20000 });
  assert.equal(await watcher.evaluate(() => window.__sameDocument), true, 'the page was not reloaded');
  await watcher.context().close();
  await actor.context().close();
});

test('a <script> payload is shown as text and does not run', { skip }, async () => {
  const page = await loggedIn('admin');
  await page.goto(`${dash.url}/#/job/${data.xss}`);
  await page.waitForSelector('#payload');
  assert.match(await page.textContent('#payload'), /<script>window.__pwned = 1<\/script>/);
  await page.goto(`${dash.url}/#/jobs?queue=${data.emails}`);
  await page.waitForSelector('#jobs');
  assert.match(await page.textContent('#jobs'), /<script>/);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.equal(await page.locator('#main script, #main img').count(), 0);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test('readable on a phone, in dark mode', { skip }, async () => {
  const page = await loggedIn('admin', { width: 390, height: 844 }, 'dark');
  const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.equal(bg, 'rgb(17, 20, 24)');
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(overflow <= 0, `the page is ${overflow} px wider than the phone`);
  await shot(page, '9-phone-dark');
  await page.context().close();
});
