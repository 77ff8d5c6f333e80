/* cronhook console: the pictures, drawn by the page as inline SVG (no library, no CDN).
 *
 * Every picture is a function of the data it is given (runs, fires, marks) and the time
 * `now` (ms): it returns an element, never fetches. Colours come from the stylesheet's
 * variables through classes (`p-<outcome>`), so light and dark themes both apply, and each
 * SVG scales with its box (viewBox, width 100%) down to a phone's width. Each picture has
 * a text alternative (role img and a label, or a list of labelled marks). */
(() => {
  'use strict';

  const NS = 'http://www.w3.org/2000/svg';
  const HOUR = 3600 * 1000;
  const DAY = 24 * HOUR;
  // A slot's outcome, in the order the legends list them.
  const OUTCOMES = ['succeeded', 'late', 'failed', 'skipped', 'missed', 'running'];
  const LABEL = { succeeded: 'succeeded', late: 'late', failed: 'failed', skipped: 'skipped', missed: 'missed', running: 'in flight' };
  // A run that started this much after its slot counts as late.
  const LATE_MS = 60 * 1000;

  function s(tag, attrs, ...kids) {
    const el = document.createElementNS(NS, tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      el.setAttribute(name, value === true ? '' : String(value));
    }
    for (const kid of kids.flat()) {
      if (kid === null || kid === undefined || kid === false) continue;
      el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return el;
  }

  function svg(width, height, attrs, ...kids) {
    return s('svg', { viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: 'none', class: 'pic', ...attrs }, ...kids);
  }

  /** What a run means on a strip: succeeded, late, failed, skipped, missed or running. */
  function outcomeOf(run, lateMs = LATE_MS) {
    switch (run.status) {
      case 'succeeded': return (run.lateness_ms || 0) > lateMs ? 'late' : 'succeeded';
      case 'failed': case 'refused': case 'budget_exceeded': return 'failed';
      case 'skipped': return 'skipped';
      case 'lost': case 'missed': return 'missed';
      default: return 'running';
    }
  }

  /** When a run happened: its slot, else when it started or ended (event runs have no slot). */
  function whenOf(run) {
    const at = run.scheduled_for || run.started_at || run.finished_at;
    return at ? new Date(at).getTime() : null;
  }

  function fmt(ms) {
    try {
      return new Intl.DateTimeFormat('en-GB', { timeZone: 'UTC', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' }).format(new Date(ms));
    } catch (e) { return new Date(ms).toISOString(); }
  }

  function counts(runs, lateMs) {
    const n = {};
    for (const r of runs) { const o = outcomeOf(r, lateMs); n[o] = (n[o] || 0) + 1; }
    return OUTCOMES.filter((o) => n[o]).map((o) => `${n[o]} ${LABEL[o]}`).join(', ') || 'no runs';
  }

  function legend(outcomes) {
    const box = document.createElement('p');
    box.className = 'legend';
    box.setAttribute('aria-hidden', 'true');
    for (const o of outcomes) {
      const key = document.createElement('span');
      key.className = `key p-${o}`;
      box.append(key, ` ${LABEL[o]} `);
    }
    return box;
  }

  /** The slots of the last `days` days on a time axis, one mark per run, coloured by outcome.
   *  `mini` draws the list's small strip (the last runs side by side, no axis). */
  function slotStrip(runs, opts = {}) {
    const now = opts.now || Date.now();
    const days = opts.days || 7;
    const lateMs = opts.lateMs || LATE_MS;
    const from = now - days * DAY;
    const shown = runs.filter((r) => { const at = whenOf(r); return at !== null && at >= from && at <= now + HOUR; });
    const width = 700;
    const height = 40;
    const x = (at) => Math.max(0, Math.min(width - 3, ((at - from) / (now - from)) * width));
    const ticks = [];
    for (let d = 1; d < days; d += 1) ticks.push(s('line', { x1: (d / days) * width, x2: (d / days) * width, y1: 0, y2: height, class: 'tick' }));
    const marks = shown.map((r) => {
      const o = outcomeOf(r, lateMs);
      const at = whenOf(r);
      const label = `${LABEL[o]} — ${fmt(at)}${r.error ? ': ' + r.error : ''}`;
      return s('rect', { x: x(at), y: 4, width: 3, height: height - 8, class: `p-${o}`, 'data-outcome': o, 'data-run': r.id },
        s('title', {}, label));
    });
    const summary = `Last ${days} days of runs: ${counts(shown, lateMs)}`;
    const pic = svg(width, height, { role: 'img', 'aria-label': summary, class: 'pic strip' },
      s('rect', { x: 0, y: 0, width, height, class: 'frame' }), ticks, marks);
    const wrap = document.createElement('figure');
    wrap.className = 'picture';
    const cap = document.createElement('figcaption');
    cap.textContent = `${summary}. Each mark is a run; days run left (oldest) to right (now).`;
    wrap.append(pic, legend(['succeeded', 'late', 'failed', 'skipped', 'missed']), cap);
    return wrap;
  }

  /** The list's small strip: the last runs side by side, oldest first, each a labelled mark. */
  function miniStrip(runs, opts = {}) {
    const lateMs = opts.lateMs || LATE_MS;
    const list = runs.slice(0, opts.count || 10).reverse();
    if (!list.length) {
      const none = document.createElement('span');
      none.className = 'muted';
      none.textContent = 'no runs';
      return none;
    }
    const cell = 9;
    const pic = svg(list.length * cell, 14, { role: 'list', 'aria-label': `Last ${list.length} runs, oldest first`, class: 'pic mini', width: list.length * cell, height: 14 },
      list.map((r, i) => {
        const o = outcomeOf(r, lateMs);
        const when = r.finished_at || r.started_at || r.scheduled_for;
        const label = `${r.status}${when ? ', ' + fmt(new Date(when).getTime()) : ''}${r.error ? ': ' + r.error : ''}`;
        return s('rect', { x: i * cell, y: 1, width: cell - 2, height: 12, rx: 1, class: `p-${o}`, role: 'listitem', 'aria-label': label, 'data-outcome': o }, s('title', {}, label));
      }));
    return pic;
  }

  /** Lateness and duration of the latest runs (oldest left), each on its own scale. */
  function sparkline(runs) {
    const list = runs.filter((r) => r.finished_at).slice(0, 60).reverse();
    const width = 700;
    const height = 60;
    const series = [
      ['lateness_ms', 'lateness', 'p-late-line'],
      ['duration_ms', 'duration', 'p-duration-line'],
    ];
    const value = (r, key) => (key === 'duration_ms' && r.duration_ms == null && r.started_at && r.finished_at
      ? new Date(r.finished_at) - new Date(r.started_at) : r[key]);
    const parts = [];
    const said = [];
    for (const [key, name, cls] of series) {
      const values = list.map((r) => value(r, key)).map((v) => (typeof v === 'number' ? v : null));
      const known = values.filter((v) => v !== null);
      if (!known.length) continue;
      const top = Math.max(1, ...known);
      const step = list.length > 1 ? width / (list.length - 1) : width;
      const xy = values.map((v, i) => (v === null ? null : [list.length > 1 ? i * step : width / 2, height - 4 - (v / top) * (height - 8)]));
      const points = xy.filter(Boolean).map(([px, py]) => `${px.toFixed(1)},${py.toFixed(1)}`);
      parts.push(s('polyline', { points: points.join(' '), class: cls, fill: 'none', 'data-series': name }));
      // A dot per run, so a single run (or a gap) still shows.
      xy.forEach((p) => { if (p) parts.push(s('circle', { cx: p[0].toFixed(1), cy: p[1].toFixed(1), r: 2.5, class: `${cls} dot` })); });
      said.push(`${name} up to ${top >= 1000 ? (top / 1000).toFixed(1) + ' s' : top + ' ms'}`);
    }
    const summary = list.length ? `Last ${list.length} runs, oldest first: ${said.join('; ') || 'no timings'}` : 'No finished runs yet';
    const wrap = document.createElement('figure');
    wrap.className = 'picture';
    const cap = document.createElement('figcaption');
    cap.textContent = `${summary}.`;
    const key = document.createElement('p');
    key.className = 'legend';
    key.setAttribute('aria-hidden', 'true');
    key.append(Object.assign(document.createElement('span'), { className: 'key p-late' }), ' lateness ',
      Object.assign(document.createElement('span'), { className: 'key p-duration' }), ' duration');
    wrap.append(svg(width, height, { role: 'img', 'aria-label': summary, class: 'pic spark' }, s('rect', { x: 0, y: 0, width, height, class: 'frame' }), parts), key, cap);
    return wrap;
  }

  /** Runs per hour over the last 24 hours, stacked by outcome. */
  function hourChart(runs, opts = {}) {
    const now = opts.now || Date.now();
    const start = Math.floor((now - 23 * HOUR) / HOUR) * HOUR;
    const bins = Array.from({ length: 24 }, () => ({}));
    for (const r of runs) {
      const at = whenOf(r);
      if (at === null || at < start) continue;
      const i = Math.min(23, Math.floor((at - start) / HOUR));
      const o = outcomeOf(r);
      bins[i][o] = (bins[i][o] || 0) + 1;
    }
    const totals = bins.map((b) => Object.values(b).reduce((a, n) => a + n, 0));
    const top = Math.max(1, ...totals);
    const width = 720;
    const height = 120;
    const bw = width / 24;
    const bars = [];
    bins.forEach((bin, i) => {
      let y = height - 14;
      for (const o of OUTCOMES) {
        const n = bin[o] || 0;
        if (!n) continue;
        const hgt = (n / top) * (height - 24);
        y -= hgt;
        bars.push(s('rect', { x: i * bw + 2, y, width: bw - 4, height: hgt, class: `p-${o}`, 'data-outcome': o, 'data-hour': i },
          s('title', {}, `${fmt(start + i * HOUR)}: ${n} ${LABEL[o]}`)));
      }
    });
    const labels = [0, 6, 12, 18, 23].map((i) => s('text', { x: i * bw + bw / 2, y: height - 2, class: 'axis', 'text-anchor': 'middle' },
      new Date(start + i * HOUR).toISOString().slice(11, 13) + 'h'));
    const total = totals.reduce((a, n) => a + n, 0);
    const busiest = totals.indexOf(Math.max(...totals));
    const summary = `Runs per hour, last 24 hours (UTC): ${total} in all${total ? `, the most (${totals[busiest]}) at ${new Date(start + busiest * HOUR).toISOString().slice(11, 13)}:00` : ''}`;
    const wrap = document.createElement('figure');
    wrap.className = 'picture';
    const cap = document.createElement('figcaption');
    cap.textContent = `${summary}.`;
    wrap.append(svg(width, height, { role: 'img', 'aria-label': summary, class: 'pic hours' }, bars, labels), legend(['succeeded', 'late', 'failed', 'skipped', 'missed', 'running']), cap);
    return wrap;
  }

  function dayKey(ms, tz) {
    try {
      return new Intl.DateTimeFormat('en-CA', { timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date(ms));
    } catch (e) { return new Date(ms).toISOString().slice(0, 10); }
  }

  /** A month of upcoming fires in the trigger's zone: fires per day, and marks on days.
   *  `marks` is a list of `{at, kind, label}` (kind: `dst`, `holiday`, `excluded`, `moved`,
   *  `skip`, `extra`...): any kind is drawn, with its label; the stylesheet colours the
   *  kinds it knows. */
  function monthCalendar(fires, marks, opts = {}) {
    const tz = opts.tz || 'UTC';
    const now = opts.now || Date.now();
    const first = fires.length ? new Date(fires[0]).getTime() : now;
    const [year, month] = dayKey(first, tz).split('-').map(Number);
    const perDay = new Map();
    for (const f of fires) { const k = dayKey(new Date(f).getTime(), tz); perDay.set(k, (perDay.get(k) || 0) + 1); }
    const marksOn = new Map();
    for (const m of marks || []) {
      const k = dayKey(new Date(m.at).getTime(), tz);
      if (!marksOn.has(k)) marksOn.set(k, []);
      marksOn.get(k).push(m);
    }
    const daysIn = new Date(Date.UTC(year, month, 0)).getUTCDate();
    const lead = (new Date(Date.UTC(year, month - 1, 1)).getUTCDay() + 6) % 7; // Monday first
    const monthName = new Intl.DateTimeFormat('en-GB', { month: 'long', year: 'numeric', timeZone: 'UTC' }).format(new Date(Date.UTC(year, month - 1, 1)));
    const el = (tag, attrs, ...kids) => {
      const x = document.createElement(tag);
      for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) x.setAttribute(k, v);
      x.append(...kids.flat().filter((k) => k !== null && k !== undefined));
      return x;
    };
    const head = el('tr', {}, ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'].map((d) => el('th', { scope: 'col' }, d)));
    const rows = [];
    let cells = Array.from({ length: lead }, () => el('td', { class: 'pad' }));
    for (let d = 1; d <= daysIn; d += 1) {
      const k = `${year}-${String(month).padStart(2, '0')}-${String(d).padStart(2, '0')}`;
      const n = perDay.get(k) || 0;
      const dayMarks = marksOn.get(k) || [];
      const label = [`${d} ${monthName}`, n ? `${n} fire${n > 1 ? 's' : ''}` : 'no fires', ...dayMarks.map((m) => `${m.kind}: ${m.label}`)].join(', ');
      cells.push(el('td', { class: n ? 'fires' : '', 'aria-label': label, title: label, 'data-day': k },
        el('span', { class: 'day' }, String(d)),
        n ? el('span', { class: 'count' }, n > 99 ? '99+' : String(n)) : null,
        dayMarks.length ? el('span', { class: 'marks' }, dayMarks.map((m) => el('span', { class: `cal-mark k-${m.kind}`, 'data-kind': m.kind }, m.kind === 'dst' ? 'DST' : m.kind))) : null));
      if (cells.length === 7) { rows.push(el('tr', {}, cells)); cells = []; }
    }
    if (cells.length) rows.push(el('tr', {}, cells, Array.from({ length: 7 - cells.length }, () => el('td', { class: 'pad' }))));
    return el('div', { class: 'table-wrap calendar' }, el('table', {},
      el('caption', {}, `Upcoming fires in ${monthName} (${tz})`), el('thead', {}, head), el('tbody', {}, rows)));
  }

  window.cronhookPictures = { outcomeOf, whenOf, slotStrip, miniStrip, sparkline, hourChart, monthCalendar, OUTCOMES, LATE_MS };
})();
