// Sparrow dashboard: a single-page app over sparrowd's JSON API (docs/dashboard.md).
// Routes: #/ (runs table), #/job/ID, #/compare/ID1,ID2,...
// No framework and no build step: sparrowd serves this file as is, next to uPlot.
'use strict';

const TERMINAL_STATES = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);
const ALL_STATES = ['QUEUED', 'RUNNING', 'CANCELLING', 'SUCCEEDED', 'FAILED', 'CANCELLED'];
const RUNS_POLL_MS = 2000;
const RUNS_MAX_PAGES = 5; // 5000 jobs; beyond that the table would be slow anyway
const REDRAW_INTERVAL_MS = 100; // live charts redraw at most 10 times a second
const SERIES_POINTS = 2000;

// ------------------------------------------------------------------------------------------
// Small DOM helpers

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else if (key === 'text') node.textContent = value;
    else node.setAttribute(key, value === true ? '' : value);
  }
  node.append(...children.flat().filter((c) => c !== null && c !== undefined));
  return node;
}

function cssVar(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

// ------------------------------------------------------------------------------------------
// Formatting

function fmtNumber(value, digits = 4) {
  if (value === null || value === undefined || Number.isNaN(value)) return '—';
  if (value === 0) return '0';
  const abs = Math.abs(value);
  if (abs >= 1e5 || abs < 1e-3) return value.toExponential(digits - 1);
  return Number(value.toPrecision(digits)).toString();
}

function fmtDuration(seconds) {
  if (seconds === null || seconds === undefined) return '—';
  if (seconds < 10) return `${Number(seconds.toFixed(1))}s`;
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

// Dataset ids are 64-digit content hashes: a prefix tells them apart, the tooltip has it all.
function shortId(id) {
  return el('span', { title: id, text: id && id.length > 12 ? `${id.slice(0, 12)}…` : id || '—' });
}

function fmtTime(rfc3339) {
  if (!rfc3339) return '';
  const date = new Date(rfc3339);
  return Number.isNaN(date.getTime()) ? rfc3339 : date.toLocaleString();
}

// ------------------------------------------------------------------------------------------
// API access and errors

// Fetches JSON from the API. A 401 means the session is gone: the login page takes over.
// Other failures throw with the server's own message so the banner can show it.
async function api(path, options = {}) {
  const response = await fetch(path, { credentials: 'same-origin', ...options });
  if (response.status === 401) {
    window.location.assign('/login');
    throw new Error('not logged in');
  }
  let body = null;
  try {
    body = await response.json();
  } catch {
    // Non-JSON answer (a proxy's error page): the status line is all we have.
  }
  if (!response.ok) {
    const message = body && body.error && body.error.message;
    throw new Error(message || `${response.status} ${response.statusText} (${path})`);
  }
  return body;
}

async function postWithCsrf(path) {
  const session = await api('/api/v1/session');
  return api(path, { method: 'POST', headers: { 'X-CSRF-Token': session.csrf_token } });
}

function showError(error) {
  const banner = document.getElementById('error-banner');
  document.getElementById('error-message').textContent = error.message || String(error);
  banner.hidden = false;
}

function clearError() {
  document.getElementById('error-banner').hidden = true;
}

// ------------------------------------------------------------------------------------------
// Theme: chart colours come from CSS variables so they follow prefers-color-scheme.

function theme() {
  return {
    fg: cssVar('--fg'),
    muted: cssVar('--muted'),
    grid: cssVar('--grid'),
    bg: cssVar('--bg'),
    palette: cssVar('--palette')
      .split(',')
      .map((c) => c.trim()),
    zero: cssVar('--zero-weight'),
  };
}

function withAlpha(color, alpha) {
  // Palette colours are #rrggbb; uPlot accepts any canvas colour string.
  const hex = Math.round(alpha * 255)
    .toString(16)
    .padStart(2, '0');
  return color + hex;
}

// ------------------------------------------------------------------------------------------
// Downloads

function download(filename, blob) {
  const url = URL.createObjectURL(blob);
  const link = el('a', { href: url, download: filename });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

function csvCell(value) {
  if (value === null || value === undefined) return '';
  const text = String(value);
  return /[",\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function toCsv(header, rows) {
  return [header, ...rows].map((row) => row.map(csvCell).join(',')).join('\n') + '\n';
}

// Copies a canvas onto the page background: the chart canvases are transparent.
function downloadCanvasPng(canvas, filename) {
  const out = document.createElement('canvas');
  out.width = canvas.width;
  out.height = canvas.height;
  const ctx = out.getContext('2d');
  ctx.fillStyle = theme().bg;
  ctx.fillRect(0, 0, out.width, out.height);
  ctx.drawImage(canvas, 0, 0);
  out.toBlob((blob) => download(filename, blob), 'image/png');
}

// ------------------------------------------------------------------------------------------
// Chart panel: a titled box with CSV / PNG buttons around a uPlot chart or a plain canvas.

function chartPanel(id, title) {
  const body = el('div', { class: 'chart-body' });
  const csvButton = el('button', { type: 'button', class: 'small', 'data-testid': `${id}-csv`, text: 'CSV' });
  const pngButton = el('button', { type: 'button', class: 'small', 'data-testid': `${id}-png`, text: 'PNG' });
  const root = el(
    'section',
    { class: 'chart', id, 'data-points': '0' },
    el('div', { class: 'chart-head' }, el('h3', { text: title }), csvButton, pngButton),
    body,
  );
  return { root, body, csvButton, pngButton };
}

// A uPlot line chart that keeps its data so CSV export and live updates share one copy.
// `series` are [{label, color, width, dash}], `data` is [x, y1, y2, ...] as uPlot wants.
class LineChart {
  constructor(panel, { xLabel, logX = false, logY = false, series, data, drawHooks = [], showPoints = false }) {
    this.panel = panel;
    this.xLabel = xLabel;
    this.series = series;
    this.data = data;
    const colors = theme();
    const axis = {
      stroke: colors.fg,
      grid: { stroke: colors.grid, width: 1 },
      ticks: { stroke: colors.grid, width: 1 },
    };
    this.plot = new uPlot(
      {
        width: this.width(),
        height: 220,
        // x is iterations or seconds, never dates.
        scales: { x: logX ? { time: false, distr: 3 } : { time: false }, y: logY ? { distr: 3 } : {} },
        // uPlot's own labels print tiny log-axis ticks as 0; ours keep the significant digits.
        axes: [
          { ...axis, label: xLabel },
          { ...axis, size: 60, values: (u, ticks) => ticks.map((v) => (v === null ? '' : fmtNumber(v, 3))) },
        ],
        series: [
          { label: xLabel },
          ...series.map((s) => ({
            label: s.label,
            stroke: s.color,
            width: s.width ?? 1.5,
            dash: s.dash,
            spanGaps: true,
            points: { show: showPoints },
          })),
        ],
        legend: { live: true },
        hooks: { draw: drawHooks },
      },
      data,
      panel.body,
    );
    this.resizeObserver = new ResizeObserver(() => this.plot.setSize({ width: this.width(), height: 220 }));
    this.resizeObserver.observe(panel.body);
    panel.csvButton.onclick = () => this.downloadCsv();
    panel.pngButton.onclick = () => downloadCanvasPng(this.plot.ctx.canvas, `${panel.root.id}.png`);
    this.markPoints();
  }

  width() {
    return Math.max(200, this.panel.body.clientWidth || 600);
  }

  // data-points lets tests (and curious users) see how many points the chart holds; a chart
  // without a single value (e.g. no validation split) says so instead of showing empty axes.
  markPoints() {
    this.panel.root.dataset.points = String(this.data[0].length);
    const empty = this.data.slice(1).every((column) => column.every((v) => v === null || v === undefined));
    this.panel.root.classList.toggle('no-values', empty);
  }

  // New points keep a zoomed-in view (drag to zoom) where it is; double-click zooms out and
  // the chart follows the live data again.
  setData(data) {
    const { min, max } = this.plot.scales.x;
    const xs = this.data[0];
    const zoomed = xs.length > 0 && (min > xs[0] || max < xs[xs.length - 1]);
    this.data = data;
    this.plot.setData(data, !zoomed);
    this.markPoints();
  }

  downloadCsv() {
    const header = [this.xLabel, ...this.series.map((s) => s.label)];
    const rows = this.data[0].map((_, i) => this.data.map((column) => column[i]));
    download(`${this.panel.root.id}.csv`, new Blob([toCsv(header, rows)], { type: 'text/csv' }));
  }

  destroy() {
    this.resizeObserver.disconnect();
    this.plot.destroy();
  }
}

// ------------------------------------------------------------------------------------------
// Smoothing: TensorBoard's debiased exponential moving average.
// s_t = w s_{t-1} + (1 - w) x_t, reported as s_t / (1 - w^n) with n the count of valid points
// so far; without the division the curve would start near zero. On a log axis the average is
// taken over log10(x), so one spike does not lift the curve for decades.

function smooth(values, weight, logSpace) {
  if (weight <= 0) return values.slice();
  let state = 0;
  let count = 0;
  return values.map((x) => {
    if (x === null || !Number.isFinite(x) || (logSpace && x <= 0)) return null;
    const v = logSpace ? Math.log10(x) : x;
    state = weight * state + (1 - weight) * v;
    count += 1;
    const debiased = state / (1 - weight ** count);
    return logSpace ? 10 ** debiased : debiased;
  });
}

// A log axis cannot show zero or negative values; they become gaps.
function positiveOnly(values) {
  return values.map((v) => (v !== null && v > 0 ? v : null));
}

// ------------------------------------------------------------------------------------------
// Router

const router = {
  teardown: null,
  generation: 0,

  async render() {
    if (this.teardown) this.teardown();
    this.teardown = null;
    const generation = ++this.generation;
    clearError();
    // Each page gets its own box so a page that finishes loading late can be taken out whole.
    const page = el('div', { class: 'page' });
    document.getElementById('view').replaceChildren(page);
    try {
      const teardown = await renderRoute(page, window.location.hash || '#/');
      // The address may have changed while this page was loading: drop the stale page.
      if (generation === this.generation) {
        this.teardown = teardown;
      } else {
        teardown();
        page.remove();
      }
    } catch (error) {
      if (generation === this.generation) showError(error);
    }
  },
};

// Each page renders into `view` and returns a function that stops its timers and streams.
function renderRoute(view, hash) {
  const jobMatch = hash.match(/^#\/job\/([^/]+)$/);
  if (jobMatch) return renderJob(view, decodeURIComponent(jobMatch[1]));
  const compareMatch = hash.match(/^#\/compare\/(.+)$/);
  if (compareMatch) return renderCompare(view, compareMatch[1].split(',').map(decodeURIComponent));
  return renderRuns(view);
}

// ------------------------------------------------------------------------------------------
// Runs table

const RUN_COLUMNS = [
  { key: 'name', label: 'Name', value: (j) => j.name || j.id },
  { key: 'state', label: 'State', value: (j) => j.state },
  { key: 'optimizer', label: 'Optimizer', value: (j) => j.optimizer },
  { key: 'model', label: 'Model', value: (j) => j.model },
  { key: 'dataset_id', label: 'Dataset', value: (j) => j.dataset_id },
  { key: 'iterations', label: 'Iteration / max (ETA)', value: (j) => j.iterations },
  { key: 'loss', label: 'Loss', value: (j) => j.loss },
  { key: 'best_validation_metric', label: 'Best val. metric', value: (j) => j.best_validation_metric },
  { key: 'sparsity_pct', label: 'Sparsity %', value: (j) => j.sparsity_pct },
  { key: 'elapsed_seconds', label: 'Duration', value: (j) => j.elapsed_seconds },
];

function compareValues(a, b) {
  // Missing values sort last whichever the direction, so they never hide the real numbers.
  if (a === null || a === undefined) return b === null || b === undefined ? 0 : 1;
  if (b === null || b === undefined) return -1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a).localeCompare(String(b));
}

function runCell(job, key) {
  switch (key) {
    case 'name':
      return el('a', { href: `#/job/${encodeURIComponent(job.id)}`, title: job.id, text: job.name || job.id });
    case 'state':
      return el('span', { class: `state state-${job.state}`, title: job.reason || '', text: job.state });
    case 'iterations': {
      const eta =
        job.eta_seconds !== null && job.eta_seconds !== undefined && !TERMINAL_STATES.has(job.state)
          ? ` (ETA ${fmtDuration(job.eta_seconds)})`
          : '';
      return `${job.iterations ?? 0} / ${job.max_iterations ?? '—'}${eta}`;
    }
    case 'loss':
    case 'best_validation_metric':
      return fmtNumber(job[key]);
    case 'sparsity_pct':
      return job.sparsity_pct === null || job.sparsity_pct === undefined ? '—' : job.sparsity_pct.toFixed(1);
    case 'elapsed_seconds':
      return fmtDuration(job.elapsed_seconds);
    case 'dataset_id':
      return shortId(job.dataset_id);
    default:
      return job[key] ?? '—';
  }
}

// Every job of the tenant, following page tokens, but at most RUNS_MAX_PAGES pages per poll.
async function listAllJobs() {
  const jobs = [];
  let token = '';
  for (let page = 0; page < RUNS_MAX_PAGES; page++) {
    const reply = await api(`/api/v1/jobs?page_size=1000&page_token=${encodeURIComponent(token)}`);
    jobs.push(...(reply.jobs || []));
    token = reply.next_page_token;
    if (!token) break;
  }
  return jobs;
}

function renderRuns(view) {
  const state = { jobs: [], sortKey: null, sortAscending: true, selected: new Set() };

  const stateFilter = el(
    'select',
    { id: 'state-filter', 'aria-label': 'Filter by state' },
    el('option', { value: '', text: 'All states' }),
    ALL_STATES.map((s) => el('option', { value: s, text: s })),
  );
  const textFilter = el('input', {
    type: 'search',
    id: 'text-filter',
    placeholder: 'Filter by name, id, model…',
    'aria-label': 'Filter text',
  });
  const compareButton = el('button', { type: 'button', id: 'compare-button', disabled: true, text: 'Compare' });
  const headerRow = el(
    'tr',
    {},
    el('th', { class: 'select-col' }),
    RUN_COLUMNS.map((column) =>
      el(
        'th',
        {
          'data-key': column.key,
          class: 'sortable',
          onclick: () => {
            state.sortAscending = state.sortKey === column.key ? !state.sortAscending : true;
            state.sortKey = column.key;
            draw();
          },
        },
        column.label,
      ),
    ),
  );
  const tbody = el('tbody');
  const count = el('span', { class: 'muted', id: 'runs-count' });

  view.append(
    el('div', { class: 'toolbar' }, stateFilter, textFilter, compareButton, count),
    el(
      'div',
      { class: 'table-scroll' },
      el('table', { id: 'runs-table', class: 'data' }, el('thead', {}, headerRow), tbody),
    ),
  );

  stateFilter.onchange = draw;
  textFilter.oninput = draw;
  compareButton.onclick = () => {
    window.location.hash = `#/compare/${[...state.selected].map(encodeURIComponent).join(',')}`;
  };

  function visibleJobs() {
    const wanted = stateFilter.value;
    const text = textFilter.value.trim().toLowerCase();
    let jobs = state.jobs.filter(
      (job) =>
        (!wanted || job.state === wanted) &&
        (!text ||
          [job.id, job.name, job.optimizer, job.model, job.dataset_id, job.state].some(
            (field) => field && field.toLowerCase().includes(text),
          )),
    );
    if (!state.sortKey) {
      // Newest first until the user picks a column, whatever order the server lists them in.
      return jobs.slice().sort((a, b) => Date.parse(b.create_time) - Date.parse(a.create_time));
    }
    const column = RUN_COLUMNS.find((c) => c.key === state.sortKey);
    return jobs.slice().sort((a, b) => {
      const order = compareValues(column.value(a), column.value(b));
      return state.sortAscending ? order : -order;
    });
  }

  function draw() {
    for (const th of headerRow.querySelectorAll('th[data-key]')) {
      th.classList.toggle('sorted-asc', th.dataset.key === state.sortKey && state.sortAscending);
      th.classList.toggle('sorted-desc', th.dataset.key === state.sortKey && !state.sortAscending);
    }
    const jobs = visibleJobs();
    tbody.replaceChildren(
      ...jobs.map((job) =>
        el(
          'tr',
          { 'data-job-id': job.id, 'data-state': job.state },
          el(
            'td',
            { class: 'select-col' },
            el('input', {
              type: 'checkbox',
              'data-testid': `select-${job.id}`,
              'aria-label': `Select ${job.name || job.id}`,
              checked: state.selected.has(job.id),
              onchange: (event) => {
                if (event.target.checked) state.selected.add(job.id);
                else state.selected.delete(job.id);
                compareButton.disabled = state.selected.size < 2;
              },
            }),
          ),
          RUN_COLUMNS.map((column) => el('td', { 'data-key': column.key }, runCell(job, column.key))),
        ),
      ),
    );
    count.textContent = `${jobs.length} of ${state.jobs.length} jobs`;
    compareButton.disabled = state.selected.size < 2;
  }

  let stopped = false;
  let timer = null;
  async function poll() {
    try {
      const jobs = await listAllJobs();
      if (stopped) return;
      state.jobs = jobs;
      clearError();
      draw();
    } catch (error) {
      if (!stopped) showError(error);
    }
    if (!stopped) timer = setTimeout(poll, RUNS_POLL_MS);
  }
  poll();

  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

// ------------------------------------------------------------------------------------------
// Job page

const CURVES = [
  { key: 'loss', title: 'Loss', logAllowed: true },
  { key: 'validation_metric', title: 'Validation metric', logAllowed: true },
  { key: 'sparsity_pct', title: 'Sparsity %', logAllowed: false },
  { key: 'step_size', title: 'Step size / damping', logAllowed: true },
];

function seriesColumns(series) {
  const columns = {};
  for (const key of ['iteration', 'elapsed_seconds', ...CURVES.map((c) => c.key)]) {
    columns[key] = (series[key] || []).slice();
  }
  return columns;
}

function jobHeader(summary) {
  return el(
    'div',
    { class: 'job-head' },
    el('h2', {}, summary.name || summary.id),
    el('span', {
      id: 'job-state',
      class: `state state-${summary.state}`,
      'data-state': summary.state,
      text: summary.state,
    }),
    el('code', { class: 'muted', text: summary.id }),
  );
}

function setJobState(state, reason) {
  const badge = document.getElementById('job-state');
  // The cancel reply (CANCELLING) can arrive after the stream's final state: never go back.
  if (!badge || TERMINAL_STATES.has(badge.dataset.state)) return;
  badge.textContent = state;
  badge.className = `state state-${state}`;
  badge.dataset.state = state;
  badge.title = reason || '';
}

function summaryList(summary, iterationsText) {
  const items = [
    ['Optimizer', summary.optimizer],
    ['Model', summary.model],
    ['Dataset', shortId(summary.dataset_id)],
    ['Iterations', iterationsText],
    ['Duration', fmtDuration(summary.elapsed_seconds)],
    ['Attempts', summary.attempts],
    ['Created', fmtTime(summary.create_time)],
  ];
  if (summary.summary) items.push(['Summary', summary.summary]);
  if (summary.reason) items.push(['Reason', summary.reason]);
  return el(
    'dl',
    { class: 'summary', id: 'job-summary' },
    items.map(([k, v]) => el('div', {}, el('dt', { text: k }), el('dd', {}, v ?? '—'))),
  );
}

function timelineItem(entry) {
  return el(
    'li',
    { 'data-state': entry.state },
    el('span', { class: `state state-${entry.state}`, text: entry.state }),
    ` ${fmtTime(entry.time)}`,
    entry.reason ? el('span', { class: 'muted', text: ` — ${entry.reason}` }) : null,
  );
}

async function renderJob(view, id) {
  const base = `/api/v1/jobs/${encodeURIComponent(id)}`;
  const [detail, series] = await Promise.all([api(base), api(`${base}/series?points=${SERIES_POINTS}`)]);
  const summary = detail.summary;
  const columns = seriesColumns(series);
  const options = { logY: false, xKey: 'iteration', weight: 0 };
  let charts = [];
  let source = null;
  let redrawTimer = null;

  const cancelButton = el('button', {
    type: 'button',
    id: 'cancel-button',
    class: 'danger',
    text: 'Cancel',
    disabled: TERMINAL_STATES.has(summary.state),
  });
  const logToggle = el('input', { type: 'checkbox', id: 'log-y' });
  const xSelect = el(
    'select',
    { id: 'x-axis', 'aria-label': 'x axis' },
    el('option', { value: 'iteration', text: 'iteration' }),
    el('option', { value: 'elapsed_seconds', text: 'wall time (s)' }),
  );
  const smoothing = el('input', { type: 'range', id: 'smoothing', min: '0', max: '0.99', step: '0.01', value: '0' });
  const smoothingValue = el('output', { for: 'smoothing', text: '0.00' });
  const chartGrid = el('div', { class: 'chart-grid', id: 'job-charts' });
  const timeline = el('ol', { id: 'state-timeline', class: 'timeline' }, (series.states || []).map(timelineItem));
  const afterRun = el('div', { id: 'after-run' });
  const trialsSection = el('div', { id: 'sweep' });
  const isSweep = Boolean(detail.job && detail.job.trials && detail.job.trials.length > 0);
  let trialCharts = isSweep ? renderTrials(trialsSection, detail.job) : [];
  // A sweep job's own curves would mix its trials: its page shows them per trial instead.
  if (isSweep) chartGrid.style.display = 'none';
  let trialsTimer = null;
  // A sweep's page follows its trials: their table and path plot are read again now and then.
  function refreshTrials() {
    if (trialsTimer !== null) return;
    trialsTimer = setTimeout(async () => {
      try {
        const again = await api(base);
        trialCharts.forEach((c) => c.destroy());
        trialCharts = renderTrials(trialsSection, again.job);
      } catch (error) {
        showError(error);
      }
      trialsTimer = null;
    }, TRIALS_REFRESH_MS);
  }
  const iterationsText = el('span', {
    id: 'job-iterations',
    text: `${summary.iterations ?? 0} / ${summary.max_iterations ?? '—'}`,
  });

  view.append(
    jobHeader(summary),
    summaryList(summary, iterationsText),
    el(
      'div',
      { class: 'toolbar' },
      el('label', {}, logToggle, ' log y'),
      el('label', {}, 'x ', xSelect),
      el('label', {}, 'smoothing ', smoothing, smoothingValue),
      cancelButton,
    ),
    chartGrid,
    trialsSection,
    el('h3', { text: 'State timeline' }),
    timeline,
    el(
      'details',
      { id: 'job-spec' },
      el('summary', { text: 'Spec' }),
      el('pre', { text: JSON.stringify(detail.job && detail.job.spec, null, 2) }),
    ),
    afterRun,
  );

  // Rebuilt from scratch when an option changes: uPlot cannot switch scale distributions live.
  function buildCharts() {
    charts.forEach((c) => c.destroy());
    chartGrid.replaceChildren();
    const colors = theme();
    charts = CURVES.map((curve, index) => {
      const panel = chartPanel(`chart-${curve.key.replace(/_/g, '-')}`, curve.title);
      chartGrid.append(panel.root);
      const logY = options.logY && curve.logAllowed;
      const color = colors.palette[index % colors.palette.length];
      const series =
        options.weight > 0
          ? [
              { label: `${curve.key} (raw)`, color: withAlpha(color, 0.3), width: 1 },
              { label: curve.key, color, width: 2 },
            ]
          : [{ label: curve.key, color, width: 1.5 }];
      const chart = new LineChart(panel, {
        xLabel: options.xKey,
        logY,
        series,
        data: chartData(curve, logY),
      });
      chart.curve = curve;
      chart.logY = logY;
      return chart;
    });
  }

  function chartData(curve, logY) {
    const raw = logY ? positiveOnly(columns[curve.key]) : columns[curve.key];
    const x = columns[options.xKey];
    return options.weight > 0 ? [x, raw, smooth(raw, options.weight, logY)] : [x, raw];
  }

  function redraw() {
    redrawTimer = null;
    for (const chart of charts) chart.setData(chartData(chart.curve, chart.logY));
  }

  function scheduleRedraw() {
    if (redrawTimer === null) redrawTimer = setTimeout(redraw, REDRAW_INTERVAL_MS);
  }

  // Each seq is handled once: after a reconnect the browser's Last-Event-ID and our after_seq
  // agree, but a repeated event must never draw a point twice.
  let lastSeq = series.last_seq ?? 0;
  function isNew(event) {
    if (event.seq <= lastSeq) return false;
    lastSeq = event.seq;
    return true;
  }

  function onIteration(message) {
    const point = JSON.parse(message.data);
    if (!isNew(point)) return;
    if (point.trial !== undefined) {
      // A sweep's copy of a trial's event: the trials have their own pages and curves.
      refreshTrials();
      return;
    }
    for (const key of Object.keys(columns)) columns[key].push(point[key] ?? null);
    iterationsText.textContent = `${point.iteration} / ${summary.max_iterations ?? '—'}`;
    scheduleRedraw();
  }

  // A sweep's trial has ended: its row in the trials' table changes.
  function onTrialEnd(message) {
    if (isNew(JSON.parse(message.data))) refreshTrials();
  }

  function onState(message) {
    const change = JSON.parse(message.data);
    if (!isNew(change)) return;
    timeline.append(timelineItem(change));
    setJobState(change.state, change.reason);
    if (TERMINAL_STATES.has(change.state)) {
      cancelButton.disabled = true;
      if (isSweep) refreshTrials();
      // The stream ends after the final state; EventSource would reconnect forever otherwise.
      source.close();
      if (change.state === 'SUCCEEDED') showAfterRun().catch(showError);
      else showPartialRun();
    }
  }

  // EventSource retries on its own after a dropped connection (e.g. a sparrowd restart); it
  // gives up only when the server refuses the stream (401, 404, 503 at --http-max-streams).
  // The status is hidden from us, so ask the API once: its error (or the 401 redirect) says why.
  async function onStreamError() {
    if (source.readyState !== EventSource.CLOSED) return;
    try {
      await api(base);
      showError(new Error('Live updates stopped: the server refused the event stream. Reload to retry.'));
    } catch (error) {
      showError(error);
    }
  }

  function openStream() {
    source = new EventSource(`${base}/events?after_seq=${lastSeq}`);
    source.addEventListener('iteration', onIteration);
    source.addEventListener('state', onState);
    source.addEventListener('trial_end', onTrialEnd);
    source.addEventListener('error', onStreamError);
  }

  logToggle.onchange = () => {
    options.logY = logToggle.checked;
    buildCharts();
  };
  xSelect.onchange = () => {
    options.xKey = xSelect.value;
    buildCharts();
  };
  smoothing.oninput = () => {
    const hadSmoothing = options.weight > 0;
    options.weight = Number(smoothing.value);
    smoothingValue.textContent = options.weight.toFixed(2);
    // Adding or removing the smoothed series changes the chart's series list.
    if (hadSmoothing !== options.weight > 0) buildCharts();
    else redraw();
  };
  cancelButton.onclick = async () => {
    cancelButton.disabled = true;
    try {
      const after = await postWithCsrf(`${base}:cancel`);
      setJobState(after.state, after.reason);
    } catch (error) {
      showError(error);
      cancelButton.disabled = false;
    }
  };

  let afterRunCharts = [];
  async function showAfterRun(partial = false) {
    afterRunCharts = await renderAfterRun(afterRun, base, partial);
  }
  // A cancelled or failed job may have kept the model it had reached; one that kept none
  // (it stopped before its first iteration) shows no model section.
  function showPartialRun() {
    showAfterRun(true).catch(() => {});
  }

  buildCharts();
  if (TERMINAL_STATES.has(summary.state)) {
    if (summary.state === 'SUCCEEDED') await showAfterRun();
    else showPartialRun();
  } else {
    openStream();
  }

  return () => {
    if (source) source.close();
    clearTimeout(redrawTimer);
    clearTimeout(trialsTimer);
    [...charts, ...afterRunCharts, ...trialCharts].forEach((c) => c.destroy());
  };
}

// ------------------------------------------------------------------------------------------
// Sweep jobs: the trials' table (the chosen one marked), a link that overlays their curves, and
// for a path, validation error and zero weights against the path's value.

const TRIALS_REFRESH_MS = 2000;

// The validation error the sweep chooses by (spec.sweep.metric): an RMSE as it is, BFR and
// accuracy as 100 - the value; unset, the accuracy of a classifier, else the RMSE.
function trialValidation(metrics, sweep) {
  if (!metrics) return null;
  const byMetric = {
    METRIC_RMSE: metrics.validation_rmse,
    METRIC_ONE_STEP_RMSE: metrics.validation_one_step_rmse,
    METRIC_BFR: 100 - metrics.validation_bfr,
    METRIC_ACCURACY: 100 - metrics.validation_accuracy,
  };
  let error = byMetric[sweep?.metric];
  if (error === undefined) {
    error = Number.isFinite(metrics.validation_accuracy)
      ? 100 - metrics.validation_accuracy
      : metrics.validation_rmse;
  }
  return Number.isFinite(error) ? error : null;
}

// The path's value in a trial's label ("lambda=9.49 seed=1", or "lambda=[9.49]").
function pathValue(trial, field) {
  const name = field.split('.').pop();
  const match = (trial.label || '').match(new RegExp(`(?:^| )${name}=\\[?([^\\] ]+)`));
  const value = match ? Number.parseFloat(match[1]) : Number.NaN;
  return Number.isFinite(value) ? value : null;
}

function trialRow(trial, chosen, sweep) {
  const m = trial.metrics || {};
  const ended = Boolean(trial.metrics);
  const isChosen = trial.index === chosen;
  return el(
    'tr',
    { 'data-trial': String(trial.index), class: isChosen ? 'chosen' : null },
    el('td', { text: String(trial.index) }),
    el(
      'td',
      {},
      trial.job_id ? el('a', { href: `#/job/${encodeURIComponent(trial.job_id)}`, text: trial.label }) : trial.label,
    ),
    el('td', {}, el('span', { class: `state state-${trial.state}`, text: trial.state })),
    el('td', { text: String(trial.iterations ?? 0) }),
    el('td', { text: fmtNumber(trialValidation(trial.metrics, sweep)) }),
    el('td', { text: ended && Number.isFinite(m.sparsity_pct) ? m.sparsity_pct.toFixed(1) : '—' }),
    el('td', { text: ended && m.model_order ? String(m.model_order) : '—' }),
    el('td', { text: isChosen ? 'chosen' : '' }),
  );
}

// Validation error and zeros against the path's value, one line per seed and grid point.
function pathCharts(container, job) {
  const field = job.spec.sweep.path.field;
  const groups = new Map();
  for (const trial of job.trials) {
    const x = pathValue(trial, field);
    if (x === null) continue;
    const key = (trial.label || '').replace(new RegExp(`(?:^| )${field.split('.').pop()}=\\S+`), '').trim();
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push({ x, trial });
  }
  const colors = theme();
  const keys = [...groups.keys()];
  const grid = el('div', { class: 'chart-grid' });
  container.append(grid);
  return [
    ['validation', 'Validation error along the path', (t) => trialValidation(t.metrics, job.spec.sweep)],
    ['zeros', 'Zero weights % along the path', (t) => (t.metrics ? t.metrics.sparsity_pct ?? null : null)],
  ].map(([id, title, value]) => {
    const panel = chartPanel(`chart-path-${id}`, title);
    grid.append(panel.root);
    const columns = keys.map((key) => {
      const points = groups.get(key).sort((a, b) => a.x - b.x);
      return [points.map((p) => p.x), points.map((p) => value(p.trial))];
    });
    return new LineChart(panel, {
      xLabel: field,
      logX: true,
      showPoints: true,
      series: keys.map((key, i) => ({ label: key || id, color: colors.palette[i % colors.palette.length] })),
      data: uPlot.join(columns),
    });
  });
}

// Renders (again) the sweep section into `container`; returns its charts.
function renderTrials(container, job) {
  const chosen = job.chosen_trial;
  const started = job.trials.filter((t) => t.job_id).map((t) => encodeURIComponent(t.job_id));
  container.replaceChildren(
    el('h3', { text: `Trials (${job.trials.length})` }),
    started.length > 1
      ? el('p', {}, el('a', { id: 'overlay-trials', href: `#/compare/${started.join(',')}`, text: 'Overlay the trials' }))
      : null,
    el(
      'div',
      { class: 'table-scroll' },
      el(
        'table',
        { id: 'sweep-trials', class: 'data' },
        el(
          'thead',
          {},
          el(
            'tr',
            {},
            ['Trial', 'Settings', 'State', 'Iterations', 'Validation error', 'Zeros %', 'Order', ''].map((h) =>
              el('th', { text: h }),
            ),
          ),
        ),
        el(
          'tbody',
          {},
          job.trials.map((t) => trialRow(t, chosen, job.spec.sweep)),
        ),
      ),
    ),
  );
  const sweep = job.spec && job.spec.sweep;
  return sweep && sweep.path && sweep.path.field ? pathCharts(container, job) : [];
}

// ------------------------------------------------------------------------------------------
// After the run: fit plot, per-layer sparsity bars, weight heat maps

// Returns the fit charts so the page can destroy them when it goes.
async function renderAfterRun(container, base, partial = false) {
  const [fit, model] = await Promise.all([api(`${base}/fit?points=${SERIES_POINTS}`), api(`${base}/model`)]);
  const title = partial ? 'Model reached before the job stopped (partial)' : 'Trained model';
  container.replaceChildren(el('h2', { text: title }));
  const charts = renderFit(container, fit);
  renderSparsityBars(container, model);
  renderHeatMaps(container, model);
  return charts;
}

// A dashed vertical line at x = first: before it the model reads measured outputs.
function firstMarker(first) {
  return (u) => {
    const x = Math.round(u.valToPos(first, 'x', true));
    const { top, height } = u.bbox;
    const ctx = u.ctx;
    ctx.save();
    ctx.strokeStyle = theme().muted;
    ctx.setLineDash([4, 4]);
    ctx.beginPath();
    ctx.moveTo(x, top);
    ctx.lineTo(x, top + height);
    ctx.stroke();
    ctx.restore();
  };
}

function renderFit(container, fit) {
  const colors = theme();
  const metrics = fit.metrics || {};
  container.append(
    el(
      'p',
      { class: 'muted', id: 'fit-info' },
      `${fit.mode} on the ${fit.split} split; RMSE ${fmtNumber(metrics.rmse)}, BFR ${fmtNumber(metrics.bfr)} %; ` +
        `the dashed line marks the first predicted sample (${fit.first}).`,
    ),
  );
  const grid = el('div', { class: 'chart-grid', id: 'fit-charts' });
  container.append(grid);
  return fit.outputs.map((output, k) => {
    const panel = chartPanel(`chart-fit-${k}`, `Fit: ${output}`);
    grid.append(panel.root);
    return new LineChart(panel, {
      xLabel: 'sample',
      series: [
        { label: `${output} measured`, color: colors.palette[0], width: 1.5 },
        { label: `${output} predicted`, color: colors.palette[1], width: 1.5, dash: [6, 3] },
      ],
      data: [fit.x, fit.measured[k], fit.predicted[k]],
      drawHooks: [firstMarker(fit.first)],
    });
  });
}

function renderSparsityBars(container, model) {
  const layers = model.layers || [];
  const panel = chartPanel('chart-layer-sparsity', 'Zero weights per layer (%)');
  container.append(panel.root);
  const bars = el(
    'div',
    { class: 'bars', id: 'layer-sparsity' },
    layers.map((layer) =>
      el(
        'div',
        { class: 'bar-row' },
        el('span', { class: 'bar-label', text: layer.name }),
        el('span', { class: 'bar-track' }, el('span', { class: 'bar-fill', style: `width:${layer.zero_pct}%` })),
        el('span', {
          class: 'bar-value',
          text: `${layer.zero_pct.toFixed(1)} % (${layer.zeros} of ${layer.rows * layer.cols})`,
        }),
      ),
    ),
  );
  panel.body.append(bars);
  panel.root.dataset.points = String(layers.length);
  panel.csvButton.onclick = () =>
    download(
      'layer-sparsity.csv',
      new Blob(
        [
          toCsv(
            ['layer', 'rows', 'cols', 'zeros', 'zero_pct'],
            layers.map((l) => [l.name, l.rows, l.cols, l.zeros, l.zero_pct]),
          ),
        ],
        { type: 'text/csv' },
      ),
    );
  panel.pngButton.onclick = () => downloadCanvasPng(barsToCanvas(layers), 'layer-sparsity.png');
}

// The bars are HTML for crisp text; the PNG export paints the same picture on a canvas.
function barsToCanvas(layers) {
  const colors = theme();
  const rowHeight = 24;
  const canvas = document.createElement('canvas');
  canvas.width = 600;
  canvas.height = rowHeight * layers.length + 8;
  const ctx = canvas.getContext('2d');
  ctx.font = '13px sans-serif';
  ctx.textBaseline = 'middle';
  layers.forEach((layer, i) => {
    const y = 4 + i * rowHeight;
    ctx.fillStyle = colors.fg;
    ctx.fillText(layer.name, 4, y + rowHeight / 2);
    ctx.fillStyle = colors.grid;
    ctx.fillRect(120, y + 4, 360, rowHeight - 8);
    ctx.fillStyle = colors.palette[0];
    ctx.fillRect(120, y + 4, (360 * layer.zero_pct) / 100, rowHeight - 8);
    ctx.fillStyle = colors.fg;
    ctx.fillText(`${layer.zero_pct.toFixed(1)} %`, 490, y + rowHeight / 2);
  });
  return canvas;
}

// Viridis stops: perceptually uniform and readable on light and dark backgrounds alike.
const VIRIDIS = [
  [68, 1, 84],
  [59, 82, 139],
  [33, 145, 140],
  [94, 201, 98],
  [253, 231, 37],
];

function viridis(t) {
  const scaled = Math.min(Math.max(t, 0), 1) * (VIRIDIS.length - 1);
  const i = Math.min(Math.floor(scaled), VIRIDIS.length - 2);
  const f = scaled - i;
  return VIRIDIS[i].map((c, j) => Math.round(c + f * (VIRIDIS[i + 1][j] - c)));
}

function parseColor(hex) {
  const m = hex.match(/^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})/i);
  return m ? [1, 2, 3].map((i) => parseInt(m[i], 16)) : [255, 0, 255];
}

// Paints one pixel per weight on a small canvas; CSS scales it up without smoothing.
function heatMapCanvas(layer, zeroColor) {
  const canvas = el('canvas', {
    class: 'heatmap',
    'data-testid': 'heatmap-canvas',
    width: layer.cols,
    height: layer.rows,
  });
  const ctx = canvas.getContext('2d');
  const image = ctx.createImageData(layer.cols, layer.rows);
  const maxAbs = Math.max(...layer.weights.flat().map(Math.abs), 1e-300);
  layer.weights.forEach((row, r) =>
    row.forEach((w, c) => {
      const rgb = w === 0 ? zeroColor : viridis(Math.abs(w) / maxAbs);
      image.data.set([...rgb, 255], 4 * (r * layer.cols + c));
    }),
  );
  ctx.putImageData(image, 0, 0);
  canvas.addEventListener('mousemove', (event) => {
    const box = canvas.getBoundingClientRect();
    const c = Math.floor(((event.clientX - box.left) / box.width) * layer.cols);
    const r = Math.floor(((event.clientY - box.top) / box.height) * layer.rows);
    if (r >= 0 && r < layer.rows && c >= 0 && c < layer.cols)
      canvas.title = `neuron ${r}, input ${c}: w = ${layer.weights[r][c]}`;
  });
  // Keep cells square and the map readable: up to 24 px per weight, at most 480 px wide.
  const cell = Math.max(1, Math.min(24, Math.floor(480 / layer.cols)));
  canvas.style.width = `${layer.cols * cell}px`;
  return { canvas, maxAbs };
}

function renderHeatMaps(container, model) {
  const zeroColor = parseColor(theme().zero);
  const section = el('div', { id: 'heatmap', class: 'chart-grid' });
  container.append(
    el('h3', { text: 'Weight magnitude |w|' }),
    el(
      'p',
      { class: 'muted' },
      'Rows are neurons. Colour: |w| / max |w| of the layer, dark = small, yellow = large; ',
      el('span', { class: 'zero-swatch' }),
      ' exactly zero.',
    ),
    section,
  );
  (model.layers || []).forEach((layer, i) => {
    const panel = chartPanel(
      `chart-heatmap-${i}`,
      `${layer.name} (${layer.rows} × ${layer.cols}${layer.truncated ? ', cut' : ''})`,
    );
    const { canvas, maxAbs } = heatMapCanvas(layer, zeroColor);
    panel.body.append(canvas, el('div', { class: 'muted small', text: `max |w| = ${fmtNumber(maxAbs)}` }));
    panel.root.dataset.points = String(layer.rows * layer.cols);
    panel.csvButton.onclick = () =>
      download(
        `${layer.name}.csv`,
        new Blob(
          [
            toCsv(
              layer.weights[0].map((_, c) => `col ${c}`),
              layer.weights,
            ),
          ],
          { type: 'text/csv' },
        ),
      );
    panel.pngButton.onclick = () => downloadCanvasPng(canvas, `${layer.name}.png`);
    section.append(panel.root);
  });
}

// ------------------------------------------------------------------------------------------
// Compare page

function alignSeries(runs, key) {
  // uPlot needs one shared x column; join() fills the gaps with nulls.
  return uPlot.join(runs.map((run) => [run.series.iteration, run.series[key]]));
}

async function renderCompare(view, ids) {
  const runs = await Promise.all(
    ids.map(async (id) => {
      const base = `/api/v1/jobs/${encodeURIComponent(id)}`;
      const [detail, series] = await Promise.all([api(base), api(`${base}/series?points=${SERIES_POINTS}`)]);
      return { id, summary: detail.summary, series };
    }),
  );
  const colors = theme();
  const color = (i) => colors.palette[i % colors.palette.length];
  const label = (run) => run.summary.name || run.id;

  const logToggle = el('input', { type: 'checkbox', id: 'compare-log-y' });
  const grid = el('div', { class: 'chart-grid' });
  view.append(
    el('h2', { text: `Compare ${runs.length} jobs` }),
    el('div', { class: 'toolbar' }, el('label', {}, logToggle, ' log y')),
    grid,
  );
  let charts = [];

  // Rebuilt on a log-y switch, like the job page's charts.
  function buildCharts() {
    charts.forEach((c) => c.destroy());
    grid.replaceChildren();
    charts = [
      ['loss', 'Loss'],
      ['validation_metric', 'Validation metric'],
    ].map(([key, title]) => {
      const panel = chartPanel(`chart-compare-${key.replace(/_/g, '-')}`, title);
      grid.append(panel.root);
      const [x, ...ys] = alignSeries(runs, key);
      return new LineChart(panel, {
        xLabel: 'iteration',
        logY: logToggle.checked,
        series: runs.map((run, i) => ({ label: label(run), color: color(i), width: 1.5 })),
        data: [x, ...(logToggle.checked ? ys.map(positiveOnly) : ys)],
      });
    });
  }
  logToggle.onchange = buildCharts;
  buildCharts();

  const rows = runs.map((run, i) => {
    const best = run.series.best || {};
    const final = run.series.final || {};
    return el(
      'tr',
      { 'data-job-id': run.id },
      el(
        'td',
        {},
        el('span', { class: 'swatch', style: `background:${color(i)}` }),
        el('a', { href: `#/job/${encodeURIComponent(run.id)}`, text: label(run) }),
      ),
      el('td', {}, el('span', { class: `state state-${run.summary.state}`, text: run.summary.state })),
      el('td', { text: fmtNumber(final.loss) }),
      el('td', { text: fmtNumber(best.loss) }),
      el('td', { text: fmtNumber(final.validation_metric) }),
      el('td', { text: fmtNumber(best.validation_metric) }),
      el('td', {
        text: final.sparsity_pct === null || final.sparsity_pct === undefined ? '—' : final.sparsity_pct.toFixed(1),
      }),
    );
  });
  view.append(
    el(
      'div',
      { class: 'table-scroll' },
      el(
        'table',
        { id: 'compare-table', class: 'data' },
        el(
          'thead',
          {},
          el(
            'tr',
            {},
            [
              'Job',
              'State',
              'Final loss',
              'Best loss',
              'Final val. metric',
              'Best val. metric',
              'Final sparsity %',
            ].map((h) => el('th', { text: h })),
          ),
        ),
        el('tbody', {}, rows),
      ),
    ),
  );

  return () => charts.forEach((c) => c.destroy());
}

// ------------------------------------------------------------------------------------------
// Start

async function showSession() {
  try {
    const session = await api('/api/v1/session');
    document.getElementById('session-info').textContent = `tenant ${session.tenant}`;
  } catch (error) {
    showError(error);
  }
}

document.getElementById('error-dismiss').addEventListener('click', clearError);
window.addEventListener('hashchange', () => router.render());
// Colours are read when a chart is built, so a theme switch redraws the page.
window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => router.render());
showSession();
router.render();
