/* cronhook console: the Alerts page (#/alerts) and the alert state on a trigger's page.
 *
 * Loaded after console.js, which calls window.cronhookAlerts.view(kit) for #/alerts and
 * window.cronhookAlerts.triggerSection(kit, trigger) on a trigger's page; ``kit`` carries
 * console.js's helpers (api, h, render, table...). Built with h() only: no innerHTML. */
(() => {
  'use strict';

  const KINDS = ['failed', 'disabled', 'recovered', 'late', 'no_event', 'budget'];

  function channelText(c) {
    const to = c.to ? c.to.join(', ') : (c.host || c.url || c.topic_arn || '');
    return `${c.type}${to ? ': ' + to : ''}`;
  }

  function matchText(m) {
    const parts = Object.entries(m || {}).filter(([, v]) => v && v.length).map(([k, v]) => `${k}: ${v.join(', ')}`);
    return parts.length ? parts.join('; ') : 'every trigger';
  }

  function outcomeBadge(k, outcome) {
    const status = { sent: 'succeeded', failed: 'failed', suppressed: 'skipped', pending: 'queued' }[outcome] || outcome;
    return k.h('span', { class: `badge s-${status}` }, outcome);
  }

  function notificationRows(k, items) {
    return items.map((n) => k.h('tr', {},
      k.h('td', {}, k.fmtAt(n.at)), k.h('td', {}, n.kind),
      k.h('td', {}, n.trigger_id ? k.h('a', { href: `#/triggers/${encodeURIComponent(n.trigger_id)}` }, n.trigger_id) : '—'),
      k.h('td', {}, n.channel), k.h('td', {}, outcomeBadge(k, n.outcome)), k.h('td', {}, n.error || '')));
  }

  function notificationsTable(k, caption, items) {
    return k.table(caption, ['At', 'Kind', 'Trigger', 'Channel', 'Outcome', 'Error'], notificationRows(k, items), 'No notifications yet.');
  }

  async function sendTest(k, p) {
    try {
      const answer = await k.api('POST', `v1/alerts/${p.id}/test`);
      k.toast(`Test sent on ${answer.channels} channel(s); outcomes below in a few seconds.`);
    } catch (e) { k.toast(e.message); }
  }

  function policyRow(k, p) {
    const admin = k.can('admin');
    return k.h('tr', {},
      k.h('th', { scope: 'row' }, p.name), k.h('td', {}, p.on.join(', ')), k.h('td', {}, matchText(p.match)),
      k.h('td', {}, p.channels.length ? p.channels.map(channelText).join(' · ') : 'bus only'),
      k.h('td', {}, !admin ? '' : k.h('span', { class: 'toolbar' },
        k.h('button', { type: 'button', disabled: !p.channels.length, onclick: () => sendTest(k, p) }, 'Send a test'),
        k.h('button', { type: 'button', class: 'danger', onclick: () => k.confirmDialog('Delete alert policy', `Delete ${p.name}?`, 'Delete', async () => {
          await k.api('DELETE', `v1/alerts/${p.id}`); view(k);
        }) }, 'Delete'))));
  }

  function input(attrs) { return Object.assign(document.createElement('input'), attrs); }

  function policyForm(k) {
    const name = input({ name: 'name', required: true });
    const kinds = KINDS.map((kind) => input({ type: 'checkbox', name: 'on', value: kind, checked: ['failed', 'disabled', 'recovered'].includes(kind) }));
    const inRow = input({ name: 'failures_in_a_row', type: 'number', min: 1, value: 1 });
    const quiet = input({ name: 'quiet_s', type: 'number', min: 0, value: 3600 });
    const tags = input({ name: 'tags', placeholder: 'client-7, nightly' });
    const email = input({ name: 'email', type: 'email', placeholder: 'ops@example.com' });
    const slack = input({ name: 'slack', type: 'url', placeholder: 'https://hooks.slack.com/services/…' });
    const hook = input({ name: 'webhook', type: 'url', placeholder: 'https://ops.example.com/cronhook' });
    const fields = { name, failures_in_a_row: inRow, quiet_s: quiet, 'match.tags': tags };
    const err = k.h('div');
    const form = k.h('form', { class: 'stack', 'aria-label': 'New alert policy' },
      k.field('Name', name),
      k.h('fieldset', {}, k.h('legend', {}, 'Tell someone when a trigger…'),
        ...kinds.map((box) => k.h('label', { class: 'inline' }, box, ` ${box.value}`))),
      k.field('Failures in a row', inRow), k.field('Quiet period (seconds)', quiet),
      k.field('Only triggers tagged (comma-separated; empty: every trigger)', tags),
      k.field('Email', email), k.field('Slack incoming webhook URL', slack), k.field('Webhook URL (signed)', hook),
      err, k.h('div', { class: 'actions' }, k.h('button', { type: 'submit' }, 'Create policy')));
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      k.clearErrors(form); err.replaceChildren();
      const channels = [];
      if (email.value) channels.push({ type: 'email', to: [email.value] });
      if (slack.value) channels.push({ type: 'slack', webhook_url: slack.value });
      if (hook.value) channels.push({ type: 'webhook', url: hook.value });
      // An empty or unreadable number is refused here, never sent as 0.
      const number = (el, what) => {
        if (el.value !== '' && !el.validity.badInput) return Number(el.value);
        k.showFieldError(el, `Enter ${what}.`);
        return null;
      };
      const failuresInARow = number(inRow, 'how many failures in a row alert (1 or more)');
      const quietS = number(quiet, 'the quiet period in seconds (0 for none)');
      if (failuresInARow === null || quietS === null) return;
      const body = {
        name: name.value, on: kinds.filter((b) => b.checked).map((b) => b.value),
        failures_in_a_row: failuresInARow, quiet_s: quietS,
        match: { tags: tags.value.split(',').map((t) => t.trim()).filter(Boolean) }, channels,
      };
      try {
        const created = await k.api('POST', 'v1/alerts', body);
        if (created.signing_secret) {
          k.dialog('Webhook signing secret', k.h('p', {}, 'Shown only this once: verify the Standard Webhooks signature with it.'),
            k.h('pre', { class: 'json', tabindex: '0' }, created.signing_secret));
        }
        k.toast(`Created ${created.name}`);
        view(k);
      } catch (ex) {
        const target = fields[ex.field];
        if (target) k.showFieldError(target, ex.message); else err.replaceChildren(k.errorBox(ex));
      }
    });
    return form;
  }

  async function view(k) {
    k.render(k.h('h1', {}, 'Alerts'), k.h('p', { class: 'muted' }, 'Loading…'));
    let policies;
    try { policies = (await k.api('GET', 'v1/alerts')).items; } catch (e) { k.render(k.h('h1', {}, 'Alerts'), k.errorBox(e)); return; }
    const sections = [k.h('h1', {}, 'Alerts'),
      k.table('Alert policies', ['Name', 'On', 'Triggers', 'Channels', ''], policies.map((p) => policyRow(k, p)), 'No alert policy: nobody is told when a trigger fails.')];
    for (const p of policies) {
      sections.push(k.h('section', {}, k.h('h2', {}, `Last notifications: ${p.name}`), k.asyncBox(async () => {
        const page = await k.api('GET', `v1/alerts/${p.id}/notifications?limit=20`);
        return notificationsTable(k, `Notifications of ${p.name}`, page.items);
      })));
    }
    if (k.can('admin')) sections.push(k.h('section', {}, k.h('h2', {}, 'New alert policy'), policyForm(k)));
    k.render(...sections);
  }

  function covers(p, t) {
    const m = p.match || {};
    if (m.tags && m.tags.length && !m.tags.some((tag) => (t.tags || []).includes(tag))) return false;
    if (m.workflows && m.workflows.length && !m.workflows.includes(t.workflow)) return false;
    return !(m.trigger_ids && m.trigger_ids.length && !m.trigger_ids.includes(t.id));
  }

  async function triggerSection(k, t) {
    const policies = (await k.api('GET', 'v1/alerts')).items.filter((p) => covers(p, t));
    if (!policies.length) return k.h('p', { class: 'muted' }, 'No alert policy covers this trigger. ', k.h('a', { href: '#/alerts' }, 'Alerts'));
    const mine = [];
    for (const p of policies) {
      const page = await k.api('GET', `v1/alerts/${p.id}/notifications?limit=50`);
      mine.push(...page.items.filter((n) => n.trigger_id === t.id));
    }
    return k.h('div', {},
      k.h('p', {}, `Covered by: ${policies.map((p) => `${p.name} (${p.on.join(', ')})`).join('; ')}`),
      notificationsTable(k, 'This trigger’s notifications', mine.slice(0, 10)));
  }

  window.cronhookAlerts = { view, triggerSection };
})();
