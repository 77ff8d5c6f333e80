/* cronhook console: plain JavaScript on the public REST API, no build step, no CDN.
 *
 * The key is kept in sessionStorage (this tab only) and sent as a bearer header. Every
 * element is built with h() (text nodes, never innerHTML with data), so nothing a trigger
 * holds can run as script. Views: #/triggers, #/triggers/<id>, #/activity, #/health, and
 * the pages other files add through `window.cronhook.route(pattern, page)` (runs.js:
 * #/runs/<id>). Those files get the helpers through `window.cronhook` (api, h, table,
 * paged, runLink...) and the pictures through `window.cronhookPictures` (pictures.js). */
(() => {
  'use strict';

  const BASE = location.pathname.replace(/[^/]*$/, '');
  const KEY_NAME = 'cronhook.key';
  const RANK = { viewer: 1, operator: 2, admin: 3 };
  const S = { key: sessionStorage.getItem(KEY_NAME), me: null, workflows: null, health: null };
  const SOURCES = ['webhook', 'github', 'stripe', 'slack', 'standard', 'shopify', 'linkedin', 'eventbridge', 's3', 'email'];
  const OWN_SECRET = ['stripe', 'slack', 'shopify', 'linkedin'];
  // Sources delivered by AWS (no signing secret): the fields each one takes.
  const SOURCE_FIELDS = { eventbridge: ['bus', 'pattern'], s3: ['bucket', 'prefix', 'suffix'], email: ['address'] };
  const DAYS = [['1', 'Mon'], ['2', 'Tue'], ['3', 'Wed'], ['4', 'Thu'], ['5', 'Fri'], ['6', 'Sat'], ['0', 'Sun']];
  const P = () => window.cronhookPictures;

  // -- helpers ------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, body) {
      const err = (body && body.error) || {};
      super(err.message || `HTTP ${status}`);
      this.status = status;
      this.code = err.code || 'error';
      this.field = err.field || null;
    }
  }

  async function api(method, path, body) {
    const init = { method, headers: { Authorization: `Bearer ${S.key}` } };
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const answer = await fetch(BASE + path.replace(/^\//, ''), init);
    const text = await answer.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
    if (answer.status === 401 && path !== 'v1/health') signOut('Your key was refused; sign in again.');
    if (!answer.ok) throw new ApiError(answer.status, data);
    return data;
  }

  function qs(params) {
    const parts = Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== '');
    return parts.length ? '?' + parts.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&') : '';
  }

  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
      else if (name === 'class') el.className = value;
      else if (name === 'text') el.textContent = value;
      else if (name in el && typeof value !== 'string') el[name] = value;
      else el.setAttribute(name, value === true ? '' : value);
    }
    for (const kid of kids.flat()) {
      if (kid === null || kid === undefined || kid === false) continue;
      el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return el;
  }

  let uid = 0;
  const nextId = (p) => `${p}-${++uid}`;

  function field(label, input, hint) {
    input.id = input.id || nextId('f');
    const err = h('p', { class: 'field-error', id: input.id + '-error', hidden: true });
    input._error = err;
    return h('div', { class: 'field' }, h('label', { for: input.id }, label), input,
      hint ? h('p', { class: 'hint' }, hint) : null, err);
  }

  // A value the form refuses before sending (it never substitutes another): shown on `input`.
  class FormProblem extends Error {
    constructor(input, message) { super(message); this.input = input; }
  }

  function showFieldError(input, message) {
    input.setAttribute('aria-invalid', 'true');
    input.setAttribute('aria-describedby', input._error.id);
    input._error.textContent = message;
    input._error.hidden = false;
  }

  function clearErrors(root) {
    root.querySelectorAll('[aria-invalid]').forEach((el) => { el.removeAttribute('aria-invalid'); el.removeAttribute('aria-describedby'); });
    root.querySelectorAll('.field-error').forEach((el) => { el.hidden = true; el.textContent = ''; });
  }

  function toast(message) {
    const box = document.getElementById('toast');
    box.textContent = message;
    box.classList.add('on');
    clearTimeout(toast.timer);
    toast.timer = setTimeout(() => box.classList.remove('on'), 5000);
  }

  const can = (role) => S.me && RANK[S.me.role] >= RANK[role];

  function zoneOf(t) { return (t && t.schedule && t.schedule.timezone) || 'UTC'; }

  function fmtAt(iso, tz) {
    if (!iso) return '—';
    try {
      return new Intl.DateTimeFormat('en-GB', {
        timeZone: tz || 'UTC', weekday: 'short', year: 'numeric', month: 'short', day: 'numeric',
        hour: '2-digit', minute: '2-digit', second: '2-digit', timeZoneName: 'short',
      }).format(new Date(iso));
    } catch (e) { return iso; }
  }

  function offsetOf(iso, tz) {
    try {
      const parts = new Intl.DateTimeFormat('en-US', { timeZone: tz, timeZoneName: 'longOffset' }).formatToParts(new Date(iso));
      return (parts.find((p) => p.type === 'timeZoneName') || {}).value || '';
    } catch (e) { return ''; }
  }

  function fmtRel(iso) {
    if (!iso) return '';
    const diff = (new Date(iso).getTime() - Date.now()) / 1000;
    const rtf = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });
    const abs = Math.abs(diff);
    if (abs < 60) return rtf.format(Math.round(diff), 'second');
    if (abs < 3600) return rtf.format(Math.round(diff / 60), 'minute');
    if (abs < 86400) return rtf.format(Math.round(diff / 3600), 'hour');
    return rtf.format(Math.round(diff / 86400), 'day');
  }

  function timeCell(iso, tz) {
    if (!iso) return h('span', { class: 'muted' }, '—');
    return h('time', { datetime: iso, title: fmtAt(iso, 'UTC') }, h('span', { class: 'rel' }, fmtRel(iso)), h('br'), h('span', { class: 'abs' }, fmtAt(iso, tz)));
  }

  function ms(n) {
    if (n === null || n === undefined) return '—';
    return n >= 1000 ? `${(n / 1000).toFixed(n >= 10000 ? 0 : 1)} s` : `${n} ms`;
  }

  function duration(run) {
    if (run.duration_ms !== null && run.duration_ms !== undefined) return ms(run.duration_ms);
    if (run.started_at && !run.finished_at && run.status === 'running') return `${ms(Date.now() - new Date(run.started_at))} so far`;
    if (!run.started_at || !run.finished_at) return '—';
    return ms(new Date(run.finished_at) - new Date(run.started_at));
  }

  function statusBadge(status) { return h('span', { class: `badge s-${status}` }, status); }

  function table(caption, headers, rows, empty) {
    // Each cell carries its column's name: at a phone's width a row is shown as a card.
    const names = headers.map((x) => (x instanceof Node ? '' : String(x)));
    for (const row of rows) {
      Array.from(row.children).forEach((cell, i) => { if (names[i]) cell.dataset.label = names[i]; });
    }
    return h('div', { class: 'table-wrap' }, h('table', {},
      h('caption', {}, caption),
      h('thead', {}, h('tr', {}, headers.map((x) => (x instanceof Node ? h('th', { scope: 'col' }, x) : h('th', { scope: 'col' }, x))))),
      h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: headers.length, class: 'muted' }, empty || 'Nothing yet.')))));
  }

  function errorBox(err) { return h('p', { class: 'error', role: 'alert' }, err.message || String(err)); }

  function dialog(title, ...body) {
    const titleId = nextId('dlg');
    const dlg = h('dialog', { 'aria-labelledby': titleId },
      h('div', { class: 'dlg-head' }, h('h2', { id: titleId }, title),
        h('button', { type: 'button', class: 'quiet', 'aria-label': 'Close', onclick: () => dlg.close() }, '×')),
      ...body);
    dlg.addEventListener('close', () => dlg.remove());
    document.body.append(dlg);
    dlg.showModal();
    return dlg;
  }

  function confirmDialog(title, message, action, run) {
    return new Promise((resolve) => {
      const err = h('div');
      const dlg = dialog(title, h('p', {}, message), err,
        h('div', { class: 'actions' },
          h('button', { type: 'button', class: 'quiet', onclick: () => dlg.close() }, 'Cancel'),
          h('button', { type: 'button', class: 'danger', onclick: async () => {
            try { await run(); dlg.close(); resolve(true); } catch (e) { err.replaceChildren(errorBox(e)); }
          } }, action)));
      dlg.addEventListener('close', () => resolve(false));
    });
  }

  const view = () => document.getElementById('view');

  function render(...nodes) {
    // A part a role does not get (a viewer's toolbar) is null: left out, never "null".
    view().replaceChildren(...nodes.filter((n) => n !== null && n !== undefined && n !== false));
  }

  // A table that pages back through `next_cursor`: "Older" adds the next page's rows.
  // `fetchPage(cursor)` answers a page; `build(items)` draws the table of all rows so far.
  async function paged(fetchPage, build, opts = {}) {
    const box = h('div', { class: 'paged' });
    const items = [];
    let cursor = null;
    const older = h('button', { type: 'button', class: 'older' }, opts.olderLabel || 'Older');
    const count = h('span', { class: 'muted', 'aria-live': 'polite' });
    async function load() {
      older.disabled = true;
      const page = await fetchPage(cursor);
      const fresh = opts.keep ? page.items.filter(opts.keep) : page.items;
      items.push(...fresh);
      cursor = page.next_cursor;
      const stop = opts.stopWhen && page.items.some(opts.stopWhen);
      older.hidden = !cursor || stop;
      older.disabled = false;
      count.textContent = `${items.length} shown`;
      box.replaceChildren(build(items), h('nav', { class: 'pager', 'aria-label': `${opts.what || 'Rows'}: older pages` }, older, count));
    }
    older.addEventListener('click', async () => {
      try { await load(); older.focus(); } catch (e) { box.append(errorBox(e)); }
    });
    await load();
    return box;
  }

  const PAGE = 25;

  // When a run happened, for the tables: its slot, else when it started or ended (an event
  // run has no slot).
  function runWhen(r) { return r.scheduled_for || r.started_at || r.finished_at || null; }

  // Every run row links to the run's own page (runs.js).
  function runLink(r, text) {
    return h('a', { href: `#/runs/${encodeURIComponent(r.id)}`, 'aria-label': `Run ${r.id} (${r.status})`, class: 'run-link' }, text || statusBadge(r.status));
  }

  // -- sign in, health banner ---------------------------------------------------------

  function signOut(message) {
    sessionStorage.removeItem(KEY_NAME);
    S.key = null; S.me = null;
    showSignin(message);
  }

  function showSignin(message) {
    document.getElementById('signin').hidden = false;
    document.getElementById('nav').hidden = true;
    document.getElementById('signout').hidden = true;
    document.getElementById('who').textContent = '';
    document.getElementById('banner').hidden = true;
    render();
    const err = document.getElementById('api-key-error');
    err.hidden = !message; err.textContent = message || '';
    document.getElementById('api-key').focus();
  }

  async function loadMe() {
    const health = await api('GET', 'v1/health');
    S.health = health;
    S.me = health.caller;
    document.getElementById('who').textContent = `Tenant ${S.me.tenant} · ${S.me.role}`;
    document.getElementById('signin').hidden = true;
    document.getElementById('nav').hidden = false;
    document.getElementById('signout').hidden = false;
    showBanner(health);
  }

  function showBanner(health) {
    const banner = document.getElementById('banner');
    if (health && health.stale) {
      const since = health.last_tick_at ? `since ${fmtAt(health.last_tick_at)} (${fmtRel(health.last_tick_at)})` : 'yet';
      banner.replaceChildren(h('strong', {}, 'The scheduler is not running. '),
        `No heartbeat tick ${since}: more than two periods of ${health.heartbeat_s} s. Nothing fires until it ticks again. `,
        h('a', { href: '#/health' }, 'Health'));
      banner.hidden = false;
    } else {
      banner.hidden = true;
    }
  }

  async function pollHealth() {
    if (!S.key) return;
    try { S.health = await api('GET', 'v1/health'); showBanner(S.health); } catch (e) { /* next poll */ }
  }

  async function workflows() {
    if (!S.workflows) S.workflows = (await api('GET', 'v1/workflows?limit=200')).items;
    return S.workflows;
  }

  // -- triggers list ------------------------------------------------------------------

  const L = { filters: { tag: '', workflow: '', status: '' }, q: '', cursors: [null], page: 0, items: [], selected: new Set() };
  // A search reads this many pages of 200 at most (a tenant's quota is 500 triggers).
  const SEARCH_PAGES = 10;

  function matches(t, q) {
    const hay = [t.id, t.title, t.display_name, t.workflow, ...(t.tags || [])].filter(Boolean).join('\n').toLowerCase();
    return q.toLowerCase().split(/\s+/).filter(Boolean).every((word) => hay.includes(word));
  }

  async function triggersView() {
    const wfs = await workflows().catch(() => []);
    const tag = h('input', { name: 'tag', value: L.filters.tag, autocomplete: 'off' });
    const wf = h('select', { name: 'workflow' }, h('option', { value: '' }, 'Any'), wfs.map((w) => h('option', { value: w.name, selected: w.name === L.filters.workflow }, w.name)));
    const st = h('select', { name: 'status' }, [['', 'Any'], ['active', 'Active'], ['disabled', 'Disabled']].map(([v, t]) => h('option', { value: v, selected: v === L.filters.status }, t)));
    const q = h('input', { name: 'q', type: 'search', value: L.q, autocomplete: 'off', spellcheck: 'false' });
    const filters = h('form', { role: 'search', class: 'filters', 'aria-label': 'Filter triggers', onsubmit: (e) => {
      e.preventDefault();
      L.filters = { tag: tag.value.trim(), workflow: wf.value, status: st.value };
      L.q = q.value.trim();
      L.cursors = [null]; L.page = 0; L.selected.clear();
      loadPage();
    } }, field('Search', q, 'Title, tag, workflow or id.'), field('Tag', tag), field('Workflow', wf), field('Status', st), h('button', { type: 'submit' }, 'Apply filters'));
    const count = h('span', { id: 'selected-count', 'aria-live': 'polite' });
    const bulk = (label, fn, cls) => h('button', { type: 'button', class: cls || '', 'data-bulk': '1', disabled: true, onclick: fn }, label);
    const toolbar = can('operator') ? h('div', { class: 'toolbar', role: 'toolbar', 'aria-label': 'Trigger actions' },
      h('button', { type: 'button', class: 'primary', onclick: () => openTriggerDialog(null) }, 'New trigger'),
      bulk('Pause selected', pauseSelected), bulk('Resume selected', () => bulkAction('enable')),
      bulk('Fire selected', () => bulkAction('fire')), bulk('Delete selected', deleteSelected, 'danger'), count) : null;
    render(h('h1', {}, 'Triggers'), toolbar, filters, h('div', { id: 'list' }, h('p', { class: 'muted' }, 'Loading…')));
    await loadPage();
  }

  function updateSelection() {
    const n = L.selected.size;
    const count = document.getElementById('selected-count');
    if (count) count.textContent = n ? `${n} selected` : '';
    document.querySelectorAll('[data-bulk]').forEach((b) => { b.disabled = n === 0; });
  }

  let listSeq = 0;
  async function loadPage() {
    const box = document.getElementById('list');
    if (!box) return;
    // The answer to an older request (the list before a filter was applied) is dropped.
    const seq = ++listSeq;
    let page;
    try {
      page = L.q ? await searchTriggers(L.q) : await api('GET', 'v1/triggers' + qs({ ...L.filters, limit: 25, cursor: L.cursors[L.page] }));
    } catch (e) { if (seq === listSeq) box.replaceChildren(errorBox(e)); return; }
    if (seq !== listSeq) return;
    L.items = page.items;
    const write = can('operator');
    const all = write ? h('input', { type: 'checkbox', 'aria-label': 'Select all on this page', onchange: (e) => {
      L.items.forEach((t) => (e.target.checked ? L.selected.add(t.id) : L.selected.delete(t.id)));
      box.querySelectorAll('input[data-id]').forEach((c) => { c.checked = e.target.checked; });
      updateSelection();
    } }) : null;
    const rows = page.items.map((t) => triggerRow(t, write));
    const headers = [...(write ? [all] : []), 'Name', 'Cadence', 'Status', 'Next fire', 'Recent runs', 'Last error', 'Budget'];
    const pager = h('nav', { class: 'pager', 'aria-label': 'Pages' },
      // A selection is of the rows on screen: another page starts with none selected.
      h('button', { type: 'button', disabled: L.page === 0, onclick: () => { L.page -= 1; L.selected.clear(); loadPage(); } }, 'Previous page'),
      h('span', {}, `Page ${L.page + 1}`),
      h('button', { type: 'button', disabled: !page.next_cursor, onclick: () => { L.cursors[L.page + 1] = page.next_cursor; L.page += 1; L.selected.clear(); loadPage(); } }, 'Next page'));
    box.replaceChildren(table(L.q ? `Triggers matching “${L.q}”` : 'Triggers', headers, rows, 'No triggers match.'), L.q ? null : pager);
    updateSelection();
    fillRecentRuns(page.items);
  }

  // A one-time trigger that ran (and a trigger that reached its max_runs or expiry after
  // succeeding) is done, not failed: it is shown so, not in red.
  function isDone(t) {
    return t.status !== 'active' && ['max_runs', 'expired'].includes(t.disabled_reason)
      && (!t.last_run || t.last_run.status === 'succeeded');
  }

  // Search: the filtered list read whole (pages of 200), matched on title, tags, workflow
  // and id here; every match is shown on one page.
  async function searchTriggers(q) {
    const found = [];
    let cursor = null;
    for (let n = 0; n < SEARCH_PAGES; n += 1) {
      const page = await api('GET', 'v1/triggers' + qs({ ...L.filters, limit: 200, cursor }));
      found.push(...page.items.filter((t) => matches(t, q)));
      cursor = page.next_cursor;
      if (!cursor) break;
    }
    return { items: found, next_cursor: null };
  }

  function statusCell(t) {
    if (isDone(t)) {
      const why = t.kind === 'at' ? 'ran once' : (t.disabled_reason === 'expired' ? 'expired' : 'ran its max runs');
      return [h('span', { class: 'badge s-done' }, 'done'), h('span', { class: 'muted' }, ` ${why}`)];
    }
    const bits = [statusBadge(t.status)];
    if (t.status !== 'active') {
      bits.push(h('span', { class: 'reason' }, ` ${t.disabled_reason || 'manual'}`));
      if (t.disabled_note) bits.push(h('div', { class: 'note' }, `Note: ${t.disabled_note}`));
    }
    return bits;
  }

  function budgetText(t) {
    const limits = t.limits || {};
    if (limits.max_usd === null || limits.max_usd === undefined) return '—';
    const period = limits.budget_period || 'month';
    const b = t.budget;
    const spent = b && b.period ? `$${b.spent_usd.toFixed(2)} of ` : (b ? '$0.00 of ' : '');
    const when = b && b.period && b.period !== 'total' ? ` (${b.period.split(':')[1]})` : '';
    return `${spent}$${Number(limits.max_usd).toFixed(2)} / ${period}${when}`;
  }

  function triggerRow(t, write) {
    const lastError = t.last_run && t.last_run.error ? t.last_run.error : '';
    const check = write ? h('td', {}, h('input', { type: 'checkbox', 'data-id': t.id, 'aria-label': `Select ${t.display_name}`, checked: L.selected.has(t.id), onchange: (e) => {
      if (e.target.checked) L.selected.add(t.id); else L.selected.delete(t.id);
      updateSelection();
    } })) : null;
    return h('tr', { 'data-trigger': t.id },
      check,
      h('th', { scope: 'row' }, h('a', { href: `#/triggers/${encodeURIComponent(t.id)}` }, t.display_name), t.tags && t.tags.length ? h('div', { class: 'tags' }, t.tags.map((g) => h('span', { class: 'tag' }, g))) : null),
      h('td', {}, t.cadence),
      h('td', {}, statusCell(t)),
      h('td', {}, timeCell(t.next_fire_at, zoneOf(t))),
      h('td', { class: 'marks', 'data-runs': t.id }, h('span', { class: 'muted' }, '…')),
      h('td', { class: 'err' }, lastError),
      h('td', {}, budgetText(t)));
  }

  async function fillRecentRuns(items) {
    const queue = items.slice();
    const worker = async () => {
      while (queue.length) {
        const t = queue.shift();
        const cell = document.querySelector(`[data-runs="${CSS.escape(t.id)}"]`);
        if (!cell) continue;
        try { cell.replaceChildren(P().miniStrip((await api('GET', `v1/triggers/${t.id}/runs?limit=10`)).items)); } catch (e) { cell.replaceChildren('—'); }
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
  }

  function selectedTriggers() { return L.items.filter((t) => L.selected.has(t.id)); }

  async function eachSelected(fn) {
    const failures = [];
    for (const t of selectedTriggers()) {
      try { await fn(t); } catch (e) { failures.push(`${t.display_name}: ${e.message}`); }
    }
    return failures;
  }

  async function bulkAction(action) {
    const n = selectedTriggers().length;
    const failures = await eachSelected((t) => api('POST', `v1/triggers/${t.id}/${action}`));
    toast(failures.length ? `Some failed: ${failures.join('; ')}` : `${action === 'fire' ? 'Fired' : 'Resumed'} ${n} trigger(s)`);
    L.selected.clear();
    loadPage();
  }

  function pauseDialog(count, run) {
    const note = h('textarea', { name: 'note', required: true, maxlength: 500, rows: 3 });
    const err = h('div');
    const form = h('form', { class: 'stack', novalidate: true, onsubmit: async (e) => {
      e.preventDefault();
      clearErrors(form);
      if (!note.value.trim()) { showFieldError(note, 'Say why: the note is shown next to the status.'); return; }
      try { await run(note.value.trim()); dlg.close(); } catch (ex) {
        if (ex.field === 'note') showFieldError(note, ex.message); else err.replaceChildren(errorBox(ex));
      }
    } }, h('p', {}, `Pause ${count} trigger(s). Nothing fires until resumed.`), field('Note', note, 'Why they are paused; required.'), err,
    h('div', { class: 'actions' }, h('button', { type: 'button', class: 'quiet', onclick: () => dlg.close() }, 'Cancel'), h('button', { type: 'submit', class: 'primary' }, 'Pause')));
    const dlg = dialog('Pause triggers', form);
    note.focus();
  }

  function pauseSelected() {
    pauseDialog(selectedTriggers().length, async (note) => {
      const failures = await eachSelected((t) => api('POST', `v1/triggers/${t.id}/disable`, { note }));
      if (failures.length) throw new Error(failures.join('; '));
      toast('Paused');
      L.selected.clear();
      loadPage();
    });
  }

  function deleteSelected() {
    const chosen = selectedTriggers();
    const names = chosen.map((t) => t.display_name).join(', ');
    confirmDialog('Delete triggers', `Delete ${chosen.length} trigger(s): ${names}? Their runs stay visible until they expire; this cannot be undone.`, 'Delete', async () => {
      const failures = await eachSelected((t) => api('DELETE', `v1/triggers/${t.id}`));
      if (failures.length) throw new Error(failures.join('; '));
      L.selected.clear();
      toast('Deleted');
      loadPage();
    });
  }

  // -- create and edit dialog ---------------------------------------------------------

  function zones() {
    try { return Intl.supportedValuesOf('timeZone'); } catch (e) { return ['UTC', 'Europe/Berlin', 'Europe/London', 'America/New_York', 'Asia/Tokyo']; }
  }

  // The builder's preset for a stored schedule. A cadence no preset shows exactly (an
  // interval of seconds, a one-time `at`, a business day...) is "keep": the dialog sends no
  // schedule for it unless another cadence is chosen.
  function cadenceFromSchedule(s) {
    if (!s) return { mode: 'daily' };
    if (s.interval_s) {
      if (s.interval_s % 3600 === 0) return { mode: 'hours', every: s.interval_s / 3600 };
      if (s.interval_s % 60 === 0) return { mode: 'minutes', every: s.interval_s / 60 };
      return { mode: 'keep' };
    }
    if (s.cron) return { mode: 'cron', cron: Array.isArray(s.cron) ? s.cron.join(' | ') : s.cron };
    return { mode: 'keep' };
  }

  async function openTriggerDialog(existing) {
    const wfs = await workflows().catch(() => []);
    const editing = !!existing;
    const els = {};
    const title = els.title = h('input', { name: 'title', maxlength: 200, value: existing ? existing.title || '' : '' });
    const workflow = els.workflow = h('select', { name: 'workflow', required: true },
      wfs.map((w) => h('option', { value: w.name, selected: existing && existing.workflow === w.name }, w.name)),
      existing && !wfs.some((w) => w.name === existing.workflow) ? h('option', { value: existing.workflow, selected: true }, existing.workflow) : null);
    const isEvent = existing ? existing.kind === 'event' : false;
    const kindSchedule = h('input', { type: 'radio', name: 'kind', value: 'schedule', checked: !isEvent, disabled: editing });
    const kindEvent = h('input', { type: 'radio', name: 'kind', value: 'event', checked: isEvent, disabled: editing });
    const kind = h('fieldset', { class: 'inline' }, h('legend', {}, 'Runs on'),
      h('label', {}, kindSchedule, ' A schedule'), h('label', {}, kindEvent, ' An event (webhook)'));

    // cadence builder
    const sched = existing && existing.schedule;
    const c = cadenceFromSchedule(sched);
    const mode = h('select', { name: 'mode' }, [
      ...(c.mode === 'keep' ? [['keep', `Keep as it is: ${existing.cadence || 'unchanged'}`]] : []),
      ['minutes', 'Every N minutes'], ['hours', 'Every N hours'], ['daily', 'Daily'], ['weekdays', 'Weekdays (Mon–Fri)'],
      ['weekly', 'Weekly on chosen days'], ['monthly', 'Monthly on a day'], ['monthly_last', 'Monthly on the last day'],
      ['cron', 'Cron expression'], ['eventbridge', 'EventBridge expression (pasted)'],
    ].map(([v, t]) => h('option', { value: v, selected: v === c.mode }, t)));
    const every = h('input', { type: 'number', name: 'every', min: 1, value: c.every || 15 });
    const at = h('input', { type: 'time', name: 'at', value: '08:00' });
    const dayChecks = DAYS.map(([v, t]) => h('input', { type: 'checkbox', value: v, checked: v === '1', 'aria-label': t }));
    const daysError = h('p', { class: 'field-error', id: nextId('days') + '-error', hidden: true });
    const days = h('fieldset', { class: 'inline days' }, h('legend', {}, 'On days'), DAYS.map(([, t], i) => h('label', {}, dayChecks[i], ` ${t}`)), daysError);
    days._error = daysError;
    const dom = h('input', { type: 'number', name: 'dom', min: 1, max: 31, value: 1 });
    const cron = h('input', { name: 'cron', value: c.cron || '', spellcheck: 'false', autocomplete: 'off', placeholder: '0 8 * * 1' });
    const eb = h('input', { name: 'eventbridge', spellcheck: 'false', autocomplete: 'off', placeholder: 'cron(0 8 ? * MON-FRI *)' });
    const tz = els['schedule.timezone'] = h('select', { name: 'timezone' }, zones().map((z) => h('option', { value: z, selected: z === ((sched && sched.timezone) || 'UTC') }, z)));
    if (!zones().includes('UTC')) tz.prepend(h('option', { value: 'UTC', selected: !sched || sched.timezone === 'UTC' }, 'UTC'));
    const skipped = h('select', { name: 'dst_skipped' }, [['shift', 'Run right after the jump (shift)'], ['skip', 'Skip it (skip)']].map(([v, t]) => h('option', { value: v, selected: sched && sched.dst && sched.dst.skipped === v }, t)));
    const repeated = h('select', { name: 'dst_repeated' }, [['once', 'Run once (once)'], ['both', 'Run at both (both)']].map(([v, t]) => h('option', { value: v, selected: sched && sched.dst && sched.dst.repeated === v }, t)));
    const from = h('input', { type: 'date', name: 'preview_from' });
    const parts = {
      every: field('Every', every), at: field('Time of day', at, 'In the trigger’s timezone.'), days, dom: field('Day of month', dom),
      cron: field('Cron expression', cron, 'Five fields: minute hour day-of-month month day-of-week.'),
      eb: field('EventBridge expression', eb, 'cron(…), rate(…) or at(…), as in EventBridge Scheduler.'),
    };
    const show = { keep: [], minutes: ['every'], hours: ['every'], daily: ['at'], weekdays: ['at'], weekly: ['at', 'days'], monthly: ['at', 'dom'], monthly_last: ['at'], cron: ['cron'], eventbridge: ['eb'] };
    const cadenceInput = () => ({ cron, eventbridge: eb, minutes: every, hours: every, keep: mode }[mode.value] || at);
    const preview = h('div', { class: 'preview', 'aria-live': 'polite' });
    // The timezone and DST policy mean something to a wall-clock cadence only (a cron):
    // an interval counts seconds, and the API refuses both with it.
    const wallClockParts = [field('Timezone', tz), h('details', {}, h('summary', {}, 'Daylight saving time'), field('When the local time is skipped (spring)', skipped), field('When the local time repeats (autumn)', repeated))];
    const fromField = field('Preview from', from, 'Optional: preview the fires after this date (e.g. around a DST change).');
    const scheduleBox = h('fieldset', { class: 'cadence-box' }, h('legend', {}, 'Cadence'), h('div', { class: 'stack' }, field('How often', mode), ...Object.values(parts),
      ...wallClockParts, fromField), preview);
    const showParts = () => {
      for (const [k, el] of Object.entries(parts)) el.hidden = !show[mode.value].includes(k);
      fromField.hidden = mode.value === 'keep';
      let s;
      try { s = buildSchedule(); } catch (e) { return; } // a value being typed: leave them as they are
      wallClockParts.forEach((el) => { el.hidden = !(s && s.timezone); });
    };

    // A whole number in [lo, hi] from a number input, or a FormProblem on it (never a
    // substitute: -5 is not "1", 45 is not "31").
    function wholeNumber(input, lo, hi, what) {
      const n = Number(input.value);
      if (input.value === '' || input.validity.badInput || !Number.isInteger(n) || n < lo || n > hi) {
        throw new FormProblem(input, `${what}: a whole number from ${lo} to ${hi}.`);
      }
      return n;
    }

    // The schedule the builder describes (null: "keep", the stored one stays); a value it
    // cannot use throws a FormProblem naming its input.
    function buildSchedule() {
      if (mode.value === 'keep') return null;
      const wallClock = (cronText) => ({ cron: cronText, timezone: tz.value, dst: { skipped: skipped.value, repeated: repeated.value } });
      const clock = () => {
        if (!/^\d{1,2}:\d{2}/.test(at.value)) throw new FormProblem(at, 'Enter a time of day.');
        return at.value.split(':').slice(0, 2).map((x) => String(Number(x)));
      };
      switch (mode.value) {
        case 'minutes': {
          const n = wholeNumber(every, 1, 527040, 'Every N minutes');
          if (60 % n === 0) return wallClock(n === 1 ? '* * * * *' : `*/${n} * * * *`);
          return { interval_s: n * 60 };
        }
        case 'hours': {
          const n = wholeNumber(every, 1, 8784, 'Every N hours');
          if (24 % n === 0) return wallClock(n === 1 ? '0 * * * *' : `0 */${n} * * *`);
          return { interval_s: n * 3600 };
        }
        case 'daily': { const [hh, mm] = clock(); return wallClock(`${mm} ${hh} * * *`); }
        case 'weekdays': { const [hh, mm] = clock(); return wallClock(`${mm} ${hh} * * 1-5`); }
        case 'weekly': {
          const [hh, mm] = clock();
          const chosen = dayChecks.filter((d) => d.checked).map((d) => d.value);
          if (!chosen.length) throw new FormProblem(days, 'Choose at least one day.');
          return wallClock(`${mm} ${hh} * * ${chosen.join(',')}`);
        }
        case 'monthly': {
          const [hh, mm] = clock();
          return wallClock(`${mm} ${hh} ${wholeNumber(dom, 1, 31, 'Day of month')} * *`);
        }
        case 'monthly_last': { const [hh, mm] = clock(); return wallClock(`${mm} ${hh} L * *`); }
        case 'cron': { // several crons (their union) are written "a | b"
          const text = cron.value.trim();
          return wallClock(text.includes('|') ? text.split('|').map((x) => x.trim()).filter(Boolean) : text);
        }
        case 'eventbridge': {
          // A pasted rate(...) is an interval: no timezone, no DST policy. cron(...) and
          // at(...) are read in the chosen timezone.
          const text = eb.value.trim();
          return /^rate\s*\(/i.test(text) ? { cron: text } : wallClock(text);
        }
        default: return null;
      }
    }

    let previewSeq = 0;
    async function refreshPreview() {
      if (!kindSchedule.checked) return;
      const seq = ++previewSeq;
      clearErrors(scheduleBox);
      let s;
      try { s = buildSchedule(); } catch (e) {
        preview.replaceChildren();
        showFieldError(e.input, e.message);
        return;
      }
      if (!s) { // "keep": the stored schedule's own fires
        try {
          const answer = await api('GET', `v1/triggers/${existing.id}/preview?count=10`);
          if (seq === previewSeq) preview.replaceChildren(previewTable(answer, zoneOf(existing), 'Next 10 fires'));
        } catch (e) { if (seq === previewSeq) preview.replaceChildren(errorBox(e)); }
        return;
      }
      if (!s.cron && !s.interval_s) { preview.replaceChildren(h('p', { class: 'muted' }, 'Enter a cadence to see the next fires.')); return; }
      const body = { ...s, count: 10 };
      if (from.value) body.from = `${from.value}T00:00:00Z`;
      try {
        const answer = await api('POST', 'v1/schedules/preview', body);
        if (seq === previewSeq) preview.replaceChildren(previewTable(answer, s.timezone || 'UTC', 'Next 10 fires'));
      } catch (e) {
        if (seq !== previewSeq) return;
        preview.replaceChildren();
        const f = e.field || '';
        showFieldError(f.endsWith('timezone') ? tz : cadenceInput(), e.message);
      }
    }
    let timer = null;
    const schedulePreview = () => { clearTimeout(timer); timer = setTimeout(refreshPreview, 250); };
    scheduleBox.addEventListener('input', () => { showParts(); schedulePreview(); });
    scheduleBox.addEventListener('change', () => { showParts(); schedulePreview(); });

    // event source
    const ev = existing && existing.event;
    const source = els['event.source'] = h('select', { name: 'source', disabled: editing }, SOURCES.map((s) => h('option', { value: s, selected: ev && ev.source === s }, s)));
    const secret = els['event.secret'] = h('input', { name: 'secret', type: 'password', autocomplete: 'off', spellcheck: 'false' });
    const filter = els['event.filter'] = h('textarea', { name: 'filter', rows: 2, spellcheck: 'false' }, ev && ev.filter ? JSON.stringify(ev.filter) : '');
    const text = (name, attrs) => h('input', { name, spellcheck: 'false', value: ev && ev[name] ? ev[name] : '', disabled: editing, ...(attrs || {}) });
    els['event.bus'] = text('bus', { placeholder: 'default' });
    els['event.pattern'] = h('textarea', { name: 'pattern', rows: 3, spellcheck: 'false', disabled: editing }, ev && ev.pattern ? JSON.stringify(ev.pattern) : '');
    els['event.bucket'] = text('bucket');
    els['event.prefix'] = text('prefix');
    els['event.suffix'] = text('suffix');
    els['event.address'] = text('address', { type: 'email' });
    const extra = {
      bus: field('Event bus', els['event.bus'], 'The EventBridge bus (default: default).'),
      pattern: field('Event pattern (JSON)', els['event.pattern'], 'e.g. {"source": ["my.app"], "detail-type": ["order.placed"]}'),
      bucket: field('Bucket', els['event.bucket']),
      prefix: field('Key prefix', els['event.prefix'], 'e.g. incoming/'),
      suffix: field('Key suffix (optional)', els['event.suffix'], 'e.g. .csv'),
      address: field('Recipient address', els['event.address'], 'Mail to this address runs the trigger.'),
    };
    const secretField = field('Signing secret', secret, 'Required for Stripe, Slack, Shopify and LinkedIn (they issue it); otherwise one is generated.');
    const eventBox = h('fieldset', { class: 'stack' }, h('legend', {}, 'Event'), field('Event source', source),
      secretField, ...Object.values(extra),
      field('Filter (JSON)', filter, 'e.g. {"github_event": ["push"], "branch": "main"}'));
    const showSourceFields = () => {
      const wanted = SOURCE_FIELDS[source.value] || [];
      Object.entries(extra).forEach(([name, el]) => { el.hidden = !wanted.includes(name); });
      secretField.hidden = Boolean(SOURCE_FIELDS[source.value]);
    };

    // options
    const limits = (existing && existing.limits) || {};
    const num = (name, value, attrs) => h('input', { type: 'number', name, value: value === null || value === undefined ? '' : value, ...(attrs || {}) });
    els.tags = h('input', { name: 'tags', value: existing ? (existing.tags || []).join(', ') : '' });
    els['limits.max_runs'] = num('max_runs', limits.max_runs, { min: 1 });
    els['limits.expires_at'] = h('input', { name: 'expires_at', type: 'datetime-local', value: limits.expires_at ? limits.expires_at.slice(0, 16) : '' });
    els['limits.max_usd'] = num('max_usd', limits.max_usd, { min: 0, step: '0.01' });
    els['limits.budget_period'] = h('select', { name: 'budget_period' }, ['month', 'week', 'day', 'total'].map((p) => h('option', { value: p, selected: limits.budget_period === p }, p)));
    els['limits.max_failures'] = num('max_failures', limits.max_failures ?? 5, { min: 1 });
    els.overlap = h('select', { name: 'overlap' }, [['skip', 'Skip a fire while one runs'], ['buffer_one', 'Keep one waiting'], ['buffer_all', 'Run every fire in turn'], ['allow', 'Allow overlap']].map(([v, t]) => h('option', { value: v, selected: existing && existing.overlap === v }, t)));
    els.concurrency = num('concurrency', existing ? existing.concurrency : 1, { min: 1, max: 100 });
    els.history = h('select', { name: 'history' }, [['full', 'Every run'], ['failures', 'Only runs that did not succeed']].map(([v, t]) => h('option', { value: v, selected: existing && existing.history === v }, t)));
    els.serialize_key = h('input', { name: 'serialize_key', value: existing ? existing.serialize_key || '' : '' });
    const backfillAll = h('input', { type: 'radio', name: 'backfill', value: 'all' });
    const backfillNow = h('input', { type: 'radio', name: 'backfill', value: 'from_now', checked: true });
    const backfill = h('fieldset', { class: 'inline', hidden: true }, h('legend', {}, 'This workflow keeps state. Where does it start?'),
      h('label', {}, backfillNow, ' From now'), h('label', {}, backfillAll, ' Process everything from the start (all)'));
    const options = h('details', {}, h('summary', {}, 'Tags, limits and options'), h('div', { class: 'grid' },
      field('Tags', els.tags, 'Comma-separated.'), field('Max runs', els['limits.max_runs']), field('Expires at (UTC)', els['limits.expires_at']),
      field('Budget (USD)', els['limits.max_usd']), field('Budget period', els['limits.budget_period']), field('Max consecutive failures', els['limits.max_failures']),
      field('Overlap', els.overlap), field('Concurrency', els.concurrency), field('Serialize key', els.serialize_key),
      field('Run history', els.history, 'Which runs keep a record.')));
    const wfChanged = () => {
      const w = wfs.find((x) => x.name === workflow.value);
      backfill.hidden = editing || !(w && w.state_schema);
    };
    workflow.addEventListener('change', wfChanged);

    const formError = h('div');
    // An edit of a schedule shows the fires it adds and removes (PATCH ?dry_run=true)
    // before it is saved; saving the same edit again confirms it.
    const slotsDiff = h('div', { class: 'slots-diff', role: 'region', 'aria-label': 'What this edit changes', hidden: true });
    let diffShownFor = null;
    const submit = h('button', { type: 'submit', class: 'primary' }, editing ? 'Save' : 'Create');
    const form = h('form', { class: 'stack', novalidate: true }, field('Title', title), field('Workflow', workflow), backfill, kind, scheduleBox, eventBox, options, slotsDiff, formError,
      h('div', { class: 'actions' }, h('button', { type: 'button', class: 'quiet', onclick: () => dlg.close() }, 'Cancel'), submit));
    const syncKind = () => { scheduleBox.hidden = !kindSchedule.checked; eventBox.hidden = !kindEvent.checked; if (kindSchedule.checked) schedulePreview(); };
    kind.addEventListener('change', syncKind);
    source.addEventListener('change', () => { secret.required = OWN_SECRET.includes(source.value); showSourceFields(); });
    showSourceFields();

    function body() {
      const out = { workflow: workflow.value, title: title.value.trim() || null };
      out.tags = els.tags.value.split(',').map((x) => x.trim()).filter(Boolean);
      // Numbers go as typed: the API's 422 names the field (0 is not quietly "1").
      const number = (el) => {
        if (el.validity.badInput) throw new FormProblem(el, 'Enter a number.');
        return el.value === '' ? null : Number(el.value);
      };
      out.limits = { max_runs: number(els['limits.max_runs']), expires_at: els['limits.expires_at'].value ? `${els['limits.expires_at'].value}:00Z` : null,
        max_usd: number(els['limits.max_usd']), budget_period: els['limits.budget_period'].value };
      const maxFailures = number(els['limits.max_failures']);
      if (maxFailures !== null) out.limits.max_failures = maxFailures; // empty: the default (5), or the stored one
      out.overlap = els.overlap.value;
      const concurrency = number(els.concurrency);
      if (concurrency !== null) out.concurrency = concurrency;
      out.history = els.history.value;
      out.serialize_key = els.serialize_key.value.trim() || null;
      if (kindSchedule.checked) {
        // An edit sends the schedule only when the cadence was changed: a title edit
        // keeps the stored schedule exactly (its kind, seconds, instant and extras).
        const s = buildSchedule();
        if (s && (!editing || JSON.stringify(s) !== initialSchedule)) out.schedule = s;
      } else {
        out.event = editing ? {} : { source: source.value };
        if (secret.value && !SOURCE_FIELDS[source.value]) out.event.secret = secret.value;
        if (!editing) {
          for (const name of SOURCE_FIELDS[source.value] || []) {
            const value = els[`event.${name}`].value.trim();
            if (!value) continue;
            if (name === 'pattern') {
              try { out.event.pattern = JSON.parse(value); } catch (e) { throw new ApiError(422, { error: { message: 'not valid JSON', field: 'event.pattern' } }); }
            } else out.event[name] = value;
          }
        }
        if (filter.value.trim()) {
          try { out.event.filter = JSON.parse(filter.value); } catch (e) { throw Object.assign(new ApiError(422, { error: { message: 'not valid JSON', field: 'event.filter' } })); }
        } else if (editing) out.event.filter = null;
      }
      if (!editing && !backfill.hidden) out.backfill = backfillAll.checked ? 'all' : 'from_now';
      if (editing) out.version = existing.version;
      return out;
    }

    function placeError(e) {
      const f = e.field || '';
      let el = e.input || els[f];
      if (!el && f.startsWith('schedule.')) el = f === 'schedule.timezone' ? tz : cadenceInput();
      if (!el && f.startsWith('limits.')) el = els[f];
      if (!el && f === 'schedule') el = cadenceInput();
      if (el) {
        if (el.closest('details')) el.closest('details').open = true;
        showFieldError(el, e.message);
        el.focus();
      } else formError.replaceChildren(errorBox(e));
    }

    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      clearErrors(form); formError.replaceChildren();
      let created;
      try {
        const payload = body();
        if (editing && payload.schedule && diffShownFor !== JSON.stringify(payload)) {
          const plan = await api('PATCH', `v1/triggers/${existing.id}?dry_run=true`, payload);
          const d = plan.slots_diff || {};
          if ((d.added_count || 0) + (d.removed_count || 0) > 0) {
            diffShownFor = JSON.stringify(payload);
            showSlotsDiff(slotsDiff, d, zoneOf(existing));
            submit.textContent = 'Confirm and save';
            return;
          }
        }
        created = editing ? await api('PATCH', `v1/triggers/${existing.id}`, payload) : await api('POST', 'v1/triggers', payload);
      } catch (ex) { placeError(ex); return; }
      if (created.webhook && created.webhook.secret) { showSecret(dlg, form, created); return; }
      dlg.close();
      // A managed trigger's edit is kept, with a warning: its tool will put it back.
      const warned = editing && created.drift ? ` ${(created.warnings || []).join(' ')}` : '';
      toast(editing ? (warned ? `Saved.${warned}` : 'Saved') : `Created ${created.display_name}`);
      refresh();
    });

    // What the builder said when the dialog opened: an edit that leaves it so sends no schedule.
    let initialSchedule = null;
    try { initialSchedule = JSON.stringify(buildSchedule()); } catch (e) { initialSchedule = null; }
    const dlg = dialog(editing ? `Edit ${existing.display_name}` : 'New trigger', form);
    dlg.classList.add('wide');
    showParts(); wfChanged(); syncKind();
    title.focus();
  }

  function showSlotsDiff(box, d, tz) {
    const list = (label, items, count) => h('div', {}, h('strong', {}, `${label}: ${count}`),
      h('ul', {}, items.slice(0, 5).map((at) => h('li', {}, h('time', { datetime: at }, fmtAt(at, tz)))),
        count > 5 ? h('li', {}, `… and ${count - 5} more`) : null));
    box.replaceChildren(
      h('p', {}, `Over the next ${d.days || 30} days this edit changes the fires: check them, then save again.`),
      list('Fires added', d.added || [], d.added_count || 0),
      list('Fires removed', d.removed || [], d.removed_count || 0));
    box.hidden = false;
  }

  const SETUP = {
    webhook: ['POST the payload to the URL.', 'Sign it: header X-Signature-256: sha256=<hex HMAC-SHA256 of the raw body with the secret>.', 'The same body sent twice is one delivery (dedupe on its digest): put an id of your own in the body to send identical content again on purpose.'],
    linkedin: ['Developer portal → your app → Webhooks: register the URL (LinkedIn validates it with a challenge, answered automatically).', 'The secret is the app’s client secret (given on create).'],
    github: ['Repository → Settings → Webhooks → Add webhook.', 'Payload URL: the URL above; Content type: application/json.', 'Secret: the secret above; choose the events.'],
    stripe: ['Dashboard → Developers → Webhooks → Add endpoint with the URL.', 'The signing secret is Stripe’s own (given on create).'],
    slack: ['api.slack.com → your app → Event Subscriptions → Request URL: the URL.', 'The signing secret is the app’s (given on create).'],
    standard: ['Register the URL with the sender.', 'Give it the secret (whsec_…) for Standard Webhooks signing.'],
    shopify: ['Settings → Notifications → Webhooks → Create webhook with the URL.', 'The secret is the app’s client secret (given on create).'],
  };

  function copyButton(label, input) {
    return h('button', { type: 'button', onclick: async () => {
      try { await navigator.clipboard.writeText(input.value); toast(`${label.replace('Copy ', '')} copied`); } catch (e) { input.select(); document.execCommand('copy'); toast('Copied'); }
    } }, label);
  }

  function showSecret(dlg, form, created) {
    const url = h('input', { readonly: true, value: created.webhook.url, spellcheck: 'false' });
    const secret = h('input', { readonly: true, value: created.webhook.secret, spellcheck: 'false' });
    const source = (created.event && created.event.source) || 'webhook';
    const panel = h('section', { class: 'stack secret-panel', 'aria-label': 'Webhook details' },
      h('p', { class: 'warning', role: 'alert' }, h('strong', {}, 'Copy the secret now: it will not be shown again.'), ' Anyone with it can send events that run this workflow.'),
      h('div', { class: 'copy-row' }, field('Webhook URL', url), copyButton('Copy URL', url)),
      h('div', { class: 'copy-row' }, field('Signing secret', secret), copyButton('Copy secret', secret)),
      h('h3', {}, `Set up ${source}`), h('ol', {}, (SETUP[source] || SETUP.webhook).map((s) => h('li', {}, s))),
      h('div', { class: 'actions' }, h('button', { type: 'button', class: 'primary', onclick: () => { dlg.close(); refresh(); } }, 'Done')));
    form.replaceWith(panel);
    secret.focus();
  }

  // -- previews -----------------------------------------------------------------------

  function dstMarks(answer, tz) {
    const marks = new Map();
    if (Array.isArray(answer.dst)) {
      for (const d of answer.dst) marks.set(d.at, `DST ${d.change} (policy ${d.policy})`);
      return { marks, server: true };
    }
    // Without the server's dst field: mark a fire whose UTC offset differs from the one before.
    const fires = answer.fires || [];
    for (let i = 1; i < fires.length; i += 1) {
      const before = offsetOf(fires[i - 1], tz); const now = offsetOf(fires[i], tz);
      if (before && now && before !== now) marks.set(fires[i], `DST: offset ${before} → ${now}`);
    }
    return { marks, server: false };
  }

  function previewTable(answer, tz, caption) {
    const { marks, server } = dstMarks(answer, tz);
    const fires = answer.fires || [];
    const rows = fires.map((f, i) => h('tr', { class: marks.has(f) ? 'dst' : '' },
      h('td', {}, String(i + 1)), h('td', {}, fmtAt(f, tz)), h('td', {}, fmtAt(f, 'UTC')),
      h('td', {}, marks.has(f) ? h('span', { class: 'dst-mark' }, marks.get(f)) : '')));
    if (server) {
      for (const d of answer.dst) {
        if (d.change === 'skipped' && !fires.includes(d.at)) {
          rows.push(h('tr', { class: 'dst' }, h('td', {}, '—'), h('td', {}, fmtAt(d.at, tz)), h('td', {}, fmtAt(d.at, 'UTC')), h('td', {}, h('span', { class: 'dst-mark' }, `DST skipped (policy ${d.policy}): no fire`))));
        }
      }
    }
    const head = answer.cadence ? h('p', { class: 'cadence' }, answer.cadence) : null;
    return h('div', {}, head, table(caption, ['#', `In ${tz}`, 'UTC', 'DST'], rows, 'No future fires.'));
  }

  // -- trigger page -------------------------------------------------------------------

  async function triggerPage(id) {
    render(h('p', { class: 'muted' }, 'Loading…'));
    let t;
    try { t = await api('GET', `v1/triggers/${encodeURIComponent(id)}`); } catch (e) { render(h('h1', {}, 'Trigger'), errorBox(e)); return; }
    const tz = zoneOf(t);
    const reload = h('button', { type: 'button', class: 'quiet', onclick: () => refresh() }, 'Refresh');
    const actions = !can('operator') ? h('div', { class: 'toolbar' }, reload) : h('div', { class: 'toolbar', role: 'toolbar', 'aria-label': 'Trigger actions' },
      reload,
      h('button', { type: 'button', onclick: () => openTriggerDialog(t) }, 'Edit'),
      t.status === 'active'
        ? h('button', { type: 'button', onclick: () => pauseDialog(1, async (note) => { await api('POST', `v1/triggers/${t.id}/disable`, { note }); toast('Paused'); refresh(); }) }, 'Pause')
        : h('button', { type: 'button', onclick: async () => { try { await api('POST', `v1/triggers/${t.id}/enable`); toast('Resumed'); refresh(); } catch (e) { toast(e.message); } } }, 'Resume'),
      h('button', { type: 'button', disabled: t.status !== 'active', onclick: () => fireNow(t) }, 'Fire now'),
      t.kind === 'event' ? null : h('button', { type: 'button', onclick: () => backfillDialog(t) }, 'Backfill'),
      h('button', { type: 'button', class: 'danger', onclick: () => confirmDialog('Delete trigger', `Delete ${t.display_name}? This cannot be undone.`, 'Delete', async () => {
        await api('DELETE', `v1/triggers/${t.id}`); location.hash = '#/triggers';
      }) }, 'Delete'));
    const sections = [];
    const section = (titleText, node) => { const sid = nextId('sec'); const s = h('section', { 'aria-labelledby': sid }, h('h2', { id: sid }, titleText), node); sections.push(s); return s; };
    const overview = h('dl', { class: 'facts' },
      dt('Status', statusCell(t)), dt('Cadence', t.cadence), dt('Workflow', t.workflow), dt('Kind', t.kind),
      dt('Next fire', timeCell(t.next_fire_at, tz)), dt('Last error', t.last_run && t.last_run.error ? t.last_run.error : '—'),
      t.webhook_url ? dt('Webhook URL', h('code', {}, t.webhook_url)) : null, dt('Created', `${fmtAt(t.created_at, tz)} by ${t.created_by || '—'}`),
      t.key ? dt('Key', h('code', {}, t.key), t.managed_by ? ` · managed by ${t.managed_by}` : '') : null,
      t.drift ? dt('Drift', `edited outside ${t.managed_by || 'its tool'} at ${fmtAt(t.drift.at, tz)} by ${t.drift.by || '—'} (${(t.drift.fields || []).join(', ')}); its next apply puts the file's values back`) : null);
    section('Overview', overview);
    if (t.kind !== 'event') section('Upcoming fires', upcoming(t));
    if (t.kind !== 'event' || t.run_count) section('Last 7 days', asyncBox(() => lastDays(t)));
    const runsBox = section('Runs', asyncBox(() => runsTable(t)));
    if (t.kind === 'event') {
      section('Events', asyncBox(() => eventsTable(t)));
      section('Deliveries', asyncBox(() => deliveriesTable(t)));
    }
    section('State', h('pre', { class: 'json', tabindex: '0', 'aria-label': 'State as JSON' }, JSON.stringify(t.state || {}, null, 2)));
    section('Budget and limits', limitsList(t));
    if (window.cronhookAlerts) section('Alerts', asyncBox(() => window.cronhookAlerts.triggerSection(kit(), t)));
    if (can('admin')) section('Audit', asyncBox(() => auditTable(t)));
    render(h('p', {}, h('a', { href: '#/triggers' }, '← Triggers')), h('h1', {}, t.display_name), actions, ...sections);
    triggerPage.runsBox = runsBox;
  }

  // A paused or disabled trigger fires nothing: it lists no upcoming fires.
  function upcoming(t) {
    if (t.status !== 'active') {
      return h('p', { class: 'paused-note' }, isDone(t) ? 'Done: it fires no more.' : 'Paused: nothing fires until it is resumed.');
    }
    const tz = zoneOf(t);
    return asyncBox(async () => {
      const [next, month] = await Promise.all([
        api('GET', `v1/triggers/${t.id}/preview?count=5`),
        api('GET', `v1/triggers/${t.id}/preview?count=100`),
      ]);
      const marks = await calendarMarks(t, month);
      return h('div', {}, previewTable(next, tz, 'Next 5 fires'), P().monthCalendar(month.fires, marks, { tz }));
    });
  }

  // The marks a month calendar shows: DST changes from the preview, the preview's
  // `calendar` entries if it has them (holidays, exclusions, moves), and whatever the
  // providers other files register (`cronhook.calendarMarks.push(async (t, preview) => [...])`)
  // give, each `{at, kind, label}`.
  const CALENDAR_MARKS = [];
  async function calendarMarks(t, preview) {
    const marks = (preview.dst || []).map((d) => ({ at: d.at, kind: 'dst', label: `${d.change} (${d.policy})` }));
    for (const c of preview.calendar || []) marks.push({ at: c.at, kind: c.change || 'calendar', label: c.name || c.change || '' });
    for (const provider of CALENDAR_MARKS) {
      try { marks.push(...(await provider(t, preview))); } catch (e) { /* a provider's failure hides only its marks */ }
    }
    return marks;
  }

  // The trigger's runs of the last 7 days (at most 1,000), as a strip and a sparkline.
  async function lastDays(t) {
    const since = Date.now() - 7 * 86400 * 1000;
    const runs = [];
    let cursor = null;
    for (let n = 0; n < 5; n += 1) {
      const page = await api('GET', `v1/triggers/${t.id}/runs` + qs({ limit: 200, cursor }));
      runs.push(...page.items);
      cursor = page.next_cursor;
      const oldest = page.items.length ? runWhen(page.items[page.items.length - 1]) : null;
      if (!cursor || (oldest && new Date(oldest).getTime() < since)) break;
    }
    return h('div', { class: 'pictures' }, P().slotStrip(runs, { days: 7 }), P().sparkline(runs));
  }

  function dt(term, ...value) { return h('div', {}, h('dt', {}, term), h('dd', {}, ...value)); }

  function asyncBox(load) {
    const box = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
    load().then((node) => box.replaceChildren(node), (e) => box.replaceChildren(errorBox(e)));
    return box;
  }

  async function runsTable(t) {
    const tz = zoneOf(t);
    return paged((cursor) => api('GET', `v1/triggers/${t.id}/runs` + qs({ limit: PAGE, cursor })), (items) => {
      const rows = items.map((r) => h('tr', { 'data-run': r.id },
        h('td', {}, runLink(r)), h('td', {}, r.surface), h('td', {}, fmtAt(runWhen(r), tz)),
        h('td', {}, ms(r.lateness_ms)), h('td', {}, duration(r)), h('td', { class: 'err' }, r.error || ''),
        h('td', {}, r.output === null || r.output === undefined ? '' : h('code', { class: 'out' }, JSON.stringify(r.output)))));
      return table('Runs, newest first', ['Status', 'Surface', 'When', 'Lateness', 'Duration', 'Error or reason', 'Output'], rows, 'No runs yet.');
    }, { what: 'Runs' });
  }

  async function fireNow(t) {
    try {
      const answer = await api('POST', `v1/triggers/${t.id}/fire`);
      toast(`Run queued: ${answer.run_id}`);
    } catch (e) { toast(e.message); return; }
    for (let i = 0; i < 6; i += 1) {
      const box = triggerPage.runsBox && triggerPage.runsBox.lastChild;
      if (!box || !document.body.contains(box)) return;
      try { box.replaceChildren(await runsTable(t)); } catch (e) { return; }
      await new Promise((r) => setTimeout(r, 1500));
    }
  }

  async function eventsTable(t) {
    return paged((cursor) => api('GET', `v1/triggers/${t.id}/events` + qs({ limit: PAGE, cursor })), (items) => {
      const rows = items.map((e) => h('tr', {},
        h('td', {}, fmtAt(e.received_at, 'UTC')), h('td', {}, statusBadge(e.status)), h('td', {}, String(e.attempt ?? '')),
        h('td', {}, e.run_id ? h('a', { href: `#/runs/${encodeURIComponent(e.run_id)}`, 'aria-label': `Run ${e.run_id}` }, e.run_id) : ''),
        h('td', {}, can('operator') ? h('button', { type: 'button', 'aria-label': `Replay event ${e.id}`, onclick: async () => {
          try { const a = await api('POST', `v1/events/${e.id}/replay`); toast(`Replayed: ${a.run_id}`); refresh(); } catch (ex) { toast(ex.message); }
        } }, 'Replay') : '')));
      return table('Events, newest first', ['Received (UTC)', 'Status', 'Attempt', 'Run', ''], rows, 'No events yet.');
    }, { what: 'Events' });
  }

  const OUTCOME_TEXT = { accepted: 'accepted', duplicate: 'duplicate (already received)', filtered: 'filtered out', invalid_signature: 'bad signature', stale: 'stale timestamp', too_large: 'too large', throttled: 'throttled' };

  async function deliveriesTable(t) {
    return paged((cursor) => api('GET', `v1/triggers/${t.id}/deliveries` + qs({ limit: PAGE, cursor })), (items) => {
      const rows = items.map((d) => h('tr', { class: d.outcome === 'accepted' ? '' : 'rejected' },
        h('td', {}, fmtAt(d.received_at, 'UTC')), h('td', {}, h('span', { class: `badge o-${d.outcome}` }, OUTCOME_TEXT[d.outcome] || d.outcome)),
        h('td', {}, d.detail || ''), h('td', {}, d.status ? String(d.status) : ''), h('td', {}, `${d.size} B`),
        h('td', {}, h('details', {}, h('summary', {}, 'Headers'), h('pre', {}, JSON.stringify(d.headers, null, 2))))));
      return table('Deliveries, accepted and rejected, newest first', ['Received (UTC)', 'Outcome', 'Cause', 'HTTP', 'Size', 'Headers'], rows, 'No deliveries yet.');
    }, { what: 'Deliveries' });
  }

  async function auditTable(t) {
    return paged((cursor) => api('GET', 'v1/audit' + qs({ trigger_id: t.id, limit: PAGE, cursor })), (items) => {
      const rows = items.map((a) => h('tr', {}, h('td', {}, fmtAt(a.at, 'UTC')), h('td', {}, a.actor), h('td', {}, a.action), h('td', {}, h('code', {}, JSON.stringify(a.detail || {})))));
      return table('Audit entries, newest first', ['At (UTC)', 'Actor', 'Action', 'Detail'], rows, 'No entries.');
    }, { what: 'Audit entries' });
  }

  function limitsList(t) {
    const l = t.limits || {};
    const v = (x) => (x === null || x === undefined ? '—' : String(x));
    return h('dl', { class: 'facts' }, dt('Budget', budgetText(t)), dt('Runs', `${t.run_count}${l.max_runs ? ` of ${l.max_runs}` : ''}`),
      dt('Consecutive failures', `${t.consecutive_failures} (disables at ${v(l.max_failures)})`), dt('Expires', l.expires_at ? fmtAt(l.expires_at, zoneOf(t)) : '—'),
      dt('Overlap', v(t.overlap)), dt('Concurrency', v(t.concurrency)), dt('Serialize key', v(t.serialize_key)),
      dt('Run history', v(t.history)));
  }

  function backfillDialog(t) {
    const from = h('input', { type: 'datetime-local', required: true });
    const to = h('input', { type: 'datetime-local', required: true });
    const els = { from, to };
    const result = h('div', { 'aria-live': 'polite' });
    const run = h('button', { type: 'button', class: 'primary', disabled: true }, 'Run backfill');
    const span = () => ({ from: `${from.value}:00Z`, to: `${to.value}:00Z` });
    const fail = (e) => { if (els[e.field]) showFieldError(els[e.field], e.message); else result.replaceChildren(errorBox(e)); };
    // Run backfill runs the window that was checked: any change to it (or a new check)
    // takes the old count away and disables Run until the new window is checked.
    let checks = 0;
    const forget = () => { checks += 1; run.disabled = true; result.replaceChildren(); };
    const form = h('form', { class: 'stack', onsubmit: async (e) => {
      e.preventDefault(); clearErrors(form); forget();
      const seq = checks;
      try {
        const a = await api('POST', `v1/triggers/${t.id}/backfill`, { ...span(), dry_run: true });
        if (seq !== checks) return; // the window changed while this check ran
        result.replaceChildren(h('p', {}, `${a.slots} slot(s) from ${fmtAt(a.first, zoneOf(t))} to ${fmtAt(a.last, zoneOf(t))}; estimated cost $${Number(a.estimated_usd || 0).toFixed(2)}.`));
        run.disabled = a.slots === 0;
      } catch (ex) { if (seq === checks) fail(ex); }
    } }, h('p', {}, 'Run the missed slots of a window. Check first: the count and cost are shown before anything runs.'),
    field('From (UTC)', from), field('To (UTC)', to), result,
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Check'), run));
    for (const input of [from, to]) {
      input.addEventListener('input', () => { clearErrors(form); forget(); });
      input.addEventListener('change', () => { clearErrors(form); forget(); });
    }
    run.addEventListener('click', async () => {
      try { const a = await api('POST', `v1/triggers/${t.id}/backfill`, span()); toast(`Backfill queued: ${a.slots} slot(s)`); dlg.close(); refresh(); } catch (ex) { fail(ex); }
    });
    const dlg = dialog(`Backfill ${t.display_name}`, form);
    from.focus();
  }

  // -- activity and health ------------------------------------------------------------

  const A = { surface: '', status: '', window: '' };
  const WINDOWS = [['', 'Any time'], ['3600', 'Last hour'], ['86400', 'Last 24 hours'], ['604800', 'Last 7 days']];

  const NAMES = new Map();

  async function nameTriggers(links) {
    for (const a of links) {
      const id = a.dataset.triggerId;
      if (!NAMES.has(id)) NAMES.set(id, api('GET', `v1/triggers/${encodeURIComponent(id)}`).then((t) => t.display_name, () => null));
      NAMES.get(id).then((name) => { if (name) a.textContent = name; });
    }
  }

  function runsList(items, caption, empty, opts = {}) {
    const live = opts.live;
    const rows = items.map((r) => h('tr', { 'data-run': r.id },
      h('td', {}, h('a', { href: `#/triggers/${encodeURIComponent(r.trigger_id)}`, 'data-trigger-id': r.trigger_id }, r.trigger_id)), h('td', {}, runLink(r)), h('td', {}, r.surface),
      h('td', {}, live ? timeCell(r.started_at, 'UTC') : fmtAt(runWhen(r), 'UTC')), h('td', {}, ms(r.lateness_ms)), h('td', {}, duration(r)), h('td', { class: 'err' }, r.error || '')));
    const out = table(caption, ['Trigger', 'Status', 'Surface', live ? 'Started' : 'When (UTC)', 'Lateness', 'Duration', 'Error or reason'], rows, empty);
    nameTriggers(out.querySelectorAll('a[data-trigger-id]'));
    return out;
  }

  // The runs since `since` (ms; 0: any time), paged back with "Older".
  function pagedRuns(params, caption, empty, since, opts = {}) {
    const inWindow = (r) => !since || (runWhen(r) && new Date(runWhen(r)).getTime() >= since);
    return paged((cursor) => api('GET', 'v1/runs' + qs({ limit: PAGE, ...params, cursor })), (items) => runsList(items, caption, empty, opts),
      { what: caption, keep: inWindow, stopWhen: (r) => !inWindow(r) });
  }

  // The last 24 hours of the tenant's runs (at most 1,000) for the runs-per-hour chart.
  async function hourPicture(surface) {
    const since = Date.now() - 24 * 3600 * 1000;
    const runs = [];
    let cursor = null;
    for (let n = 0; n < 5; n += 1) {
      const page = await api('GET', 'v1/runs' + qs({ limit: 200, surface, cursor }));
      runs.push(...page.items);
      cursor = page.next_cursor;
      const oldest = page.items.length ? runWhen(page.items[page.items.length - 1]) : null;
      if (!cursor || (oldest && new Date(oldest).getTime() < since)) break;
    }
    return P().hourChart(runs);
  }

  async function activityView() {
    NAMES.clear();
    const surface = h('select', { name: 'surface' }, ['', 'schedule', 'event', 'manual', 'backfill'].map((s) => h('option', { value: s, selected: s === A.surface }, s || 'Any')));
    const status = h('select', { name: 'status' }, ['', 'queued', 'running', 'succeeded', 'failed', 'skipped', 'refused', 'budget_exceeded', 'lost'].map((s) => h('option', { value: s, selected: s === A.status }, s || 'Any')));
    const win = h('select', { name: 'window' }, WINDOWS.map(([v, t]) => h('option', { value: v, selected: v === A.window }, t)));
    const filters = h('form', { role: 'search', class: 'filters', 'aria-label': 'Filter runs', onsubmit: (e) => { e.preventDefault(); A.surface = surface.value; A.status = status.value; A.window = win.value; activityView(); } },
      field('Status', status), field('Surface', surface), field('Time window', win), h('button', { type: 'submit' }, 'Apply filters'));
    const since = A.window ? Date.now() - Number(A.window) * 1000 : 0;
    render(h('h1', {}, 'Activity'), filters,
      h('section', { 'aria-label': 'Runs per hour' }, h('h2', {}, 'Runs per hour'), asyncBox(() => hourPicture(A.surface))),
      h('section', { 'aria-label': 'Failures' }, h('h2', {}, 'Failures'), asyncBox(() => pagedRuns({ status: 'failed', surface: A.surface }, 'Failed runs, newest first', 'No failures.', since))),
      h('section', { 'aria-label': 'Running now' }, h('h2', {}, 'Running now'), asyncBox(() => pagedRuns({ status: 'running', surface: A.surface }, 'Running now', 'Nothing running.', 0, { live: true }))),
      h('section', { 'aria-label': 'All runs' }, h('h2', {}, 'All runs'), asyncBox(() => pagedRuns({ surface: A.surface, status: A.status }, 'Runs, newest first', 'No runs.', since))));
  }

  async function healthView() {
    render(h('h1', {}, 'Health'), asyncBox(async () => {
      const x = await api('GET', 'v1/health');
      S.health = x; showBanner(x);
      return h('dl', { class: 'facts' },
        dt('Scheduler', x.stale ? h('strong', { class: 'bad' }, 'not ticking') : h('span', { class: 'good' }, 'ticking')),
        dt('Last tick', x.last_tick_at ? `${fmtAt(x.last_tick_at)} (${fmtRel(x.last_tick_at)})` : 'never'),
        dt('Heartbeat period', `${x.heartbeat_s} s`), dt('Queue depth', x.queue_depth ?? '—'), dt('Dead-letter depth', x.dlq_depth ?? '—'),
        dt('Lateness p99 (last hour)', ms(x.lateness_p99_ms)), dt('Fires in the last hour', `${x.fires_last_hour}${x.fires_capped ? '+' : ''}`));
    }));
  }

  // The helpers other console files use (alerts.js).
  const kit = () => ({ api, h, render, table, errorBox, toast, dialog, confirmDialog, field, showFieldError, clearErrors, can, fmtAt, asyncBox });

  // -- routing ------------------------------------------------------------------------

  // Pages other files add: `cronhook.route(/^#\/alerts$/, page, { nav: 'Alerts' })`; the
  // pattern's groups are the page's arguments (decoded), `nav` adds a link to the menu.
  const ROUTES = [];
  function route(pattern, page, opts = {}) {
    ROUTES.push([pattern, page]);
    if (opts.nav && opts.href) {
      document.getElementById('nav').append(h('a', { href: opts.href }, opts.nav));
    }
  }

  window.cronhook = {
    api, h, qs, table, field, dt, asyncBox, paged, render, errorBox, toast, dialog, confirmDialog,
    statusBadge, runLink, runWhen, timeCell, fmtAt, fmtRel, ms, duration, can, zoneOf, refresh,
    route, calendarMarks: CALENDAR_MARKS, PAGE,
  };

  async function refresh() {
    if (!S.key) { showSignin(); return; }
    if (!S.me) {
      try { await loadMe(); } catch (e) { signOut(e.status === 401 ? 'That key was refused.' : e.message); return; }
    }
    const hash = location.hash || '#/triggers';
    const m = hash.match(/^#\/triggers\/(.+)$/);
    document.querySelectorAll('#nav a').forEach((a) => a.setAttribute('aria-current', hash.startsWith(a.getAttribute('href')) ? 'page' : 'false'));
    const added = ROUTES.find(([pattern]) => pattern.test(hash));
    if (added) await added[1](...hash.match(added[0]).slice(1).map(decodeURIComponent));
    else if (m) await triggerPage(decodeURIComponent(m[1]));
    else if (hash.startsWith('#/activity')) await activityView();
    else if (hash.startsWith('#/health')) await healthView();
    else if (hash.startsWith('#/alerts') && window.cronhookAlerts) await window.cronhookAlerts.view(kit());
    else await triggersView();
  }

  function applyTheme(theme) {
    if (theme) document.documentElement.dataset.theme = theme; else delete document.documentElement.dataset.theme;
    const dark = theme ? theme === 'dark' : matchMedia('(prefers-color-scheme: dark)').matches;
    const b = document.getElementById('theme');
    b.setAttribute('aria-pressed', String(dark));
  }

  document.addEventListener('DOMContentLoaded', () => {
    applyTheme(localStorage.getItem('cronhook.theme'));
    document.getElementById('theme').addEventListener('click', () => {
      const dark = document.getElementById('theme').getAttribute('aria-pressed') === 'true';
      const next = dark ? 'light' : 'dark';
      localStorage.setItem('cronhook.theme', next);
      applyTheme(next);
    });
    document.getElementById('signin-form').addEventListener('submit', async (e) => {
      e.preventDefault();
      const input = document.getElementById('api-key');
      S.key = input.value.trim();
      S.me = null;
      try { await loadMe(); } catch (ex) {
        S.key = null;
        const err = document.getElementById('api-key-error');
        err.textContent = ex.status === 401 ? 'That key was refused.' : ex.message; err.hidden = false;
        input.setAttribute('aria-invalid', 'true'); input.setAttribute('aria-describedby', 'api-key-error');
        return;
      }
      sessionStorage.setItem(KEY_NAME, S.key);
      input.value = '';
      refresh();
    });
    document.getElementById('signout').addEventListener('click', () => signOut());
    window.addEventListener('hashchange', refresh);
    setInterval(pollHealth, 30000);
    refresh();
  });
})();
