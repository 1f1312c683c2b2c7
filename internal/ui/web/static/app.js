// cadre board. Every text from the journal (titles, agents' output,
// reasons) goes into the page through text nodes and textContent, never as
// HTML: agents and issue authors write it.
'use strict';
(() => {
  const $ = (sel) => document.querySelector(sel);
  const enc = encodeURIComponent;
  const S = {
    repos: [], repo: '', runs: [], run: '', board: null, cards: new Map(), es: null, seq: 0,
    view: 'board', item: '', token: '', refreshTimer: 0, itemTimer: 0, painted: false,
  };
  // Measurements read by the browser tests and the benchmark.
  const M = window.__cadre = { firstPaint: null, latencies: [], events: 0, refreshes: 0 };

  function el(tag, attrs, ...kids) {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') n.className = v;
      else if (k.startsWith('on')) n.addEventListener(k.slice(2), v);
      else n.setAttribute(k, v === true ? '' : String(v));
    }
    for (const kid of kids.flat()) {
      if (kid === undefined || kid === null || kid === false) continue;
      n.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return n;
  }
  const money = (u) => '$' + ((u && u.cost_usd) || 0).toFixed(4);
  // 33500 reads 33.5k: cards are read at a glance.
  const short = (n) => (n >= 1000 ? (n / 1000).toFixed(1).replace(/\.0$/, '') + 'k' : String(n));
  const tokens = (u) => short((u && u.input_tokens) || 0) + '/' + short((u && u.output_tokens) || 0) + ' tok';
  const safeURL = (s) => (/^https?:\/\//i.test(s || '') ? s : null);

  function say(msg) {
    const m = $('#message');
    m.textContent = msg || '';
    m.hidden = !msg;
  }

  async function getJSON(url) {
    const r = await fetch(url, { headers: { Accept: 'application/json' } });
    if (!r.ok) throw new Error(url + ': ' + r.status + ' ' + (await r.text()));
    return r.json();
  }

  async function post(url, body) {
    const r = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + S.token },
      body: JSON.stringify(body || {}),
    });
    const text = await r.text();
    if (!r.ok) {
      say(r.status === 403 ? 'Refused (403): paste the token cadre printed into the token field.' : 'Failed (' + r.status + '): ' + text);
      return false;
    }
    say('');
    return true;
  }

  // --- token: from the link's fragment (#token=…), kept for the tab only.
  function initToken() {
    const m = location.hash.match(/[#&]token=([^&]+)/);
    if (m) {
      sessionStorage.setItem('cadre-token', decodeURIComponent(m[1]));
      history.replaceState(null, '', location.pathname + location.search + '#/');
    }
    S.token = sessionStorage.getItem('cadre-token') || '';
    const input = $('#token');
    input.value = S.token;
    input.addEventListener('change', () => {
      S.token = input.value.trim();
      sessionStorage.setItem('cadre-token', S.token);
    });
  }

  // --- routing: #/repo/REPO/run/RUN, …/run/RUN/item/ITEM, …/run/RUN/cost;
  // a route without #/repo/REPO is the board's first repository.
  function route() {
    let parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
    let repo = '', run = '', view = 'board', item = '';
    if (parts[0] === 'repo' && parts[1]) { repo = parts[1]; parts = parts.slice(2); }
    if (parts[0] === 'run' && parts[1]) {
      run = parts[1];
      if (parts[2] === 'item' && parts[3]) { view = 'item'; item = parts.slice(3).join('/'); }
      else if (parts[2] === 'cost') view = 'cost';
    }
    return { repo, run, view, item };
  }

  // The API and the page's links of the repository shown.
  const api = () => '/api/repos/' + enc(S.repo);
  const runHref = (run) => '#/repo/' + enc(S.repo) + '/run/' + enc(run);

  async function navigate() {
    const r = route();
    if (!S.repos.length) await loadRepos();
    const repo = r.repo || (S.repos[0] && S.repos[0].key) || '';
    if (repo !== S.repo) {
      // Another journal: its runs, snapshot and event numbers are its own.
      if (S.es) S.es.close();
      S.es = null; S.run = ''; S.runs = []; S.board = null; S.cards.clear();
      S.repo = repo;
    }
    renderRepoPicker();
    await loadRuns();
    let run = r.run || (S.runs[0] && S.runs[0].id) || '';
    const changed = run !== S.run;
    S.run = run; S.view = r.view; S.item = r.item;
    document.body.dataset.view = S.view;
    renderRunPicker();
    if (!run) {
      $('#view').replaceChildren(el('p', {}, 'No run in this journal yet: start one with cadre run.'));
      $('#run-status').textContent = '';
      $('#stop').hidden = true;
      return;
    }
    if (changed) {
      if (S.es) S.es.close();
      S.es = null;
      S.board = null;
      S.cards.clear();
    }
    if (S.view === 'board') await refreshBoard(true);
    else if (S.view === 'item') { await refreshBoard(false); await showItem(); }
    else { await refreshBoard(false); await showCost(); }
    if (changed || !S.es) connect();
  }

  async function loadRepos() {
    try {
      S.repos = await getJSON('/api/repos');
    } catch (e) { say(String(e)); }
  }

  // The picker shows only on a board of several repositories.
  function renderRepoPicker() {
    const sel = $('#repos');
    sel.hidden = S.repos.length < 2;
    sel.replaceChildren(...S.repos.map((r) => el('option', { value: r.key, selected: r.key === S.repo, title: r.dir },
      r.name + ' · ' + r.runs + (r.runs === 1 ? ' run' : ' runs') + (r.running ? ' · ' + r.running + ' running' : ''))));
    sel.onchange = () => { location.hash = '#/repo/' + enc(sel.value); };
  }

  async function loadRuns() {
    if (!S.repo) return;
    try {
      S.runs = await getJSON(api() + '/runs');
    } catch (e) { say(String(e)); }
  }

  function renderRunPicker() {
    const sel = $('#runs');
    sel.replaceChildren(...S.runs.map((r) => el('option', { value: r.id, selected: r.id === S.run }, r.id + ' · ' + r.status)));
    sel.onchange = () => { location.hash = runHref(sel.value); };
    const nav = $('#run-nav');
    if (!S.run) { nav.replaceChildren(); return; }
    nav.replaceChildren(
      el('a', { href: runHref(S.run), id: 'nav-board' }, 'board'),
      el('a', { href: runHref(S.run) + '/cost', id: 'nav-cost' }, 'cost'));
  }

  function renderRunStatus() {
    const b = S.board;
    if (!b) return;
    $('#run-status').textContent = b.run.status + ' · ' + money(b.usage);
    $('#run-status').dataset.status = b.run.status;
    const stop = $('#stop');
    stop.hidden = b.run.status !== 'running';
    stop.onclick = async () => {
      if (await post(api() + '/runs/' + enc(S.run) + '/stop')) say('Stop requested: running steps finish, no new step starts.');
    };
  }

  // --- board
  async function refreshBoard(render) {
    let b;
    try {
      b = await getJSON(api() + '/runs/' + enc(S.run));
    } catch (e) { say(String(e)); return; }
    M.refreshes++;
    S.board = b;
    if (!S.es) S.seq = b.seq;
    renderRunStatus();
    if (S.view === 'board' && (render || !$('.board'))) renderBoard();
    else if (S.view === 'board') b.items.forEach(updateCard);
  }

  function scheduleRefresh() {
    if (S.refreshTimer) return;
    S.refreshTimer = setTimeout(() => { S.refreshTimer = 0; refreshBoard(false); }, 250);
  }

  function renderBoard() {
    const b = S.board;
    S.cards.clear();
    const cols = b.columns.map((c) => el('section', { class: 'column', 'data-column': c.id },
      el('h2', {}, c.title, el('span', { class: 'count' }, '')),
      el('div', { class: 'cards' })));
    const board = el('div', { class: 'board', id: 'board' }, cols);
    $('#view').replaceChildren(board);
    b.items.forEach(updateCard);
    counts();
    if (!S.painted) {
      S.painted = true;
      requestAnimationFrame(() => { M.firstPaint = performance.now(); });
    }
  }

  function column(id) { return document.querySelector('.column[data-column="' + id + '"] .cards'); }

  function counts() {
    document.querySelectorAll('.column').forEach((c) => {
      c.querySelector('.count').textContent = String(c.querySelectorAll('.card').length);
    });
  }

  function updateCard(c) {
    let card = S.cards.get(c.id);
    if (!card) {
      card = { data: {}, node: null };
      S.cards.set(c.id, card);
    }
    Object.assign(card.data, c);
    const d = card.data;
    const node = el('div', { class: 'card', 'data-item': d.id, 'data-status': d.status, 'data-column': d.column },
      el('a', { class: 'title', href: runHref(S.run) + '/item/' + enc(d.id) }, d.title || d.id),
      el('div', { class: 'meta' }, d.id + ' · ' + d.status + (d.role ? ' · ' + d.role + ' → ' + (d.runner || '') + (d.model ? '/' + d.model : '') : '')),
      el('div', { class: 'meta' }, tokens(d.usage) + ' · ' + money(d.usage) + (d.attempts ? ' · attempt ' + d.attempts : '')),
      d.pr ? prLine(d) : null,
      d.reason ? el('div', { class: 'reason' }, d.reason) : null,
      d.column === 'paused' && d.waiting ? approveButtons(d.id, () => '') : null);
    const target = column(d.column) || column('queued');
    if (card.node && card.node.parentNode === target) card.node.replaceWith(node);
    else {
      if (card.node) card.node.remove();
      if (target) target.append(node);
    }
    card.node = node;
  }

  // prLine is a card's pull request: its link, and where it stands when
  // the board could ask GitHub (state, checks, review, mergeability).
  function prLine(d) {
    const bits = [];
    if (d.pr_state) bits.push(d.pr_state === 'open' ? 'following' : d.pr_state);
    if (d.checks && d.checks !== 'none') bits.push('checks ' + d.checks);
    if (d.review && d.review !== 'none') bits.push(d.review.replace('_', ' '));
    if (d.pr_state === 'open' && d.mergeable === false) bits.push('conflicts');
    if (d.pr_state === 'open' && d.mergeable === true) bits.push('merges cleanly');
    // A tracker's issue is named beside its pull request; its link only
    // when it is a web address.
    const issue = !d.issue ? null : /^https?:\/\//.test(d.issue_url || '')
      ? el('a', { class: 'issue', href: d.issue_url, rel: 'noopener noreferrer', target: '_blank' }, d.issue)
      : el('span', { class: 'issue' }, d.issue);
    return el('div', { class: 'pr', 'data-pr-state': d.pr_state || '' },
      issue, issue ? ' · ' : null,
      el('a', { href: d.pr, rel: 'noopener noreferrer', target: '_blank' }, 'PR #' + (d.pr_number || '')),
      bits.length ? ' · ' + bits.join(' · ') : '');
  }

  function approveButtons(item, note) {
    return el('div', { class: 'actions' },
      el('button', { class: 'approve', type: 'button', onclick: () => answer(item, true, note()) }, 'Approve'),
      el('button', { class: 'reject', type: 'button', onclick: () => answer(item, false, note()) }, 'Reject'));
  }

  async function answer(item, approve, note) {
    if (await post(api() + '/runs/' + enc(S.run) + '/items/' + enc(item) + '/approve', { approve, note })) {
      say((approve ? 'Approved ' : 'Rejected ') + item + '.');
      scheduleRefresh();
    }
  }

  // --- live events
  function connect() {
    if (S.es) S.es.close();
    const conn = $('#conn');
    const es = new EventSource(api() + '/events?run=' + enc(S.run) + '&after=' + S.seq);
    S.es = es;
    es.onopen = () => {
      conn.textContent = 'live'; conn.className = 'conn live';
      scheduleRefresh(); // what changed while the stream was down
    };
    es.onerror = () => {
      conn.textContent = 'reconnecting…'; conn.className = 'conn down';
      if (es.readyState === EventSource.CLOSED) setTimeout(() => { if (S.es === es) connect(); }, 1000);
    };
    es.onmessage = (m) => apply(JSON.parse(m.data));
  }

  function apply(ev) {
    M.events++;
    if (ev.time) M.latencies.push(Date.now() - Date.parse(ev.time));
    if (ev.seq > S.seq) S.seq = ev.seq;
    if (ev.run !== S.run) return;
    const card = ev.item ? S.cards.get(ev.item) : null;
    if (card) {
      const patch = {};
      if (ev.column) patch.column = ev.column;
      switch (ev.type) {
        case 'stepStarted':
          if (ev.role) Object.assign(patch, { role: ev.role, runner: ev.runner, model: ev.model, status: 'running' });
          break;
        case 'stepCompleted':
        case 'stepFailed':
          if (ev.usage) {
            const u = Object.assign({}, card.data.usage || {});
            for (const k of ['input_tokens', 'output_tokens', 'cost_usd']) u[k] = (u[k] || 0) + (ev.usage[k] || 0);
            patch.usage = u;
          }
          break;
        case 'taskStarted': patch.status = 'running'; break;
        case 'taskCompleted': Object.assign(patch, { status: 'completed', role: '' }); break;
        case 'taskFailed': Object.assign(patch, { status: 'failed', reason: ev.error || '', role: '' }); break;
        case 'itemPaused': Object.assign(patch, { status: 'paused', reason: ev.message || '', role: '' }); break;
        case 'itemResumed': Object.assign(patch, { status: 'pending', reason: '' }); break;
      }
      if (Object.keys(patch).length && S.view === 'board') { updateCard(Object.assign({ id: ev.item }, patch)); counts(); }
      else if (Object.keys(patch).length) Object.assign(card.data, patch);
    } else if (ev.item) {
      scheduleRefresh(); // an item the snapshot did not have
    }
    if (['runStarted', 'runCompleted', 'itemPaused', 'itemResumed', 'taskCompleted', 'taskFailed'].includes(ev.type)) scheduleRefresh();
    if (S.view === 'item' && ev.item === S.item) scheduleItem();
    if (S.view === 'cost' && ev.type === 'stepCompleted') scheduleCost();
  }

  // --- item page
  function scheduleItem() {
    if (S.itemTimer) return;
    S.itemTimer = setTimeout(() => { S.itemTimer = 0; showItem(); }, 300);
  }

  async function showItem() {
    let d;
    try {
      d = await getJSON(api() + '/runs/' + enc(S.run) + '/items/' + enc(S.item));
    } catch (e) { say(String(e)); return; }
    let images = [];
    try {
      images = await getJSON(api() + '/runs/' + enc(S.run) + '/items/' + enc(S.item) + '/assets');
    } catch (e) { /* the page goes without its images */ }
    const it = d.item;
    const waiting = d.steps.some((s) => s.kind === 'human' && s.status === 'started');
    const note = el('input', { id: 'note', type: 'text', placeholder: 'note (optional)', size: 40 });
    const pr = safeURL(it.PR);
    const head = el('section', { id: 'item-head' },
      el('h1', { id: 'item-title' }, it.Title || it.ID),
      el('table', {}, el('tbody', {},
        row('item', it.ID), row('status', it.Status), row('stage', it.Stage), row('attempts', it.Attempts),
        row('tokens', tokens(usageOf(it.Usage))), row('cost', money(usageOf(it.Usage))),
        it.Reason ? row('reason', it.Reason) : null,
        it.Branch ? row('branch', it.Branch) : null,
        pr ? el('tr', {}, el('th', {}, 'pull request'), el('td', {}, el('a', { href: pr, rel: 'noopener noreferrer', target: '_blank' }, pr))) : null)),
      waiting ? el('div', { class: 'actions', id: 'item-actions' }, note, approveButtons(it.ID, () => note.value)) : null);
    const steps = el('ol', { class: 'timeline', id: 'timeline' }, d.steps.map(stepNode));
    // On a wide screen the change sits beside the facts and the steps.
    const side = el('section', { class: 'item-side' }, head, ...commits(d), ...assets(images), el('h2', {}, 'Steps'), steps);
    const diff = changes(d);
    $('#view').replaceChildren(el('p', {}, el('a', { href: runHref(S.run) }, '← board')),
      el('div', { class: diff.length ? 'item-page wide' : 'item-page' }, side, diff.length ? el('section', { class: 'item-main' }, ...diff) : null));
  }

  // commits lists the item's commits: short SHA and subject.
  function commits(d) {
    if (!d.commits || !d.commits.length) return [];
    return [el('h2', {}, 'Commits'), el('ul', { id: 'commits' }, d.commits.map((c) =>
      el('li', {}, el('code', {}, c.sha.slice(0, 12)), ' ', c.subject)))];
  }

  // assets shows the images the item keeps as thumbnails, each a link to
  // the image (an svg is downloaded, not opened as a page).
  function assets(list) {
    if (!list.length) return [];
    const base = api() + '/runs/' + enc(S.run) + '/items/' + enc(S.item) + '/assets/';
    return [el('h2', {}, 'Images'), el('div', { id: 'assets', class: 'assets' }, list.map((a) =>
      el('figure', { class: 'asset' },
        el('a', { href: base + enc(a.name), target: '_blank', rel: 'noopener noreferrer' },
          el('img', { src: base + enc(a.name), alt: a.name, loading: 'lazy' })),
        el('figcaption', {}, a.name))))];
  }

  // changes is the item's diff against its base: every line as text,
  // added and removed lines marked by class.
  function changes(d) {
    const out = [];
    if (d.diff) {
      const lines = d.diff.split('\n').map((l) => {
        let cls = '';
        if (l.startsWith('diff --git')) cls = 'file';
        else if (l.startsWith('@@')) cls = 'hunk';
        else if (l.startsWith('+') && !l.startsWith('+++')) cls = 'add';
        else if (l.startsWith('-') && !l.startsWith('---')) cls = 'del';
        return el('span', { class: 'line ' + cls }, l + '\n');
      });
      out.push(el('h2', {}, 'Changes'), el('pre', { id: 'diff', class: 'diff' }, lines));
    }
    return out;
  }

  // ItemSummary's usage fields are Go names; steps' are JSON names.
  function usageOf(u) {
    return { input_tokens: u.input_tokens ?? u.InputTokens, output_tokens: u.output_tokens ?? u.OutputTokens, cost_usd: u.cost_usd ?? u.CostUSD };
  }

  function row(k, v) { return el('tr', {}, el('th', {}, k), el('td', {}, v)); }

  function stepNode(s) {
    const files = s.files.map((kind) => {
      const pre = el('pre', { class: 'file', 'data-kind': kind }, '');
      const det = el('details', { 'data-kind': kind }, el('summary', {}, kind === 'context' && !s.files.includes('prompt') ? 'context (the prompt is not journaled; this is what the agent was given)' : kind), pre);
      const load = async () => {
        if (det.dataset.loaded) return;
        det.dataset.loaded = '1';
        const r = await fetch(api() + '/runs/' + enc(S.run) + '/file?step=' + enc(s.id) + '&kind=' + kind);
        pre.textContent = await r.text();
      };
      det.addEventListener('toggle', () => { if (det.open) load(); });
      if (kind === 'output') { det.open = true; load(); }
      return det;
    });
    return el('li', { class: 'step ' + s.status, 'data-step': s.id },
      el('h3', {}, (s.role || s.kind) + ' · ' + s.id),
      el('div', { class: 'meta' }, [s.kind, s.status, s.runner && ('runner ' + s.runner + (s.model ? '/' + s.model : '')),
        'tries ' + s.tries, s.exit_code ? 'exit ' + s.exit_code : '', tokens(s.usage), money(s.usage),
        s.started ? 'started ' + new Date(s.started).toLocaleTimeString() : '', s.ended ? 'ended ' + new Date(s.ended).toLocaleTimeString() : '']
        .filter(Boolean).join(' · ')),
      s.error ? el('div', { class: 'reason' }, s.error) : null,
      s.signal ? el('details', { 'data-kind': 'signal' }, el('summary', {}, 'signal'), el('pre', {}, JSON.stringify(s.signal, null, 2))) : null,
      s.result ? el('details', { 'data-kind': 'result' }, el('summary', {}, 'result'), el('pre', {}, JSON.stringify(s.result, null, 2))) : null,
      files);
  }

  // --- run page: cost by role, runner and model
  let costTimer = 0;
  function scheduleCost() {
    if (costTimer) return;
    costTimer = setTimeout(() => { costTimer = 0; showCost(); }, 1000);
  }

  async function showCost() {
    let d;
    try {
      d = await getJSON(api() + '/runs/' + enc(S.run) + '/cost');
    } catch (e) { say(String(e)); return; }
    $('#view').replaceChildren(el('h1', {}, 'Run ' + S.run),
      el('div', { class: 'charts' }, ['role', 'runner', 'model'].map((by) => el('section', { 'data-by': by },
        el('h2', {}, 'Cost by ' + by), chart(d[by])))));
  }

  function chart(rows) {
    const NS = 'http://www.w3.org/2000/svg';
    const svg = (tag, attrs, txt) => {
      const n = document.createElementNS(NS, tag);
      for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
      if (txt !== undefined) n.textContent = txt;
      return n;
    };
    const barH = 22, w = 420, labelW = 140;
    const max = Math.max(0.0001, ...rows.map((r) => r.usage.cost_usd));
    const root = svg('svg', { class: 'chart', width: w, height: Math.max(1, rows.length) * barH + 4, role: 'img' });
    rows.forEach((r, i) => {
      const y = i * barH + 2;
      const bw = Math.max(1, (w - labelW - 90) * r.usage.cost_usd / max);
      root.append(svg('text', { x: 0, y: y + 15 }, r.key),
        svg('rect', { x: labelW, y, width: bw, height: barH - 6 }),
        svg('text', { x: labelW + bw + 4, y: y + 15 }, money(r.usage) + ' · ' + r.steps + ' steps'));
    });
    if (!rows.length) root.append(svg('text', { x: 0, y: 15 }, 'no agent steps yet'));
    return root;
  }

  window.addEventListener('hashchange', navigate);
  initToken();
  navigate();
  // Runs started since, in any repository: the pickers list them, and a
  // page that showed an empty journal opens the new run.
  setInterval(async () => {
    await loadRepos(); renderRepoPicker();
    await loadRuns(); renderRunPicker();
    if (!S.run && S.runs.length) navigate();
  }, 5000);
})();
