/* cronhook console: a run's own page, #/runs/<id> (added through window.cronhook.route).
 *
 * Status, times, lateness, duration, attempts, cost, the error with its traceback, the
 * payload it was given, its output, its log lines, and "Run again" (operators): a manual
 * run with the same payload, whose page then says which run it reran. */
(() => {
  'use strict';

  const C = window.cronhook;
  const { api, h, dt, asyncBox, render, errorBox, toast, statusBadge, fmtAt, ms, can, table } = C;

  function json(value, label) {
    return h('pre', { class: 'json', tabindex: '0', 'aria-label': label }, JSON.stringify(value, null, 2));
  }

  function timesOf(run) {
    const when = (iso) => (iso ? C.timeCell(iso, 'UTC') : '—');
    return [
      dt('Scheduled for', when(run.scheduled_for)),
      dt('Started', when(run.started_at)),
      dt('Finished', when(run.finished_at)),
      dt('Lateness', ms(run.lateness_ms)),
      dt('Duration', C.duration(run)),
    ];
  }

  function errorSection(run) {
    const detail = run.error_detail;
    if (!detail && !run.error) return null;
    const sid = 'run-error';
    return h('section', { 'aria-labelledby': sid }, h('h2', { id: sid }, 'Error'),
      h('p', { class: 'error' }, h('strong', {}, detail ? detail.type : 'Error'), ': ', detail ? detail.message : run.error),
      detail && detail.status ? h('p', {}, `The target answered HTTP ${detail.status}.`) : null,
      detail && detail.traceback
        ? h('pre', { class: 'traceback', tabindex: '0', 'aria-label': 'Traceback' }, detail.traceback)
        : h('p', { class: 'muted' }, 'No traceback was recorded for this run.'));
  }

  function payloadSection(run) {
    const sid = 'run-payload';
    const source = { run: 'Given to this run', event: 'The event’s body', trigger: 'The trigger’s payload (as it is now)' }[run.payload_source] || '';
    return h('section', { 'aria-labelledby': sid }, h('h2', { id: sid }, 'Payload'),
      source ? h('p', { class: 'muted' }, `${source}${run.payload_clipped ? '; clipped to 4 KB' : ''}.`) : null,
      // JSON null is no payload: said so, not printed as a literal "null".
      !run.payload_source ? h('p', { class: 'muted' }, 'Not kept.')
        : (run.payload === null || run.payload === undefined ? h('p', { class: 'muted' }, 'No payload.') : json(run.payload, 'Payload as JSON')));
  }

  async function logsTable(run) {
    const answer = await api('GET', `v1/runs/${encodeURIComponent(run.id)}/logs`);
    const rows = answer.items.map((l) => h('tr', {}, h('td', {}, fmtAt(l.at, 'UTC')), h('td', {}, l.level), h('td', { class: 'log' }, l.message)));
    const link = answer.console_url ? h('p', {}, h('a', { href: answer.console_url, target: '_blank', rel: 'noopener noreferrer' }, 'Open the query in CloudWatch Logs Insights')) : null;
    return h('div', {}, table('Log lines, oldest first', ['At (UTC)', 'Level', 'Message'], rows, answer.complete === false ? 'The query is still running; open it in CloudWatch.' : 'No log lines for this run.'), link);
  }

  async function runAgain(run, button) {
    button.disabled = true;
    try {
      const answer = await api('POST', `v1/runs/${encodeURIComponent(run.id)}/rerun`);
      toast(answer.queued ? `Run again: queued behind the running one (${answer.run_id})` : `Run again: ${answer.run_id}`);
      location.hash = `#/runs/${encodeURIComponent(answer.run_id)}`;
    } catch (e) {
      toast(e.message);
      button.disabled = false;
    }
  }

  async function runPage(id) {
    render(h('p', { class: 'muted' }, 'Loading…'));
    let run;
    try { run = await api('GET', `v1/runs/${encodeURIComponent(id)}`); } catch (e) { render(h('h1', {}, 'Run'), errorBox(e)); return; }
    const back = h('p', {}, h('a', { href: `#/triggers/${encodeURIComponent(run.trigger_id)}`, class: 'trigger-link' }, '← Trigger'));
    C.api('GET', `v1/triggers/${encodeURIComponent(run.trigger_id)}`).then((t) => { back.firstChild.textContent = `← ${t.display_name}`; }, () => {});
    const refresh = h('button', { type: 'button', class: 'quiet', onclick: () => runPage(id) }, 'Refresh');
    const again = can('operator') ? h('button', { type: 'button', class: 'primary' }, 'Run again') : null;
    if (again) again.addEventListener('click', () => runAgain(run, again));
    const facts = h('dl', { class: 'facts' },
      dt('Status', statusBadge(run.status)), dt('Surface', run.surface), dt('Workflow', run.workflow || '—'),
      ...timesOf(run),
      dt('Attempt', String(run.attempt ?? 1)), dt('Cost', `$${Number(run.cost_usd || 0).toFixed(4)}`),
      dt('State written', run.state_written === true ? 'yes' : (run.state_written === false ? 'no' : '—')),
      run.rerun_of ? dt('Rerun of', h('a', { href: `#/runs/${encodeURIComponent(run.rerun_of)}`, 'aria-label': `Run ${run.rerun_of} (the original)` }, run.rerun_of)) : null,
      run.event_id ? dt('Event', h('code', {}, run.event_id)) : null,
      dt('Run id', h('code', {}, run.id)));
    const outputSid = 'run-output';
    const logsSid = 'run-logs';
    render(back, h('h1', {}, `Run `, statusBadge(run.status)),
      h('div', { class: 'toolbar', role: 'toolbar', 'aria-label': 'Run actions' }, refresh, again),
      h('section', { 'aria-label': 'Overview' }, facts),
      errorSection(run),
      payloadSection(run),
      h('section', { 'aria-labelledby': outputSid }, h('h2', { id: outputSid }, 'Output'),
        run.output === null || run.output === undefined ? h('p', { class: 'muted' }, 'No output.') : json(run.output, 'Output as JSON')),
      h('section', { 'aria-labelledby': logsSid }, h('h2', { id: logsSid }, 'Logs'), asyncBox(() => logsTable(run))));
  }

  C.route(/^#\/runs\/(.+)$/, runPage);
})();
