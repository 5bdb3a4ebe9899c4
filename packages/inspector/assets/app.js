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

function renderMessages(view) {
  const body = clear($('panel-messages').querySelector('.body'));
  $('messages-count').textContent = `(newest ${view.messages.length} of ${view.totalMessages})`;
  if (view.messages.length === 0) body.append(el('p', 'muted', 'No messages.'));
  const obs = view.observations;
  const marks = new Map((obs && 'marks' in obs ? obs.marks : []).map((m) => [m.id, m]));
  let previous = null;
  for (const m of view.messages) {
    const mark = marks.get(m.id);
    const head = el(
      'div',
      'msg-head',
      el('span', `role role-${m.role}`, m.role),
      el('span', 'when', when(m.createdAt)),
    );
    head.append(el('span', 'id', m.id));
    if (mark) {
      const label =
        mark.mark === 'observed' ? 'observed' : mark.buffered ? 'raw tail · buffered' : 'raw tail';
      head.append(el('span', `mark mark-${mark.mark}`, label), el('span', 'tokens', `${mark.tokens} tokens`));
    }
    if (state.info.allowEdits) {
      head.append(button('delete', () => deleteMessage(m), 'danger small'));
    }
    // The cursor sits between the last observed message and the raw tail after it.
    if (previous === 'observed' && mark && mark.mark !== 'observed') {
      body.append(el('div', 'cursor-line', 'cursor: the messages above are observed, below is the raw tail'));
    }
    const item = el(
      'div',
      `msg msg-${m.role}${mark ? ` msg-${mark.mark}` : ''}`,
      head,
      messageText(m.content),
    );
    item.dataset.message = m.id;
    if (mark) item.dataset.mark = mark.mark;
    body.append(item);
    previous = mark ? mark.mark : null;
  }
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
  if ('text' in view.prompt) wm.append(el('pre', 'prompt', view.prompt.text));
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
  link.href = `#${new URLSearchParams({ r: resourceId, t: hit.threadId })}`;
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

function renderThread(view) {
  $('empty').hidden = true;
  $('resource-view').hidden = true;
  $('thread-view').hidden = false;
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
}

async function refreshThread(force = false) {
  clearTimeout(state.pollTimer);
  const threadId = state.threadId;
  if (!threadId) return;
  try {
    const headers = !force && state.version ? { 'if-none-match': state.version } : {};
    const result = await api(`/api/threads/${encodeURIComponent(threadId)}`, { headers });
    if (threadId !== state.threadId) return;
    if (result.status === 200) {
      state.view = result.body;
      state.version = result.etag;
      renderThread(result.body);
    }
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
  $('empty').hidden = true;
  $('thread-view').hidden = true;
  $('resource-view').hidden = false;
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
  if (resourceId !== state.resourceId) {
    state.resourceId = resourceId;
    state.threadsPage = 0;
    state.query = '';
    $('thread-query').value = '';
    loadThreads();
    renderResources();
  }
  if (threadId !== state.threadId) {
    state.threadId = threadId;
    state.version = null;
    state.editing.clear();
    for (const li of document.querySelectorAll('#threads li')) {
      li.classList.toggle('selected', li.dataset.thread === threadId);
    }
  }
  clearTimeout(state.pollTimer);
  if (threadId) refreshThread(true);
  else if (resourceId) showResource(resourceId);
}

async function start() {
  try {
    state.info = (await api('/api/info')).body;
  } catch (error) {
    showError(error);
    return;
  }
  $('store').textContent = state.info.label;
  $('mode').textContent = state.info.allowEdits ? 'edits allowed' : 'read-only';
  $('mode').classList.toggle('warn', state.info.allowEdits);
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
  window.addEventListener('hashchange', route);
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible' && state.threadId && state.pollTimer === null) refreshThread();
  });
  route();
  scanResources();
}

start();
