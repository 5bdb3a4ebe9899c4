// engram inspect — the page. Plain DOM, no framework. Every stored value is put on the page as
// text (textContent / createTextNode); no HTML string built from data is ever parsed.

const token = document.querySelector('meta[name="engram-token"]').getAttribute('content');
const POLL_MS = 600;

const state = {
  info: null,
  resources: new Map(),
  resourceId: null,
  threadId: null,
  threadsPage: 0,
  query: '',
  view: null,
  version: null,
  editing: new Set(),
  pollTimer: null,
  scanRun: 0,
  list: null,
  focus: null,
};

// ── DOM helpers ─────────────────────────────────────────────────────────────────────────────

/** An element with a class and children (strings become text nodes). */
function el(tag, className, ...children) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return node;
}

function $(id) {
  return document.getElementById(id);
}

function clear(node) {
  while (node.firstChild) node.firstChild.remove();
  return node;
}

function button(label, onClick, className = '') {
  const b = el('button', className, label);
  b.type = 'button';
  b.addEventListener('click', onClick);
  return b;
}

function when(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
}

// ── Markdown (a small, safe subset: headings, lists, task boxes, quotes, code, bold) ────────

/** Inline text with **bold** and `code` as elements; everything else as text. */
function inline(text) {
  const out = document.createDocumentFragment();
  const pattern = /(\*\*[^*]+\*\*|`[^`]+`)/g;
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    if (match.index > last) out.append(document.createTextNode(text.slice(last, match.index)));
    const token = match[0];
    out.append(
      token.startsWith('**') ? el('strong', '', token.slice(2, -2)) : el('code', '', token.slice(1, -1)),
    );
    last = match.index + token.length;
  }
  if (last < text.length) out.append(document.createTextNode(text.slice(last)));
  return out;
}

/** Renders Markdown into DOM nodes; unknown syntax stays as text. */
function renderMarkdown(source) {
  const root = el('div', 'markdown');
  const lines = source.replace(/\r\n?/g, '\n').split('\n');
  let list = null;
  let code = null;
  for (const line of lines) {
    if (code) {
      if (/^\s*```/.test(line)) {
        root.append(code);
        code = null;
      } else code.textContent += `${line}\n`;
      continue;
    }
    if (/^\s*```/.test(line)) {
      list = null;
      code = el('pre', 'code');
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    const item = /^(\s*)(?:[-*+]|\d+[.)])\s+(.*)$/.exec(line);
    const quote = /^>\s?(.*)$/.exec(line);
    if (heading) {
      list = null;
      root.append(el(`h${Math.min(heading[1].length + 3, 6)}`, 'md-heading', inline(heading[2])));
    } else if (item) {
      if (!list) {
        list = el('ul', 'md-list');
        root.append(list);
      }
      const li = el('li', '');
      li.style.marginLeft = `${Math.min(item[1].length, 12) * 0.5}em`;
      const task = /^\[([ xX])\]\s*(.*)$/.exec(item[2]);
      if (task) li.append(el('span', 'md-task', task[1] === ' ' ? '☐ ' : '☑ '), inline(task[2]));
      else li.append(inline(item[2]));
      list.append(li);
    } else if (quote) {
      list = null;
      root.append(el('blockquote', '', inline(quote[1])));
    } else if (line.trim() === '') {
      list = null;
    } else {
      list = null;
      root.append(el('p', '', inline(line)));
    }
  }
  if (code) root.append(code);
  return root;
}

// ── JSON, pretty-printed line by line, with schema failures highlighted ─────────────────────

/** `a.b[0]` / `a.b.0` / `the document` → `a.b.0` / `` (the root). */
function issuePath(issue) {
  const colon = issue.indexOf(': ');
  const raw = colon < 0 ? '' : issue.slice(0, colon);
  if (raw === 'the document') return '';
  return raw.replace(/\[(\d+)\]/g, '.$1').replace(/^\./, '');
}

function jsonLines(value, path, indent, key, trailing, out) {
  const pad = '  '.repeat(indent);
  const label = key === null ? '' : `${JSON.stringify(key)}: `;
  const comma = trailing ? ',' : '';
  if (Array.isArray(value) || (value !== null && typeof value === 'object')) {
    const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
    const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
    if (entries.length === 0) {
      out.push({ path, text: `${pad}${label}${open}${close}${comma}` });
      return;
    }
    out.push({ path, text: `${pad}${label}${open}` });
    entries.forEach(([k, v], i) => {
      const childPath = path === '' ? String(k) : `${path}.${k}`;
      jsonLines(v, childPath, indent + 1, Array.isArray(value) ? null : k, i < entries.length - 1, out);
    });
    out.push({ path, text: `${pad}${close}${comma}`, closing: true });
    return;
  }
  out.push({ path, text: `${pad}${label}${JSON.stringify(value)}${comma}` });
}

function renderJson(parsed, issues) {
  const failing = new Set(issues.map(issuePath));
  const lines = [];
  jsonLines(parsed, '', 0, null, false, lines);
  const pre = el('pre', 'json');
  for (const line of lines) {
    const bad = failing.has(line.path) && !(line.closing && line.path !== '');
    pre.append(el('div', bad ? 'line invalid' : 'line', line.text));
  }
  return pre;
}

// ── API ─────────────────────────────────────────────────────────────────────────────────────

async function api(path, init = {}) {
  const headers = { 'x-engram-token': token, ...(init.headers ?? {}) };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, { ...init, headers, cache: 'no-store' });
  } catch (error) {
    const e = new Error(
      `the inspector server cannot be reached (${error.message}); is engram-inspect running?`,
    );
    e.status = 0;
    throw e;
  }
  if (res.status === 304 || res.status === 204) return { status: res.status, body: null, etag: null };
  const body = await res.json().catch(() => ({ message: res.statusText }));
  if (!res.ok) {
    const e = new Error(body.message ?? res.statusText);
    e.status = res.status;
    e.code = body.code;
    e.issues = body.issues;
    throw e;
  }
  return { status: res.status, body, etag: res.headers.get('etag') };
}

function showError(error) {
  const banner = $('error');
  if (!error) {
    banner.hidden = true;
    clear(banner);
    return;
  }
  clear(banner).append(
    el('strong', '', error.status === 503 ? 'The store cannot be reached: ' : 'Error: '),
    error.message,
  );
  banner.hidden = false;
}

// ── resources ───────────────────────────────────────────────────────────────────────────────

async function scanResources() {
  const run = ++state.scanRun;
  const progress = $('resource-progress');
  for (let page = 0; ; page++) {
    let step;
    try {
      step = (await api(`/api/resources?page=${page}`)).body;
    } catch (error) {
      showError(error);
      progress.textContent = 'listing failed';
      return;
    }
    if (run !== state.scanRun) return;
    for (const r of step.resources) {
      const seen = state.resources.get(r.id);
      if (seen) seen.threads += r.threads;
      else state.resources.set(r.id, { ...r });
    }
    renderResources();
    progress.textContent = step.hasMore
      ? `scanning threads… ${step.scanned.toLocaleString()} of ${step.total.toLocaleString()}`
      : `${state.resources.size.toLocaleString()} resources in ${step.total.toLocaleString()} threads`;
    progress.classList.toggle('busy', step.hasMore);
    if (!step.hasMore) return;
  }
}

function renderResources() {
  const list = clear($('resources'));
  for (const r of state.resources.values()) {
    const a = el('a', '', el('span', 'id', r.id), el('span', 'count', String(r.threads)));
    a.href = `#${new URLSearchParams({ r: r.id })}`;
    const li = el('li', r.id === state.resourceId ? 'selected' : '', a);
    li.dataset.resource = r.id;
    list.append(li);
  }
}

// ── threads ─────────────────────────────────────────────────────────────────────────────────

async function loadThreads() {
  const list = clear($('threads'));
  const progress = $('threads-progress');
  $('threads-of').textContent = state.resourceId ? `of ${state.resourceId}` : '';
  if (!state.resourceId) {
    progress.textContent = '';
    return;
  }
  progress.textContent = state.query ? 'searching…' : 'loading…';
  progress.classList.add('busy');
  const params = new URLSearchParams({ resourceId: state.resourceId, page: String(state.threadsPage) });
  if (state.query) params.set('q', state.query);
  let result;
  try {
    result = (await api(`/api/threads?${params}`)).body;
    showError(null);
  } catch (error) {
    showError(error);
    progress.textContent = 'failed';
    progress.classList.remove('busy');
    return;
  }
  progress.classList.remove('busy');
  progress.textContent = result.total === 0 ? 'no threads' : `${result.total.toLocaleString()} threads`;
  for (const t of result.threads) {
    const a = el(
      'a',
      '',
      el('span', 'title', t.title === '' ? '(untitled)' : t.title),
      el('span', 'id', t.id),
      el('span', 'when', when(t.updatedAt)),
    );
    a.href = `#${new URLSearchParams({ r: t.resourceId, t: t.id })}`;
    const li = el('li', t.id === state.threadId ? 'selected' : '', a);
    li.dataset.thread = t.id;
    list.append(li);
  }
  $('threads-page').textContent = `page ${result.page + 1}`;
  $('threads-prev').disabled = result.page === 0;
  $('threads-next').disabled = !result.hasMore;
}

// ── the thread view ─────────────────────────────────────────────────────────────────────────

function messageText(content) {
  if (typeof content === 'string') return el('div', 'text', content);
  if (content && typeof content === 'object' && Array.isArray(content.parts)) {
    const box = el('div', 'parts');
    for (const part of content.parts) {
      if (part && part.type === 'text' && typeof part.text === 'string')
        box.append(el('div', 'text', part.text));
      else box.append(el('pre', 'part', JSON.stringify(part, null, 2)));
    }
    return box;
  }
  return el('pre', 'part', JSON.stringify(content, null, 2));
}

// ── the message list: a window over the whole thread ────────────────────────────────────────
// Only the rows in view, plus OVERSCAN on each side, are in the DOM, between two spacers as tall
// as the rest of the thread. Rows are read PAGE messages at a time (oldest first) and kept by
// their index in the thread; the thread view brings the newest ones with every change. A row
// not measured yet counts ROW pixels.

const PAGE = 100;
const ROW = 60;
const OVERSCAN = 6;

function newList(threadId) {
  return {
    threadId,
    total: 0,
    rows: new Map(), // index in the thread → message
    loading: new Set(), // pages being read
    epoch: 0, // bumped when the rows read so far are dropped
    heights: new Float64Array(0),
    tops: null, // heights summed up; rebuilt after a height changes
    // What stays in place while rows are measured or added: 'end' (the newest message),
    // { index, offset } (that row, `offset` px above the top of the view), or null (what is shown).
    pin: 'end',
    user: false, // the user scrolls (so the scroll decides the pin)
    marks: new Map(),
    highlight: null, // the message a recall hit pointed at
    turn: null, // the turn record opened in the turns panel: its history window is marked
    matches: [], // a search: { index, id } oldest first
    match: -1, // the current one
    limited: false, // the server found more matches than it returns
    version: 0, // bumped when anything shown in a row changes
    drawn: '',
    frame: 0,
  };
}

function listBody() {
  return $('panel-messages').querySelector('.body');
}

/** Takes in the thread's newest messages and its count. */
function takeNewest(list, messages, total) {
  const base = total - messages.length;
  const known = list.rows.get(base);
  // A deleted message moves every one after it: drop what was read, read the view again.
  if (total < list.total || (known && known.id !== messages[0]?.id)) {
    list.rows.clear();
    list.heights = new Float64Array(0);
    list.epoch++;
  }
  if (total !== list.heights.length) {
    const heights = new Float64Array(total).fill(ROW);
    heights.set(list.heights.subarray(0, Math.min(total, list.heights.length)));
    list.heights = heights;
    list.tops = null;
  }
  list.total = total;
  for (const [i, m] of messages.entries()) list.rows.set(base + i, m);
  list.version++;
  $('messages-count').textContent = `(${plural(total, 'message')})`;
}

/** The thread view's newest messages and marks; only the rows in view are drawn again. */
function renderMessages(view) {
  const list = state.list;
  takeNewest(list, view.messages, view.totalMessages);
  const obs = view.observations;
  list.marks = new Map((obs && 'marks' in obs ? obs.marks : []).map((m) => [m.id, m]));
  drawList();
}

/** Reads the newest page of a thread just opened, so that it shows before the thread view. */
async function loadNewest(list) {
  try {
    const params = new URLSearchParams({ perPage: String(PAGE), direction: 'DESC' });
    const { body } = await api(`/api/threads/${encodeURIComponent(list.threadId)}/messages?${params}`);
    if (list !== state.list) return;
    takeNewest(list, body.messages.reverse(), body.total);
    showView('thread-view');
    drawList();
  } catch {
    // The thread view says what went wrong.
  }
}

function layout(list) {
  if (!list.tops) {
    const tops = new Float64Array(list.total + 1);
    for (let i = 0; i < list.total; i++) tops[i + 1] = tops[i] + list.heights[i];
    list.tops = tops;
  }
  return list.tops;
}

/** The row at `y` px from the top of the list. */
function indexAt(tops, y) {
  let [low, high] = [0, tops.length - 2];
  while (low < high) {
    const mid = (low + high + 1) >> 1;
    if (tops[mid] <= y) low = mid;
    else high = mid - 1;
  }
  return Math.max(0, low);
}

function scheduleDraw() {
  if (!state.list.frame) state.list.frame = requestAnimationFrame(drawList);
}

function drawList() {
  const list = state.list;
  cancelAnimationFrame(list.frame);
  list.frame = 0;
  const body = listBody();
  if (list.total === 0) {
    clear(body).append(el('p', 'muted', 'No messages.'));
    list.drawn = '';
    return;
  }
  let anchor = list.pin;
  if (anchor === null) {
    const tops = layout(list);
    const index = indexAt(tops, body.scrollTop);
    anchor = { index, offset: body.scrollTop - tops[index] };
  }
  let first = 0;
  let last = -1;
  for (let pass = 0; pass < 3; pass++) {
    const tops = layout(list);
    const height = Math.max(body.clientHeight, 520);
    const end = Math.max(0, tops[list.total] - height);
    const top = anchor === 'end' ? end : Math.min(Math.max(tops[anchor.index] + anchor.offset, 0), end);
    first = Math.max(0, indexAt(tops, top) - OVERSCAN);
    last = Math.min(list.total - 1, indexAt(tops, top + height) + OVERSCAN);
    const key = `${first} ${last} ${list.version} ${list.epoch}`;
    if (key !== list.drawn) {
      list.drawn = key;
      drawRows(body, list, first, last);
      body.prepend(spacer(tops[first]));
      body.append(spacer(tops[list.total] - tops[last + 1]));
    }
    body.scrollTop = top;
    if (!measure(body, list)) break;
  }
  for (let page = Math.floor(first / PAGE); page <= Math.floor(last / PAGE); page++) {
    const from = Math.max(first, page * PAGE);
    const to = Math.min(last, page * PAGE + PAGE - 1);
    let missing = false;
    for (let i = from; i <= to && !missing; i++) missing = !list.rows.has(i);
    if (missing && !list.loading.has(page)) loadPage(list, page);
  }
}

function spacer(height) {
  const space = el('div', 'spacer');
  space.style.height = `${height}px`;
  return space;
}

function drawRows(body, list, first, last) {
  clear(body);
  const matches = new Set(list.matches.map((m) => m.id));
  const current = list.matches[list.match]?.id;
  for (let i = first; i <= last; i++) {
    const m = list.rows.get(i);
    if (!m) {
      const row = el('div', 'msg-loading muted', 'loading…');
      row.style.height = `${list.heights[i]}px`;
      row.dataset.index = String(i);
      body.append(row);
      continue;
    }
    const mark = list.marks.get(m.id);
    const before = list.marks.get(list.rows.get(i - 1)?.id);
    // The cursor sits between the last observed message and the raw tail after it.
    if (before?.mark === 'observed' && mark && mark.mark !== 'observed') {
      body.append(el('div', 'cursor-line', 'cursor: the messages above are observed, below is the raw tail'));
    }
    const row = messageRow(m, mark);
    if (list.turn) {
      const role = list.turn.history.includes(m.id)
        ? ['in-window', 'in the turn’s history window']
        : list.turn.messageIds.includes(m.id)
          ? ['in-turn', 'saved by the turn']
          : null;
      if (role) {
        row.classList.add(role[0]);
        row.querySelector('.msg-head').append(el('span', `mark mark-${role[0]}`, role[1]));
      }
    }
    if (matches.has(m.id)) row.classList.add('match');
    if (m.id === current) row.classList.add('current-match');
    if (m.id === list.highlight) row.classList.add('highlight');
    row.dataset.index = String(i);
    body.append(row);
  }
}

function messageRow(m, mark) {
  const head = el(
    'div',
    'msg-head',
    el('span', `role role-${m.role}`, m.role),
    el('span', 'when', when(m.createdAt)),
    el('span', 'id', m.id),
  );
  if (mark) {
    const label = mark.mark === 'observed' ? 'observed' : mark.buffered ? 'raw tail · buffered' : 'raw tail';
    head.append(el('span', `mark mark-${mark.mark}`, label), el('span', 'tokens', `${mark.tokens} tokens`));
  }
  if (state.info.allowEdits) head.append(button('delete', () => deleteMessage(m), 'danger small'));
  const row = el('div', `msg msg-${m.role}${mark ? ` msg-${mark.mark}` : ''}`, head, messageText(m.content));
  row.dataset.message = m.id;
  if (mark) row.dataset.mark = mark.mark;
  return row;
}

/** Records the heights of the rows read and drawn; true when one changed. */
function measure(body, list) {
  const rows = body.querySelectorAll('[data-index]');
  const tops = [...rows].map((row) => row.getBoundingClientRect());
  let changed = false;
  rows.forEach((row, k) => {
    if (!row.dataset.message) return;
    const height = k + 1 < rows.length ? tops[k + 1].top - tops[k].top : tops[k].height;
    const i = Number(row.dataset.index);
    if (Math.abs(list.heights[i] - height) > 0.5) {
      list.heights[i] = height;
      changed = true;
    }
  });
  if (changed) list.tops = null;
  return changed;
}

async function loadPage(list, page) {
  const epoch = list.epoch;
  list.loading.add(page);
  try {
    const params = new URLSearchParams({ page: String(page), perPage: String(PAGE) });
    const result = await api(`/api/threads/${encodeURIComponent(list.threadId)}/messages?${params}`);
    if (epoch !== list.epoch) return;
    for (const [i, m] of result.body.messages.entries()) list.rows.set(page * PAGE + i, m);
    list.version++;
    if (list === state.list) scheduleDraw();
  } catch (error) {
    showError(error);
  } finally {
    list.loading.delete(page);
  }
}

/** Shows the row `index` near the top of the list, and keeps it there until the user scrolls. */
function jumpTo(index) {
  const list = state.list;
  list.pin = { index, offset: -80 };
  list.user = false;
  list.version++;
  drawList();
}

/** Follows a recall hit's link: finds the message in the thread, shows it and highlights it. */
async function focusMessage(messageId) {
  const list = state.list;
  try {
    const path = `/api/threads/${encodeURIComponent(list.threadId)}/messages/${encodeURIComponent(messageId)}`;
    const { index } = (await api(path)).body;
    if (list !== state.list) return;
    list.highlight = messageId;
    jumpTo(index);
  } catch (error) {
    showError(error);
  }
}

async function searchMessages(query) {
  const list = state.list;
  const count = $('message-matches');
  list.matches = [];
  list.match = -1;
  if (query === '') {
    count.textContent = '';
    list.version++;
    drawList();
    return;
  }
  count.textContent = 'searching…';
  try {
    const params = new URLSearchParams({ q: query });
    const result = (await api(`/api/threads/${encodeURIComponent(list.threadId)}/search?${params}`)).body;
    if (list !== state.list) return;
    list.matches = result.matches;
    list.limited = result.limited;
    showMatch(0);
  } catch (error) {
    count.textContent = '';
    showError(error);
  }
}

/** Moves to the match `n` (wrapping around) and says which one it is. */
function showMatch(n) {
  const list = state.list;
  const total = list.matches.length;
  if (total === 0) {
    $('message-matches').textContent = 'no matches';
    list.version++;
    drawList();
    return;
  }
  list.match = (n + total) % total;
  $('message-matches').textContent =
    `${(list.match + 1).toLocaleString()} of ${total.toLocaleString()}${list.limited ? '+' : ''}`;
  jumpTo(list.matches[list.match].index);
}

// ── observational memory ────────────────────────────────────────────────────────────────────

function plural(n, word, many = `${word}s`) {
  return `${n.toLocaleString()} ${n === 1 ? word : many}`;
}

function renderObservations(view) {
  const body = clear($('panel-observations').querySelector('.body'));
  const obs = view.observations;
  const summary = $('observations-summary');
  summary.textContent = '';
  if (obs.status === 'unsupported') {
    body.append(el('p', 'notice obs-unsupported', obs.message));
    return;
  }
  if (obs.status === 'none') {
    body.append(el('p', 'muted obs-none', obs.message));
    return;
  }
  summary.textContent = `(${obs.key}, ${obs.scope} scope)`;
  const head = el(
    'p',
    'obs-head',
    `generation ${obs.generation} · version ${obs.version} · updated ${when(obs.updatedAt)}`,
  );
  const tokens = el(
    'div',
    'obs-tokens',
    el('span', 'side obs-log-tokens', `observations: ${obs.logTokens.toLocaleString()} tokens`),
    el(
      'span',
      'side obs-tail-tokens',
      `raw tail: ${obs.tailTokens.toLocaleString()} tokens in ${plural(obs.tailMessages, 'message')}`,
    ),
    el('span', 'side obs-observed', `${plural(obs.observedMessages, 'message')} observed`),
  );
  const cursor = el(
    'p',
    'obs-cursor',
    obs.cursor
      ? `cursor: ${when(obs.cursor.at)} · message ${obs.cursor.id}`
      : 'cursor: none (nothing activated for this thread yet)',
  );
  body.append(head, tokens, cursor);
  if (obs.late.length > 0) body.append(el('p', 'obs-late', `late (kept raw): ${obs.late.join(', ')}`));
  const generations = el('div', 'obs-generations');
  obs.generations.forEach((g, i) => {
    const details = el(
      'details',
      'obs-generation',
      el(
        'summary',
        '',
        `generation ${g.generation} · version ${g.version} · updated ${when(g.updatedAt)} · ${plural(g.entries.length, 'entry', 'entries')} (${g.logTokens} tokens) · ${plural(g.chunks.length, 'buffered chunk')}`,
      ),
    );
    details.dataset.generation = String(g.generation);
    details.open = i === obs.generations.length - 1;
    if (g.currentTask) details.append(el('p', 'obs-task', `current task: ${g.currentTask}`));
    if (g.suggestedResponse)
      details.append(el('p', 'obs-suggested', `suggested response: ${g.suggestedResponse}`));
    for (const e of g.entries) {
      const from =
        e.threadId === ''
          ? 'several threads'
          : e.threadId === view.thread.id
            ? 'this thread'
            : `thread ${e.threadId}`;
      details.append(
        el(
          'div',
          'obs-entry',
          el('div', 'obs-head', `${from} · ${e.tokens} tokens · replaces ${plural(e.messages, 'message')}`),
          el('pre', 'obs-text', e.text),
        ),
      );
    }
    for (const c of g.chunks) {
      details.append(
        el(
          'div',
          'obs-chunk',
          el(
            'div',
            'obs-head',
            `buffered, not activated · thread ${c.threadId} · ${c.tokens} tokens · covers ${plural(c.messageIds.length, 'message')} (${c.messageTokens} tokens)`,
          ),
          el('pre', 'obs-text', c.text),
        ),
      );
    }
    generations.append(details);
  });
  body.append(generations);
  if (obs.block !== null) {
    const block = el(
      'details',
      'obs-block',
      el('summary', '', 'system block the agent gets (Observations processor)'),
    );
    block.append(el('pre', 'prompt obs-block-text', obs.block));
    body.append(block);
  }
}

async function deleteMessage(m) {
  if (!window.confirm(`Delete message ${m.id}?`)) return;
  try {
    await api(`/api/threads/${encodeURIComponent(m.threadId)}/messages/${encodeURIComponent(m.id)}`, {
      method: 'DELETE',
    });
    showError(null);
  } catch (error) {
    showError(error);
  }
  refreshThread(true);
}

/**
 * One working-memory document. `owner.rerender()` redraws the panel holding it (to open or close
 * its editor); `owner.reload()` reads it again from the server after a save.
 */
function renderDocument(doc, target, owner) {
  const box = el('section', `wm-doc${doc.active ? ' active' : ''}`);
  box.dataset.scope = doc.scope;
  const title = el('h4', '', `${doc.scope} scope`);
  if (doc.active) title.append(el('span', 'badge small', 'used by the agent'));
  box.append(title);
  if (state.editing.has(doc.scope)) {
    box.append(editor(doc, target, owner));
    return box;
  }
  if (doc.value === null) box.append(el('p', 'muted', '(empty: nothing stored)'));
  else if (doc.format === 'markdown') box.append(renderMarkdown(doc.value));
  else if (doc.json && 'error' in doc.json) {
    box.append(
      el('p', 'issue', `not valid JSON: ${doc.json.error}`),
      el('pre', 'json line invalid', doc.value),
    );
  } else if (doc.json) box.append(renderJson(doc.json.parsed, doc.issues ?? []));
  if (doc.issues && doc.issues.length > 0) {
    const list = el('ul', 'issues');
    for (const issue of doc.issues) list.append(el('li', 'issue', issue));
    box.append(el('p', 'issue-title', 'Does not match the schema:'), list);
  } else if (doc.format === 'json' && doc.value !== null && doc.json && 'parsed' in doc.json) {
    box.append(el('p', 'ok', 'matches the schema'));
  }
  if (state.info.allowEdits) {
    box.append(
      button('edit', () => {
        state.editing.add(doc.scope);
        owner.rerender();
      }),
    );
  }
  return box;
}

function editor(doc, target, owner) {
  const form = el('div', 'editor');
  const area = el('textarea', '');
  area.value =
    doc.format === 'json' && doc.json && 'parsed' in doc.json
      ? JSON.stringify(doc.json.parsed, null, 2)
      : (doc.value ?? '');
  area.rows = 12;
  area.spellcheck = false;
  const status = el('div', 'progress');
  const save = button('save', async () => {
    status.textContent = 'saving…';
    try {
      await api('/api/working-memory', {
        method: 'PUT',
        body: JSON.stringify({ scope: doc.scope, ...target, base: doc.value, value: area.value }),
      });
      state.editing.delete(doc.scope);
      showError(null);
      owner.reload();
    } catch (error) {
      clear(status).append(el('span', 'issue', error.message));
      if (error.issues) for (const issue of error.issues) status.append(el('div', 'issue', issue));
    }
  });
  const cancel = button('cancel', () => {
    state.editing.delete(doc.scope);
    owner.rerender();
  });
  form.append(area, el('div', 'actions', save, cancel), status);
  return form;
}

function renderWorkingMemory(view) {
  const body = clear($('panel-wm').querySelector('.body'));
  if (!view.workingMemory) {
    body.append(el('p', 'muted', 'Working memory is disabled for this memory.'));
    return;
  }
  const target = { resourceId: view.thread.resourceId, threadId: view.thread.id };
  const { resource, thread } = view.workingMemory;
  const docs = resource.active ? [resource, thread] : [thread, resource];
  const owner = { rerender: () => renderWorkingMemory(state.view), reload: () => refreshThread(true) };
  for (const doc of docs) body.append(renderDocument(doc, target, owner));
}

function renderPrompt(view) {
  const body = clear($('panel-prompt').querySelector('.body'));
  const recalled = view.turnRecall;
  body.classList.toggle('split', Boolean(recalled));
  const wm = recalled ? el('div', 'turn-wm', el('h4', '', 'WorkingMemory processor')) : body;
  if (view.prompt.warning) wm.append(el('p', 'notice prompt-warning', `Warning: ${view.prompt.warning}`));
  if ('text' in view.prompt)
    wm.append(el('pre', 'prompt wm-prompt', view.prompt.text), renderTools(view.prompt.tools));
  else if (view.prompt.refused) wm.append(el('p', 'notice prompt-warning', view.prompt.unavailable));
  else wm.append(el('p', 'muted', view.prompt.unavailable));
  if (!recalled) return;
  body.append(wm);
  const section = el('div', 'turn-recall');
  section.append(
    el('h4', '', 'SemanticRecall processor: this turn’s recall'),
    el('p', 'muted', 'query (the latest user message): ', el('q', 'turn-query', recalled.query)),
  );
  if ('error' in recalled) {
    section.append(el('p', 'recall-error', `${recalled.code ? `${recalled.code}: ` : ''}${recalled.error}`));
  } else if (recalled.text === '')
    section.append(el('p', 'muted turn-note', recalled.note ?? 'nothing recalled'));
  else section.append(el('pre', 'prompt recall-prompt', recalled.text));
  body.append(section);
}

/** The memory tools the agent is offered beside the prompt: name, description, input schema. */
function renderTools(tools) {
  const section = el('div', 'prompt-tools', el('h4', '', 'Tools offered beside the prompt'));
  if (tools.length === 0) section.append(el('p', 'muted', 'none (working memory is read-only)'));
  for (const tool of tools) {
    const schema = el('details', 'tool-schema', el('summary', '', 'input schema'));
    schema.append(el('pre', 'schema', JSON.stringify(tool.inputSchema, null, 2)));
    section.append(el('p', 'tool', el('code', 'tool-name', tool.name), ` — ${tool.description}`), schema);
  }
  return section;
}

// ── semantic recall ─────────────────────────────────────────────────────────────────────────

/** Builds the recall panel once per open thread: a query keeps its results while the view polls. */
function renderRecall(view) {
  const panel = $('panel-recall');
  const key = `${view.thread.id}\n${view.recall.configured}`;
  if (panel.dataset.for === key) return;
  panel.dataset.for = key;
  const body = clear(panel.querySelector('.body'));
  if (!view.recall.configured) {
    body.append(
      el('p', 'notice', 'Semantic recall is not configured for this memory.'),
      el(
        'p',
        'muted',
        'With semantic recall configured, a query here shows the hits, their scores and the message windows the agent would get, with links to the threads they come from. Point the inspector at a module exporting a Memory with an embedder and semanticRecall.',
      ),
    );
    const input = el('input', '');
    input.placeholder = 'recall query';
    input.disabled = true;
    body.append(el('div', 'search', input));
    return;
  }
  const settings = view.recall.settings;
  const query = el('input', '');
  query.id = 'recall-query';
  query.placeholder = 'what the user says, e.g. their latest message';
  query.autocomplete = 'off';
  const topK = el('input', 'narrow');
  topK.id = 'recall-topk';
  topK.type = 'number';
  topK.min = '1';
  topK.max = '1000';
  topK.value = String(settings.topK);
  topK.title = 'topK';
  const scope = el('select', '');
  scope.id = 'recall-scope';
  for (const s of ['resource', 'thread']) {
    const option = el('option', '', s);
    option.value = s;
    option.selected = s === settings.scope;
    scope.append(option);
  }
  const form = el('form', 'search', query, topK, scope, el('button', '', 'Recall'));
  form.id = 'recall-form';
  const results = el('div', 'recall-results');
  results.id = 'recall-results';
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    runRecall(view.thread, { query: query.value, topK: Number(topK.value), scope: scope.value }, results);
  });
  body.append(
    el(
      'p',
      'muted',
      `As the agent recalls: topK ${settings.topK}, ${settings.before} before / ${settings.after} after each hit, scope ${settings.scope}; the thread’s recent history is left out.`,
    ),
    form,
    results,
  );
}

async function runRecall(thread, request, results) {
  clear(results).append(el('p', 'progress busy', 'recalling…'));
  let view;
  try {
    view = (
      await api(`/api/threads/${encodeURIComponent(thread.id)}/recall`, {
        method: 'POST',
        body: JSON.stringify(request),
      })
    ).body;
  } catch (error) {
    clear(results).append(el('p', 'recall-error', `${error.code ? `${error.code}: ` : ''}${error.message}`));
    return;
  }
  if (thread.id !== state.threadId) return;
  clear(results);
  const s = view.settings;
  results.append(
    el(
      'p',
      'muted recall-summary',
      `${view.hits.length} hit${view.hits.length === 1 ? '' : 's'} · topK ${s.topK}, scope ${s.scope}` +
        (view.space ? ` · space ${view.space.id} (${view.space.dimensions})` : '') +
        ` · query embedding: ${view.usage.tokens} tokens`,
    ),
  );
  if (view.note) results.append(el('p', 'muted recall-note', view.note));
  for (const hit of view.hits) results.append(renderHit(hit, view.resourceId));
  if (view.prompt !== '') {
    const details = el(
      'details',
      'recall-system',
      el('summary', '', 'system message the SemanticRecall processor adds'),
    );
    details.append(el('pre', 'prompt', view.prompt));
    results.append(details);
  }
}

function renderHit(hit, resourceId) {
  const link = el(
    'a',
    'thread-link',
    hit.current
      ? 'this thread'
      : `thread ${hit.threadTitle === null ? '(gone)' : hit.threadTitle || '(untitled)'}`,
  );
  link.href = `#${new URLSearchParams({ r: resourceId, t: hit.threadId, m: hit.message.id })}`;
  const head = el(
    'div',
    'hit-head',
    el('span', 'score', hit.score.toFixed(3)),
    link,
    el('span', 'id', hit.threadId),
  );
  const item = el('div', hit.current ? 'hit current' : 'hit', head);
  item.dataset.thread = hit.threadId;
  item.dataset.message = hit.message.id;
  const box = el('div', 'window');
  for (const m of hit.window) {
    const row = el(
      'div',
      m.id === hit.message.id ? 'msg hit-message' : 'msg',
      el('div', 'msg-head', el('span', `role role-${m.role}`, m.role), el('span', 'when', when(m.createdAt))),
      messageText(m.content),
    );
    row.dataset.message = m.id;
    box.append(row);
  }
  item.append(box);
  return item;
}

// ── turn records ────────────────────────────────────────────────────────────────────────────

/** Reads the open thread's newest turn records; opening one marks its history window. */
async function loadTurns(threadId) {
  const body = $('panel-turns').querySelector('.body');
  if (!state.info.turns.supported) {
    clear(body).append(
      el('p', 'muted', 'This store keeps no turn records (its adapter has no "turns" domain).'),
    );
    return;
  }
  let view;
  try {
    view = (await api(`/api/threads/${encodeURIComponent(threadId)}/turns?limit=20`)).body;
  } catch (error) {
    showError(error);
    return;
  }
  if (threadId !== state.threadId) return;
  const open = state.list.turn?.id;
  clear(body);
  if (!view.supported || view.turns.length === 0) {
    body.append(
      el(
        'p',
        'muted',
        view.supported
          ? 'No turn records: an agent keeps them when its memory has options.turnRecords: true.'
          : view.message,
      ),
    );
    return;
  }
  for (const turn of view.turns) body.append(renderTurn(turn, turn.id === open));
  if (view.more) body.append(el('p', 'muted', 'older turns: engram-inspect turn <thread> --last <n>'));
}

function renderTurn(turn, open) {
  const hits = turn.recall ? turn.recall.hits.length : 0;
  const summary = el(
    'summary',
    '',
    el('span', 'when', when(turn.createdAt)),
    ` · history ${plural(turn.history.length, 'message')}`,
    turn.recall ? ` · recall ${plural(hits, 'hit')} (${turn.recall.mode})` : ' · no recall',
    ` · tokens ${turn.tokens.system} system / ${turn.tokens.history} history / ${turn.tokens.input} input`,
  );
  const details = el('details', 'turn', summary);
  details.dataset.turn = turn.id;
  details.open = open;
  details.addEventListener('toggle', () => {
    const list = state.list;
    if (details.open) {
      for (const other of $('panel-turns').querySelectorAll('details.turn')) {
        if (other !== details) other.open = false;
      }
      list.turn = turn;
    } else if (list.turn?.id === turn.id) list.turn = null;
    list.version++;
    drawList();
  });
  const ids = (label, messageIds) => {
    const line = el('p', 'turn-ids', `${label}: `);
    if (messageIds.length === 0) line.append('none');
    messageIds.forEach((id, i) => {
      const link = el('a', 'msg-link', id);
      link.href = `#${new URLSearchParams({ r: turn.resourceId, t: turn.threadId, m: id })}`;
      line.append(i === 0 ? '' : ', ', link);
    });
    return line;
  };
  details.append(ids('saved', turn.messageIds), ids('history window', turn.history));
  if (turn.recall) {
    const list = el('ol', 'turn-hits');
    for (const hit of turn.recall.hits) {
      const link = el('a', 'msg-link', hit.messageId);
      link.href = `#${new URLSearchParams({ r: turn.resourceId, t: hit.threadId, m: hit.messageId })}`;
      const scores = Object.entries(hit.scores).map(([name, score]) => `${name} ${score.toFixed(3)}`);
      list.append(
        el(
          'li',
          '',
          el('span', 'score', hit.score.toFixed(3)),
          ' ',
          link,
          ` · thread ${hit.threadId}${scores.length ? ` · ${scores.join(', ')}` : ''} · window ${plural(hit.window.length, 'message')}`,
        ),
      );
    }
    details.append(el('p', '', `recall (${turn.recall.mode}):`), hits ? list : el('p', 'muted', 'no hits'));
  }
  const wm = turn.workingMemory;
  details.append(
    el(
      'p',
      'turn-wm',
      wm === null
        ? 'working memory: off'
        : `working memory: ${wm.scope} scope · ${wm.sha256 === null ? 'empty' : `sha256 ${wm.sha256.slice(0, 16)}… · ${plural(wm.chars, 'character')}`}`,
    ),
  );
  const om = turn.observations;
  details.append(
    el(
      'p',
      'turn-om',
      om === null
        ? 'observations: off'
        : `observations: generation ${om.generation} · log ${om.logTokens} tokens · raw tail ${om.tailTokens} tokens`,
    ),
  );
  return details;
}

function showView(id) {
  for (const view of ['empty', 'resource-view', 'thread-view']) $(view).hidden = view !== id;
}

function renderThread(view) {
  showView('thread-view');
  $('thread-title').textContent = view.thread.title === '' ? '(untitled)' : view.thread.title;
  clear($('thread-meta')).append(
    el('span', '', 'id '),
    el('code', '', view.thread.id),
    el('span', '', ' · resource '),
    el('code', '', view.thread.resourceId),
    el('span', '', ` · updated ${when(view.thread.updatedAt)}`),
  );
  renderMessages(view);
  // An open editor keeps the text being typed; a save made from a stale value is refused (409).
  if (state.editing.size === 0) renderWorkingMemory(view);
  renderPrompt(view);
  renderRecall(view);
  renderObservations(view);
  loadTurns(view.thread.id);
}

async function refreshThread(force = false) {
  clearTimeout(state.pollTimer);
  const threadId = state.threadId;
  if (!threadId) return;
  try {
    const headers = !force && state.version ? { 'if-none-match': state.version } : {};
    // The newest page of messages comes with the view; the list reads the rest page by page.
    const path = `/api/threads/${encodeURIComponent(threadId)}?last=${PAGE}`;
    const result = await api(path, { headers });
    if (threadId !== state.threadId) return;
    if (result.status === 200) {
      state.view = result.body;
      state.version = result.etag;
      renderThread(result.body);
    }
    if (state.focus) focusMessage(state.focus);
    state.focus = null;
    showError(null);
    $('live').textContent = `live · checked ${new Date().toLocaleTimeString()}`;
  } catch (error) {
    showError(error);
    $('live').textContent = 'not live';
  }
  schedulePoll(threadId);
}

/** The next read of an open thread; none while the tab is hidden (it resumes when shown). */
function schedulePoll(threadId) {
  if (threadId !== state.threadId) return;
  state.pollTimer = setTimeout(() => {
    if (document.visibilityState === 'hidden') state.pollTimer = null;
    else refreshThread();
  }, POLL_MS);
}

async function showResource(resourceId) {
  showView('resource-view');
  $('resource-title').textContent = resourceId;
  const body = clear($('panel-resource-wm').querySelector('.body'));
  state.editing.clear();
  try {
    const r = (await api(`/api/resources/${encodeURIComponent(resourceId)}`)).body;
    if (resourceId !== state.resourceId || state.threadId) return;
    if (!r.workingMemory) {
      body.append(el('p', 'muted', 'Working memory is disabled for this memory.'));
      return;
    }
    const owner = {
      rerender: () => clear(body).append(renderDocument(r.workingMemory, { resourceId }, owner)),
      reload: () => showResource(resourceId),
    };
    owner.rerender();
    showError(null);
  } catch (error) {
    showError(error);
  }
}

// ── routing ─────────────────────────────────────────────────────────────────────────────────

function route() {
  const params = new URLSearchParams(window.location.hash.slice(1));
  const resourceId = params.get('r');
  const threadId = params.get('t');
  state.focus = params.get('m');
  if (resourceId !== state.resourceId) {
    state.resourceId = resourceId;
    state.threadsPage = 0;
    state.query = '';
    $('thread-query').value = '';
    loadThreads();
    renderResources();
  }
  const opened = threadId !== state.threadId;
  if (opened) {
    state.threadId = threadId;
    state.version = null;
    state.editing.clear();
    state.list = newList(threadId);
    $('message-query').value = '';
    $('message-matches').textContent = '';
    for (const li of document.querySelectorAll('#threads li')) {
      li.classList.toggle('selected', li.dataset.thread === threadId);
    }
  }
  clearTimeout(state.pollTimer);
  if (threadId && opened) {
    // The newest page first (one read), then the thread view (recall and the prompt take longer).
    const list = state.list;
    loadNewest(list).then(() => list === state.list && refreshThread(true));
  } else if (threadId) refreshThread(true);
  else if (resourceId) showResource(resourceId);
}

/** The header badge saying where the working-memory mode and template came from. */
function showConfiguration(configuration) {
  const badge = $('config');
  if (!configuration) return;
  const { source, recorded } = configuration;
  const wm = recorded?.workingMemory;
  const text = {
    recorded: `recorded config: ${wm?.mode} · ${wm?.scope}`,
    flags: recorded ? 'config from flags (a record exists)' : 'config from flags',
    module: 'config from module',
    assumed: 'config assumed',
  }[source];
  badge.textContent = text ?? source;
  badge.title = recorded
    ? `memory-config written by @engram/core ${recorded.engram} at ${recorded.recordedAt}; sha256 ${wm?.sha256}`
    : source === 'assumed'
      ? 'no configuration recorded in the store: Markdown mode and the default template are assumed'
      : '';
  badge.classList.toggle('warn', source === 'assumed' || (source === 'flags' && recorded !== null));
  badge.dataset.source = source;
  badge.hidden = false;
}

async function start() {
  state.list = newList(null);
  try {
    state.info = (await api('/api/info')).body;
  } catch (error) {
    showError(error);
    return;
  }
  $('store').textContent = state.info.label;
  $('mode').textContent = state.info.allowEdits ? 'edits allowed' : 'read-only';
  $('mode').classList.toggle('warn', state.info.allowEdits);
  showConfiguration(state.info.configuration);
  document.body.dataset.ready = 'true';
  $('resource-open').addEventListener('submit', (event) => {
    event.preventDefault();
    const id = $('resource-id').value.trim();
    if (id) window.location.hash = new URLSearchParams({ r: id }).toString();
  });
  $('thread-search').addEventListener('submit', (event) => {
    event.preventDefault();
    state.query = $('thread-query').value.trim();
    state.threadsPage = 0;
    loadThreads();
  });
  $('threads-prev').addEventListener('click', () => {
    state.threadsPage = Math.max(0, state.threadsPage - 1);
    loadThreads();
  });
  $('threads-next').addEventListener('click', () => {
    state.threadsPage += 1;
    loadThreads();
  });
  $('message-search').addEventListener('submit', (event) => {
    event.preventDefault();
    searchMessages($('message-query').value.trim());
  });
  $('message-prev').addEventListener('click', () => showMatch(state.list.match - 1));
  $('message-next').addEventListener('click', () => showMatch(state.list.match + 1));
  const body = listBody();
  // A scroll the user makes decides what stays in place; the page's own scrolls do not.
  for (const type of ['wheel', 'pointerdown', 'keydown', 'touchstart']) {
    body.addEventListener(type, () => {
      state.list.user = true;
    });
  }
  body.addEventListener('scroll', () => {
    const list = state.list;
    if (!list.user) return;
    list.pin = body.scrollTop + body.clientHeight >= body.scrollHeight - 2 ? 'end' : null;
    scheduleDraw();
  });
  window.addEventListener('hashchange', route);
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible' && state.threadId && state.pollTimer === null) refreshThread();
  });
  route();
  scanResources();
}

start();
