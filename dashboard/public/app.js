'use strict';
// The jobqueue dashboard: one page, hash routes, everything from the JSON
// API.  Text from the database only ever goes into the page as text
// (textContent, never innerHTML), so a payload with markup shows as markup.
(() => {
  const $ = (sel) => document.querySelector(sel);
  let me = null;          // { user, csrf, privileges, features, live }
  let events = null;      // EventSource
  let livePaused = false;
  let lastTook = 0;       // server time of the current page's last load (ms)
  let lastLoad = 0;
  let refreshTimer = null;
  let current = null;     // { render, queues (the queues the page shows, null: any) }

  // ---- DOM helpers -------------------------------------------------------
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v == null || v === false) continue;
      if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else if (k === 'class') el.className = v;
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c == null || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }
  const link = (href, text, attrs) => h('a', { href, ...attrs }, text);
  function table(headers, rows, attrs) {
    return h('div', { class: 'table-wrap' }, h('table', attrs,
      h('thead', {}, h('tr', {}, headers.map((x) => (typeof x === 'string'
        ? h('th', {}, x) : h('th', { class: x.cls }, x.text))))),
      h('tbody', {}, rows)));
  }
  const num = (v) => (v == null ? '–' : Number(v).toLocaleString('en'));
  // a queue's count: above the bound it was counted to, "10,000+"
  const cnt = (q, v) => (q.count_limit && v > q.count_limit ? `${num(q.count_limit)}+` : num(v));
  function ago(seconds) {
    if (seconds == null) return '–';
    const s = Math.abs(seconds);
    if (s < 1) return `${Math.round(s * 1000)} ms`;
    if (s < 90) return `${Math.round(s)} s`;
    if (s < 5400) return `${Math.round(s / 60)} min`;
    if (s < 172800) return `${(s / 3600).toFixed(1)} h`;
    return `${Math.round(s / 86400)} d`;
  }
  const since = (t) => (t ? ago((Date.now() - new Date(t)) / 1000) : '–');
  function when(t) {
    if (!t) return '–';
    const d = new Date(t);
    const rel = (d - Date.now()) / 1000;
    return `${d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z')} (${rel >= 0 ? 'in ' + ago(rel) : ago(rel) + ' ago'})`;
  }
  function toast(msg) {
    const t = $('#toast');
    t.textContent = msg;
    t.classList.add('show');
    clearTimeout(toast.timer);
    toast.timer = setTimeout(() => t.classList.remove('show'), 4000);
  }
  function confirmDialog(text, okLabel) {
    return new Promise((resolve) => {
      const dlg = h('dialog', { class: 'confirm' },
        h('p', {}, text),
        h('div', { class: 'actions' },
          h('button', { type: 'button', class: 'danger', 'data-ok': true, onclick: () => { dlg.close(); resolve(true); } }, okLabel),
          h('button', { type: 'button', onclick: () => { dlg.close(); resolve(false); } }, 'Cancel')));
      dlg.addEventListener('close', () => { dlg.remove(); resolve(false); });
      document.body.append(dlg);
      dlg.showModal();
    });
  }
  function sparkline(values, label) {
    const pts = (values || []).map((v) => (v == null ? 0 : v));
    if (pts.length < 2) return h('span', { class: 'muted' }, '…');
    const w = 90, hgt = 22, max = Math.max(...pts, 1e-9);
    const ns = 'http://www.w3.org/2000/svg';
    const svg = document.createElementNS(ns, 'svg');
    svg.setAttribute('class', 'spark');
    svg.setAttribute('width', w);
    svg.setAttribute('height', hgt);
    svg.setAttribute('role', 'img');
    svg.setAttribute('aria-label', label);
    const pl = document.createElementNS(ns, 'polyline');
    pl.setAttribute('points', pts.map((v, i) => `${(i / (pts.length - 1)) * w},${hgt - 1 - (v / max) * (hgt - 2)}`).join(' '));
    svg.append(pl);
    const title = document.createElementNS(ns, 'title');
    title.textContent = label;
    svg.append(title);
    return svg;
  }

  // ---- API ----------------------------------------------------------------
  class ApiError extends Error {
    constructor(status, body) {
      super(body.error || `HTTP ${status}`);
      this.status = status;
      this.body = body;
    }
  }
  async function api(method, path, body) {
    const opts = { method, headers: {}, credentials: 'same-origin' };
    if (method !== 'GET') {
      opts.headers['X-CSRF-Token'] = me ? me.csrf : '';
      opts.headers['Content-Type'] = 'application/json';
      opts.body = JSON.stringify(body || {});
    }
    const res = await fetch(path, opts);
    const data = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
    if (res.status === 401 && path !== '/api/login') {
      showLogin('Your session ended; log in again.');
      throw new ApiError(401, data);
    }
    if (!res.ok) throw new ApiError(res.status, data);
    if (typeof data.took_ms === 'number') lastTook = data.took_ms;
    return data;
  }
  const qs = (o) => {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(o)) if (v != null && v !== '') p.set(k, v);
    const s = p.toString();
    return s ? `?${s}` : '';
  };
  const can = (k) => !!(me && me.privileges[k]);

  // ---- login --------------------------------------------------------------
  function showLogin(message) {
    me = null;
    stopEvents();
    $('#top').hidden = true;
    const err = h('p', { class: 'error', id: 'login-error' }, message || '');
    const form = h('form', { class: 'login', id: 'login' },
      h('h1', {}, 'jobqueue'),
      h('p', { class: 'muted' }, 'Log in as a PostgreSQL role. What you may see and do is what the role is granted.'),
      h('label', {}, 'Role', h('input', { name: 'user', autocomplete: 'username', required: true, autofocus: true })),
      h('label', {}, 'Password', h('input', { name: 'password', type: 'password', autocomplete: 'current-password' })),
      err,
      h('button', { class: 'primary', type: 'submit' }, 'Log in'));
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      err.textContent = '';
      try {
        me = await api('POST', '/api/login', { user: form.user.value, password: form.password.value });
        start();
      } catch (x) {
        err.textContent = x.message;
      }
    });
    $('#main').replaceChildren(form);
  }

  async function start() {
    $('#top').hidden = false;
    $('#who').textContent = me.user;
    startEvents();
    route();
  }

  $('#logout').addEventListener('click', async () => {
    try { await api('POST', '/api/logout'); } catch { /* ended anyway */ }
    showLogin('Logged out.');
  });
  $('#live').addEventListener('click', () => {
    livePaused = !livePaused;
    const b = $('#live');
    b.textContent = livePaused ? 'paused' : 'live';
    b.classList.toggle('paused', livePaused);
    if (livePaused) stopEvents(); else { startEvents(); refresh(); }
  });

  // ---- live updates -------------------------------------------------------
  function startEvents() {
    if (events || livePaused) return;
    events = new EventSource('/api/events');
    events.addEventListener('change', (e) => {
      const data = JSON.parse(e.data);
      if (!current) return;
      if (data.queues && current.queues && !data.queues.some((q) => current.queues.includes(q))) return;
      scheduleRefresh();
    });
    events.addEventListener('logout', () => showLogin('Your session ended; log in again.'));
    events.addEventListener('hello', (e) => { $('#live').title = `live updates: ${JSON.parse(e.data).live}`; });
  }
  function stopEvents() {
    if (events) events.close();
    events = null;
  }
  // At most one reload per second, and never more than 1 % of the time in
  // the database: a page that took 50 ms reloads at most every 5 s.
  function scheduleRefresh() {
    if (refreshTimer || livePaused) return;
    const gap = Math.max(1000, lastTook * 100);
    const wait = Math.max(0, lastLoad + gap - Date.now());
    refreshTimer = setTimeout(() => { refreshTimer = null; refresh(); }, wait);
  }
  async function refresh() {
    if (!current || !me) return;
    lastLoad = Date.now();
    try {
      await current.render(true);
    } catch (x) {
      if (x.status !== 401) toast(x.message);
    }
  }

  // ---- routing ------------------------------------------------------------
  function parseHash() {
    const raw = location.hash.replace(/^#/, '') || '/';
    const [path, query] = raw.split('?');
    return { parts: path.split('/').filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(query || '') };
  }
  const PAGES = { '': overview, queue: queuePage, jobs: jobsPage, job: jobPage, dead: deadPage, schedules: schedulesPage, workers: workersPage };
  async function route() {
    if (!me) return;
    const { parts, params } = parseHash();
    const page = PAGES[parts[0] || ''];
    for (const a of document.querySelectorAll('#nav a')) {
      a.classList.toggle('here', (a.getAttribute('href').slice(2) || '') === (parts[0] || ''));
    }
    const main = $('#main');
    if (!page) {
      main.replaceChildren(h('p', {}, 'No such page. ', link('#/', 'Overview')));
      return;
    }
    current = null;
    clearTimeout(refreshTimer);
    refreshTimer = null;
    const ctx = { parts, params, main };
    const render = async (again) => {
      const node = await page(ctx, again);
      if (node && current && current.render === render) {
        const y = window.scrollY;
        main.replaceChildren(node);
        if (again) window.scrollTo(0, y);
      }
    };
    current = { render, queues: null };
    ctx.watch = (queues) => { if (current && current.render === render) current.queues = queues; };
    main.replaceChildren(h('p', { class: 'muted' }, 'Loading…'));
    lastLoad = Date.now();
    try {
      await render(false);
    } catch (x) {
      if (x.status === 401) return;
      main.replaceChildren(h('h1', {}, 'Not available'), h('p', { class: 'error', id: 'page-error' }, x.message),
        x.status === 403 ? h('p', { class: 'muted' }, `The role ${me.user} is not granted this. `,
          'An administrator can grant it (jq_grant_monitor, jq_grant_admin or GRANT).') : null);
    }
  }
  window.addEventListener('hashchange', route);

  // ---- pages --------------------------------------------------------------
  function errorBox(x) {
    return h('p', { class: 'error' }, x.message);
  }

  async function overview(ctx) {
    const data = await api('GET', '/api/queues');
    ctx.watch(null);
    const series = data.series.queues;
    const rows = data.queues.map((q) => {
      const s = series[q.queue_name];
      return h('tr', { 'data-queue': q.queue_name },
        h('td', {}, link(`#/queue/${encodeURIComponent(q.queue_name)}`, q.queue_name),
          q.paused ? h('span', { class: 'badge warn' }, 'paused') : null,
          q.stalled ? h('span', { class: 'badge bad', title: 'ready jobs, and nobody claimed any in the last minute' }, 'nobody claiming') : null,
          q.groups_blocked ? h('span', { class: 'badge bad' }, `${q.groups_blocked} groups blocked`) : null),
        h('td', { class: 'num' }, cnt(q, q.ready)),
        h('td', { class: 'num' }, cnt(q, q.running)),
        h('td', { class: 'num hide-narrow' }, cnt(q, q.scheduled)),
        h('td', { class: 'num hide-narrow' }, cnt(q, q.waiting)),
        h('td', { class: 'num' }, q.dead ? link(`#/dead?queue=${encodeURIComponent(q.queue_name)}`, cnt(q, q.dead), { class: 'dead-count' }) : h('span', { class: 'dead-count none' }, '0')),
        h('td', { class: 'num' }, ago(q.oldest_ready_s)),
        h('td', { class: 'hide-narrow' }, s ? sparkline(s.completed, `${q.queue_name}: jobs completed per second`) : '–'),
        h('td', { class: 'hide-narrow' }, s ? sparkline(s.wait_p99.some((x) => x != null) ? s.wait_p99 : s.claim_ms,
          s.wait_p99.some((x) => x != null) ? `${q.queue_name}: p99 wait (s)` : `${q.queue_name}: mean claim time (ms)`) : '–'));
    });
    return h('section', { id: 'page-overview' },
      h('h1', {}, 'Queues'),
      data.queues.length ? table(['queue', { text: 'ready', cls: 'num' }, { text: 'running', cls: 'num' },
        { text: 'scheduled / backing off', cls: 'num hide-narrow' }, { text: 'waiting for deps', cls: 'num hide-narrow' },
        { text: 'dead', cls: 'num' }, { text: 'oldest claimable', cls: 'num' },
        { text: 'throughput', cls: 'hide-narrow' }, { text: 'latency', cls: 'hide-narrow' }], rows, { id: 'queues' })
        : h('p', { class: 'muted' }, 'No queues yet.'),
      h('p', { class: 'muted' }, `Counts from jobqueue.jq_queue_counts (exact up to 1,000) or queue_stats; sparklines from the event counters sampled every `,
        `${Math.round(me.poll_interval_ms / 1000 || 5)} s since you logged in. Live updates: ${me.live}.`));
  }

  async function queuePage(ctx) {
    const name = ctx.parts[1];
    const d = await api('GET', `/api/queues/${encodeURIComponent(name)}`);
    ctx.watch([name]);
    const q = d.queue;
    const actions = h('div', { class: 'actions' },
      can('pause') && !q.paused ? h('button', { type: 'button', id: 'pause', onclick: async () => {
        if (!await confirmDialog(`Pause queue ${name}? Workers get no more of its jobs until it is resumed.`, 'Pause')) return;
        try { await api('POST', `/api/queues/${encodeURIComponent(name)}/pause`); toast(`${name} paused`); refresh(); } catch (x) { toast(x.message); }
      } }, 'Pause') : null,
      can('resume') && q.paused ? h('button', { type: 'button', id: 'resume', onclick: async () => {
        try { await api('POST', `/api/queues/${encodeURIComponent(name)}/resume`); toast(`${name} resumed`); refresh(); } catch (x) { toast(x.message); }
      } }, 'Resume') : null,
      link(`#/jobs?queue=${encodeURIComponent(name)}`, 'Jobs', { class: 'button' }),
      q.dead ? link(`#/dead?queue=${encodeURIComponent(name)}`, 'Dead letters', { class: 'button' }) : null);
    const stat = (k, v) => [h('dt', {}, k), h('dd', {}, v)];
    const policy = d.policy ? Object.entries(d.policy).filter(([k]) => k !== 'queue_name')
      .map(([k, v]) => stat(k.replace(/_/g, ' '), v == null ? '–' : String(v)))
      : [h('dd', { class: 'muted' }, 'The policy is in jobqueue.queues, which this role may not read.')];
    const rl = d.rate_limit;
    return h('section', { id: 'page-queue' },
      h('h1', {}, `Queue ${name}`, q.paused ? h('span', { class: 'badge warn' }, 'paused') : null,
        q.stalled ? h('span', { class: 'badge bad' }, 'backlog, nobody claiming') : null),
      actions,
      h('div', { class: 'cards' },
        h('dl', { class: 'card' }, stat('ready', cnt(q, q.ready)), stat('running', cnt(q, q.running)),
          stat('expiring soon', cnt(q, q.expiring_soon)), stat('scheduled / backing off', cnt(q, q.scheduled)),
          stat('waiting for dependencies', cnt(q, q.waiting))),
        h('dl', { class: 'card' }, stat('dead', cnt(q, q.dead)), stat('succeeded (kept)', num(q.succeeded)),
          stat('cancelled', num(q.cancelled)), stat('oldest claimable', ago(q.oldest_ready_s)),
          stat('oldest dead', ago(q.oldest_dead_s))),
        h('dl', { class: 'card' }, h('dt', {}, h('strong', {}, 'rate limit')),
          rl ? [stat('jobs per second', rl.rate_limit), stat('burst', rl.rate_burst),
            stat('tokens now', Number(rl.tokens).toFixed(2)), stat('claims cut short', num(rl.claims_limited)),
            stat('pressure', rl.jobs_claimed ? `${Math.round(100 * rl.claims_limited / (rl.claims_limited + rl.jobs_claimed))} % of claims limited` : '–')]
            : h('dd', { class: 'muted' }, d.rate_limit === null && can('rate_limits') ? 'no rate limit (or none used yet)' : 'not visible to this role')),
        h('dl', { class: 'card' }, h('dt', {}, h('strong', {}, 'policy')), policy)),
      h('h2', {}, 'Groups'),
      d.groups == null ? h('p', { class: 'muted' }, 'Not visible to this role (jq_group_stats).')
        : d.groups.length ? table(['group', { text: 'ready', cls: 'num' }, { text: 'running', cls: 'num' },
          { text: 'scheduled', cls: 'num' }, { text: 'dead', cls: 'num' }, 'blocked', { text: 'oldest ready', cls: 'num' }],
        d.groups.map((g) => h('tr', {},
          h('td', {}, g.group_key == null ? h('em', {}, 'no group') : link(`#/jobs?${new URLSearchParams({ queue: name, group: g.group_key })}`, g.group_key)),
          h('td', { class: 'num' }, num(g.ready)), h('td', { class: 'num' }, num(g.running)),
          h('td', { class: 'num' }, num(g.scheduled)), h('td', { class: 'num' }, num(g.dead)),
          h('td', {}, g.blocked ? link(`#/jobs?${new URLSearchParams({ queue: name, group: g.group_key, status: 'dead' })}`, 'blocked by a dead job', { class: 'badge bad' }) : ''),
          h('td', { class: 'num' }, ago(g.oldest_ready_s)))))
          : h('p', { class: 'muted' }, 'No groups with unfinished jobs.'),
      h('h2', {}, 'Schedules feeding it'),
      d.schedules == null ? h('p', { class: 'muted' }, 'Not visible to this role.')
        : d.schedules.length ? scheduleTable(d.schedules) : h('p', { class: 'muted' }, 'None.'));
  }

  async function jobsPage(ctx) {
    const p = ctx.params;
    let queues = [];
    try { queues = (await api('GET', '/api/queues')).queues.map((q) => q.queue_name); } catch { /* the list still works */ }
    const queue = p.get('queue') || queues[0] || '';
    const f = { queue, status: p.get('status'), group: p.get('group'), error_code: p.get('error_code'),
      since: p.get('since'), before_id: p.get('before_id'), before_finished_at: p.get('before_finished_at'),
      limit: p.get('limit') };
    ctx.watch(queue ? [queue] : null);
    const form = h('form', { class: 'filters', id: 'filters' },
      h('label', {}, 'queue', h('select', { name: 'queue' }, queues.map((n) => h('option', { value: n, selected: n === queue }, n)))),
      h('label', {}, 'status', h('select', { name: 'status' }, h('option', { value: '' }, 'any'),
        ['waiting', 'pending', 'running', 'succeeded', 'dead', 'cancelled'].map((s) => h('option', { value: s, selected: s === f.status }, s)))),
      h('label', {}, 'group', h('input', { name: 'group', value: f.group || '', size: 12 })),
      h('label', {}, 'error code', h('input', { name: 'error_code', value: f.error_code || '', size: 12 })),
      h('label', {}, 'created since', h('input', { name: 'since', type: 'datetime-local', value: f.since ? f.since.slice(0, 16) : '' })),
      h('button', { type: 'submit', class: 'primary' }, 'Show'));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const o = {};
      for (const k of ['queue', 'status', 'group', 'error_code']) o[k] = form[k].value;
      if (form.since.value) o.since = new Date(form.since.value).toISOString();
      location.hash = `#/jobs${qs(o)}`;
    });
    if (!queue) return h('section', { id: 'page-jobs' }, h('h1', {}, 'Jobs'), form, h('p', { class: 'muted' }, 'No queue to show.'));
    let data;
    try {
      data = await api('GET', `/api/jobs${qs(f)}`);
    } catch (x) {
      return h('section', { id: 'page-jobs' }, h('h1', {}, 'Jobs'), form, errorBox(x));
    }
    const rows = data.jobs.map((j) => h('tr', { 'data-job': j.id },
      h('td', { class: 'num' }, link(`#/job/${j.id}?queue=${encodeURIComponent(j.queue_name)}`, j.id)),
      h('td', {}, j.status, j.last_error_code ? h('span', { class: 'badge bad' }, j.last_error_code) : null),
      h('td', { class: 'num' }, `${j.attempt ?? '–'}/${j.max_attempts ?? '–'}`),
      h('td', { class: 'hide-narrow' }, j.group_key || ''),
      h('td', {}, since(j.created_at), ' ago'),
      h('td', { class: 'hide-narrow' }, j.payload == null ? h('span', { class: 'muted' }, 'hidden') : JSON.stringify(j.payload).slice(0, 80))));
    const next = data.next_before_id
      ? link(`#/jobs${qs({ ...f, before_id: data.next_before_id, before_finished_at: data.next_before_finished_at })}`,
        'Older →', { class: 'button', id: 'older' }) : null;
    return h('section', { id: 'page-jobs' }, h('h1', {}, `Jobs of ${queue}`), form,
      data.jobs.length ? table([{ text: 'id', cls: 'num' }, 'status', { text: 'attempt', cls: 'num' },
        { text: 'group', cls: 'hide-narrow' }, 'created', { text: 'payload', cls: 'hide-narrow' }], rows, { id: 'jobs' })
        : h('p', { class: 'muted' }, 'No jobs match.'),
      h('div', { class: 'actions' }, f.before_id ? link(`#/jobs${qs({ ...f, before_id: null, before_finished_at: null })}`, '← First', { class: 'button' }) : null, next),
      h('p', { class: 'muted' }, `Unfinished jobs newest first, then finished ones most recently finished first, from ${data.source}. The address of this page can be shared.`));
  }

  async function jobPage(ctx) {
    const id = ctx.parts[1];
    const d = await api('GET', `/api/jobs/${encodeURIComponent(id)}${qs({ queue: ctx.params.get('queue') })}`);
    const j = d.job;
    ctx.watch([j.queue_name]);
    const field = (k, v) => [h('dt', {}, k), h('dd', {}, v == null || v === '' ? '–' : v)];
    const jsonBlock = (label, v, id2) => [h('h2', {}, label),
      v === undefined ? h('p', { class: 'muted' }, 'not available') :
        v === null ? h('p', { class: 'muted' }, 'none (or not readable by this role)') : h('pre', { id: id2 }, JSON.stringify(v, null, 2))];
    const act = async (what, label) => {
      if (!await confirmDialog(`${label} job ${j.id}?`, label)) return;
      try {
        const r = await api('POST', `/api/jobs/${j.id}/${what}`, { queue: j.queue_name });
        toast(r.retried || r.cancelled ? `job ${j.id}: done` : `job ${j.id} was not in a state to ${what}`);
        refresh();
      } catch (x) { toast(x.message); }
    };
    const errors = Array.isArray(j.errors) ? j.errors : null;
    const idLinks = (ids) => (ids && ids.length ? ids.map((x, i) => [i ? ', ' : '', link(`#/job/${x}`, x)]) : '–');
    return h('section', { id: 'page-job' },
      h('h1', {}, `Job ${j.id} `, h('span', { class: `badge ${j.status === 'dead' ? 'bad' : j.status === 'succeeded' ? 'good' : ''}`, id: 'job-status' }, j.status)),
      h('div', { class: 'actions' },
        can('retry') && (j.status === 'dead' || j.status === 'cancelled') ? h('button', { type: 'button', id: 'retry', class: 'primary', onclick: () => act('retry', 'Replay') }, 'Replay') : null,
        can('cancel') && (j.status === 'pending' || j.status === 'running' || j.status === 'waiting') ? h('button', { type: 'button', id: 'cancel', class: 'danger', onclick: () => act('cancel', 'Cancel') }, 'Cancel job') : null),
      h('div', { class: 'cards' },
        h('dl', { class: 'card' }, field('queue', link(`#/queue/${encodeURIComponent(j.queue_name)}`, j.queue_name)),
          field('attempt', `${j.attempt ?? '–'} of ${j.max_attempts ?? '–'}`), field('priority', j.priority),
          field('group', j.group_key), field('idempotency key', j.idempotency_key)),
        h('dl', { class: 'card' }, field('created', when(j.created_at)), field('available', when(j.available_at)),
          field('started', when(j.started_at)), field('finished', when(j.finished_at))),
        h('dl', { class: 'card' }, field('lease owner', j.lease_owner), field('lease token', j.lease_token),
          field('lease expires', when(j.lease_expires_at))),
        h('dl', { class: 'card' }, field('waits for', idLinks(j.depends_on)), field('jobs waiting for it', idLinks(j.dependents)))),
      jsonBlock('Payload', j.payload, 'payload'),
      jsonBlock('Result', j.result, 'result'),
      jsonBlock('Progress', j.progress, 'progress'),
      h('h2', {}, 'Attempts and errors'),
      errors == null ? h('p', { class: 'muted' }, 'The history is not readable by this role.')
        : errors.length ? h('ol', { class: 'timeline', id: 'timeline' }, errors.map((e) => h('li', { class: e.event === 'replay' ? 'replay' : '' },
          h('strong', {}, e.event === 'replay' ? `replayed by ${e.by || '?'}` : `attempt ${e.attempt ?? '?'}: ${e.code || ''}`),
          ' ', h('span', { class: 'muted' }, when(e.at)),
          e.owner ? h('div', { class: 'muted' }, `owner ${e.owner}${e.token != null ? `, token ${e.token}` : ''}`) : null,
          e.message ? h('div', {}, e.message) : null,
          e.stack ? h('pre', {}, e.stack) : null,
          e.detail ? h('pre', {}, JSON.stringify(e.detail, null, 2)) : null)))
          : h('p', { class: 'muted' }, 'No failures.'));
  }

  async function deadPage(ctx) {
    const all = (await api('GET', '/api/queues')).queues;
    const withDead = all.filter((q) => q.dead > 0);
    const queue = ctx.params.get('queue') || (withDead[0] && withDead[0].queue_name) || '';
    ctx.watch(queue ? [queue] : null);
    const picker = h('form', { class: 'filters' }, h('label', {}, 'queue', h('select', { name: 'queue', onchange: (e) => { location.hash = `#/dead${qs({ queue: e.target.value })}`; } },
      all.map((q) => h('option', { value: q.queue_name, selected: q.queue_name === queue }, `${q.queue_name} (${cnt(q, q.dead)} dead)`)))));
    if (!queue) return h('section', { id: 'page-dead' }, h('h1', {}, 'Dead letters'), h('p', { class: 'muted' }, 'No dead jobs in any queue.'));
    let d;
    try {
      d = await api('GET', `/api/dead-letters${qs({ queue })}`);
    } catch (x) {
      return h('section', { id: 'page-dead' }, h('h1', {}, 'Dead letters'), picker, errorBox(x));
    }
    const replayGroup = async (g) => {
      const n = Number(g.count);
      if (!await confirmDialog(`Replay the ${num(n)} dead jobs of ${queue} with error ${g.error_code ?? '(none)'}? They become pending at once.`, 'Replay')) return;
      let total = 0;
      try {
        // In batches of 1000, until a batch comes back short.
        for (;;) {
          const r = await api('POST', `/api/queues/${encodeURIComponent(queue)}/retry-dead`, { error_code: g.error_code, max_jobs: 1000 });
          total += r.replayed;
          if (r.replayed < 1000) break;
        }
        toast(`replayed ${num(total)} jobs`);
      } catch (x) { toast(`${x.message} (replayed ${total} before that)`); }
      refresh();
    };
    const replayOne = async (id) => {
      if (!await confirmDialog(`Replay job ${id}?`, 'Replay')) return;
      try { const r = await api('POST', `/api/jobs/${id}/retry`, { queue }); toast(r.retried ? `job ${id} replayed` : `job ${id} is no longer dead`); } catch (x) { toast(x.message); }
      refresh();
    };
    const rows = d.groups.map((g) => h('tr', { 'data-code': g.error_code ?? '' },
      h('td', {}, link(`#/jobs${qs({ queue, status: 'dead', error_code: g.error_code })}`, g.error_code ?? '(none)', { class: 'error-code' })),
      h('td', { class: 'num' }, num(g.count)),
      h('td', { class: 'hide-narrow' }, since(g.first_seen), ' ago'),
      h('td', {}, since(g.last_seen), ' ago'),
      h('td', {}, g.sample ? [link(`#/job/${g.sample.id}?queue=${encodeURIComponent(queue)}`, `#${g.sample.id}`), ' ',
        h('span', { class: 'muted' }, (g.sample.last_error && g.sample.last_error.message) || g.sample.last_error_message || '')] : '–'),
      h('td', {}, can('retry') && g.sample ? h('button', { type: 'button', class: 'replay-one', onclick: () => replayOne(g.sample.id) }, 'Replay sample') : null,
        ' ', can('retry_dead') && g.error_code != null ? h('button', { type: 'button', class: 'replay-group', onclick: () => replayGroup(g) }, `Replay all ${num(g.count)}`) : null)));
    return h('section', { id: 'page-dead' }, h('h1', {}, `Dead letters of ${queue}`), picker,
      d.groups.length ? table(['error code', { text: 'jobs', cls: 'num' }, { text: 'first seen', cls: 'hide-narrow' }, 'last seen', 'sample', ''], rows, { id: 'dead-groups' })
        : h('p', { class: 'muted' }, 'No dead jobs.'),
      d.truncated ? h('p', { class: 'muted' }, `Grouped from the newest ${num(d.scanned)} dead jobs only.`) : null);
  }

  // Cron in plain words, for the usual shapes; the expression otherwise.
  function cronWords(expr) {
    const f = expr.trim().split(/\s+/);
    if (f.length !== 5) return expr;
    const [mi, ho, dom, mon, dow] = f;
    const days = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
    const at = /^\d+$/.test(mi) && /^\d+$/.test(ho) ? `at ${ho.padStart(2, '0')}:${mi.padStart(2, '0')}` : null;
    if (mi === '*' && ho === '*' && dom === '*' && mon === '*' && dow === '*') return 'every minute';
    let m = /^\*\/(\d+)$/.exec(mi);
    if (m && ho === '*' && dom === '*' && mon === '*' && dow === '*') return `every ${m[1]} minutes`;
    if (/^\d+$/.test(mi) && ho === '*' && dom === '*' && mon === '*' && dow === '*') return `every hour at minute ${mi}`;
    m = /^\*\/(\d+)$/.exec(ho);
    if (m && /^\d+$/.test(mi) && dom === '*' && mon === '*' && dow === '*') return `every ${m[1]} hours at minute ${mi}`;
    if (at && dom === '*' && mon === '*' && dow === '*') return `every day ${at}`;
    if (at && dom === '*' && mon === '*' && /^\d$/.test(dow)) return `every ${days[Number(dow) % 7]} ${at}`;
    if (at && dom === '*' && mon === '*' && dow === '1-5') return `every weekday ${at}`;
    if (at && /^\d+$/.test(dom) && mon === '*' && dow === '*') return `on day ${dom} of every month ${at}`;
    return expr;
  }
  function scheduleTable(list) {
    return table(['schedule', 'queue', 'when', 'next runs', 'last enqueued'], list.map((s) => h('tr', { 'data-schedule': s.schedule_name },
      h('td', {}, s.schedule_name, s.enabled === false ? h('span', { class: 'badge warn' }, 'disabled') : null),
      h('td', {}, link(`#/queue/${encodeURIComponent(s.queue_name)}`, s.queue_name)),
      h('td', {}, cronWords(s.cron), ` (${s.timezone})`, h('div', { class: 'muted' }, h('code', {}, s.cron))),
      h('td', {}, (s.next_runs && s.next_runs.length ? s.next_runs : [s.next_run_at]).filter(Boolean).map((t) => h('div', {}, when(t)))),
      h('td', {}, s.last_job_id ? [link(`#/job/${s.last_job_id}?queue=${encodeURIComponent(s.queue_name)}`, `#${s.last_job_id}`), ' ', h('span', { class: 'muted' }, since(s.last_run_at), ' ago')] : '–'))), { id: 'schedules' });
  }
  async function schedulesPage(ctx) {
    const d = await api('GET', '/api/schedules');
    ctx.watch(null);
    return h('section', { id: 'page-schedules' }, h('h1', {}, 'Schedules'),
      d.schedules.length ? scheduleTable(d.schedules) : h('p', { class: 'muted' }, 'No schedules.'));
  }

  async function workersPage(ctx) {
    const d = await api('GET', '/api/workers');
    ctx.watch(null);
    const s = d.status;
    const field = (k, v) => [h('dt', {}, k), h('dd', {}, v == null || v === '' ? '–' : v)];
    return h('section', { id: 'page-workers' }, h('h1', {}, 'Background worker'),
      s ? h('div', { class: 'cards' }, h('dl', { class: 'card', id: 'worker-status' },
        field('state', s.state), field('configured', String(s.configured)), field('attached', String(s.attached)), field('pid', s.pid)),
      h('dl', { class: 'card' }, field('visit started', when(s.started_at)), field('last pass', when(s.last_tick)),
        field('reaped', num(s.reaped)), field('purged', num(s.purged)), field('notified', num(s.notified))),
      h('dl', { class: 'card' }, field('last error', s.last_error), field('at', when(s.last_error_at))))
        : h('p', { class: 'muted' }, 'jq_worker_status() is not visible to this role.'),
      h('h2', {}, 'Tasks'),
      d.tasks ? table(['task', 'every', 'last run', { text: 'runs', cls: 'num' }, { text: 'items', cls: 'num' }, 'errors in a row', 'last error'],
        d.tasks.map((t) => h('tr', {}, h('td', {}, t.task), h('td', {}, intervalText(t.run_interval)), h('td', {}, since(t.last_run), ' ago'),
          h('td', { class: 'num' }, num(t.runs)), h('td', { class: 'num' }, num(t.items)),
          h('td', { class: 'num' }, num(t.consecutive_errors)), h('td', {}, t.last_error || '–'))), { id: 'tasks' })
        : h('p', { class: 'muted' }, 'jq_worker_tasks() is not visible to this role.'));
  }
  function intervalText(i) {
    if (!i || typeof i !== 'object') return i == null ? '–' : String(i);
    return Object.entries(i).map(([k, v]) => `${v} ${k}`).join(' ') || '0';
  }

  // ---- start --------------------------------------------------------------
  (async () => {
    try {
      me = await api('GET', '/api/me');
      start();
    } catch (x) {
      if (x.status !== 401) showLogin(x.message);
    }
  })();
})();
