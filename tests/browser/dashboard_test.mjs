// Browser test of sparrowd's dashboard (docs/dashboard.md) against the real binaries.
//
//   node tests/browser/dashboard_test.mjs BIN_DIR OUT_DIR
//
// Starts sparrowd (gRPC + HTTP) on free ports with a fresh data dir, submits a short and a long
// job with `sparrow submit`, and drives headless Debian chromium through the runs table, a live
// job page, the compare page, cancelling, and the trained-model views. Screenshots go to
// OUT_DIR; with SPARROW_UPDATE_SCREENSHOTS=1 two of them are copied to docs/img/.
// Exit codes: 0 pass, 1 fail, 77 skip (no chromium or no web/node_modules/playwright-core).
import { spawn, execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const CHROMIUM = '/usr/bin/chromium';
const REPO = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..');
const PLAYWRIGHT_DIR = path.join(REPO, 'web', 'node_modules', 'playwright-core');
const GLOBAL_TIMEOUT_MS = 240_000;
const STEP_TIMEOUT_MS = 60_000;

const children = [];
let browser = null;
let tmpDir = null;

function log(message) {
  process.stdout.write(`[dashboard_test] ${message}\n`);
}

// Kills sparrowd's whole process group (its workers are its children) so nothing outlives us.
function killChildren() {
  for (const child of children) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  children.length = 0;
}

function sparrowdLogTail() {
  const file = tmpDir && path.join(tmpDir, 'sparrowd.log');
  if (!file || !fs.existsSync(file)) return '';
  return fs.readFileSync(file, 'utf8').split('\n').slice(-30).join('\n');
}

async function finish(code, message) {
  if (message) (code === 0 ? process.stdout : process.stderr).write(`[dashboard_test] ${message}\n`);
  if (code === 1) {
    const tail = sparrowdLogTail();
    if (tail) process.stderr.write(`--- last lines of sparrowd's log ---\n${tail}\n`);
    if (tmpDir) process.stderr.write(`[dashboard_test] kept ${tmpDir} (data dir, specs, sparrowd.log)\n`);
  }
  // A wedged browser must not keep us from exiting.
  if (browser) await Promise.race([browser.close().catch(() => {}), sleep(5000)]);
  killChildren();
  if (tmpDir && code === 0) fs.rmSync(tmpDir, { recursive: true, force: true, maxRetries: 3 });
  process.exit(code);
}

process.on('exit', killChildren);
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => finish(1, `interrupted by ${signal}`));
setTimeout(() => finish(1, `FAIL: global timeout of ${GLOBAL_TIMEOUT_MS / 1000} s`), GLOBAL_TIMEOUT_MS);

function check(condition, message) {
  if (!condition) throw new Error(message);
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// Polls `probe` until it returns a truthy value; fails with `what` after `timeoutMs`.
async function waitFor(what, probe, timeoutMs = STEP_TIMEOUT_MS) {
  const deadline = Date.now() + timeoutMs;
  let lastError = null;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value) return value;
    } catch (error) {
      lastError = error;
    }
    await sleep(200);
  }
  throw new Error(`timed out waiting for ${what}${lastError ? ` (last error: ${lastError.message})` : ''}`);
}

async function runCli(bin, args) {
  try {
    const { stdout } = await promisify(execFile)(bin, args, { timeout: 60_000 });
    return stdout;
  } catch (error) {
    throw new Error(`${path.basename(bin)} ${args.join(' ')} failed: ${error.stderr || error.message}`);
  }
}

function startSparrowd(binDir, grpcPort, httpPort) {
  const out = fs.openSync(path.join(tmpDir, 'sparrowd.log'), 'a');
  const child = spawn(
    path.join(binDir, 'sparrowd'),
    [
      '--listen',
      `127.0.0.1:${grpcPort}`,
      '--http-listen',
      `127.0.0.1:${httpPort}`,
      '--data-dir',
      path.join(tmpDir, 'data'),
      '--workers',
      '2',
      '--min-event-interval-ms',
      '0',
    ],
    { detached: true, stdio: ['ignore', out, out] },
  );
  children.push(child);
  child.on('exit', (code, signal) => {
    if (children.includes(child)) finish(1, `FAIL: sparrowd exited early (code ${code}, signal ${signal})`);
  });
}

// Small specs over the tanks data: a quick L-BFGS run, and an Adam run that would take minutes
// (about 2000 epochs/s here), reporting every 10th epoch so the live page is not flooded.
function writeSpecs() {
  const csv = path.join(tmpDir, 'tanks.csv');
  const spec = (name, optimizer, maxEpochs, reportEvery) => ({
    name,
    data: { csv_path: csv, inputs: ['u'], outputs: ['y'] },
    split: {
      train: [{ first: 1, last: 1024 }],
      validation: [{ first: 1025, last: 1536 }],
      test: [{ first: 1537, last: 2048 }],
    },
    model: {
      state_space_rnn: { nx: 2, fx_hidden: [4], fy_hidden: [4], initial_state: 'INITIAL_STATE_FREE' },
      init_scale: 0.5,
    },
    regularization: { rho_x0: 0.01, rho_theta: 0.01 },
    optimizer,
    stopping: { max_epochs: maxEpochs, report_every: reportEvery, stall_epochs: -1 },
    seed: 1,
  });
  const short = path.join(tmpDir, 'short.json');
  const long = path.join(tmpDir, 'long.json');
  fs.writeFileSync(short, JSON.stringify(spec('short lbfgs', { lbfgs: { memory: 10 } }, 200, 1)));
  fs.writeFileSync(long, JSON.stringify(spec('long adam', { adam: { learning_rate: 0.001 } }, 1_000_000, 10)));
  // A regularization path of three cold-started points, chosen on validation data.
  const sweep = path.join(tmpDir, 'sweep.json');
  fs.writeFileSync(
    sweep,
    JSON.stringify({
      ...spec('sweep lbfgs', { lbfgs: { memory: 10 } }, 60, 1),
      sweep: { path: { field: 'regularization.rho_theta', from: 0.001, to: 0.1, points: 3, cold_start: true } },
    }),
  );
  return { short, long, sweep };
}

async function submit(binDir, grpcPort, specPath) {
  const stdout = await runCli(path.join(binDir, 'sparrow'), [
    'submit',
    specPath,
    '--server',
    `127.0.0.1:${grpcPort}`,
    '--json',
  ]);
  let id = null;
  try {
    id = JSON.parse(stdout).job_id;
  } catch {
    // Reported below with the output.
  }
  check(id, `sparrow submit --json printed no job_id: ${stdout}`);
  return id;
}

async function getJson(url) {
  const response = await fetch(url);
  check(response.ok, `GET ${url} answered ${response.status}`);
  return response.json();
}

// A screenshot counts as "not blank" when it has many distinct colours and a good share of
// pixels differing from the most common (background) colour. Decoded by the browser itself.
async function checkNotBlank(page, file) {
  const dataUrl = `data:image/png;base64,${fs.readFileSync(file).toString('base64')}`;
  const stats = await page.evaluate(async (src) => {
    const img = new Image();
    img.src = src;
    await img.decode();
    const canvas = document.createElement('canvas');
    canvas.width = img.naturalWidth;
    canvas.height = img.naturalHeight;
    const ctx = canvas.getContext('2d');
    ctx.drawImage(img, 0, 0);
    const { data } = ctx.getImageData(0, 0, canvas.width, canvas.height);
    const counts = new Map();
    for (let i = 0; i < data.length; i += 4) {
      const key = (data[i] << 16) | (data[i + 1] << 8) | data[i + 2];
      counts.set(key, (counts.get(key) || 0) + 1);
    }
    const pixels = data.length / 4;
    const background = Math.max(...counts.values());
    return { colours: counts.size, foreground: 1 - background / pixels };
  }, dataUrl);
  check(
    stats.colours >= 50 && stats.foreground >= 0.02,
    `${path.basename(file)} looks blank: ${stats.colours} colours, ${(100 * stats.foreground).toFixed(1)} % non-background`,
  );
  log(`${path.basename(file)}: ${stats.colours} colours, ${(100 * stats.foreground).toFixed(1)} % non-background`);
}

async function points(page, selector) {
  return Number(await page.getAttribute(selector, 'data-points'));
}

async function main() {
  const [binDir, outDir] = process.argv.slice(2).map((p) => p && path.resolve(p));
  if (!binDir || !outDir) return finish(2, 'usage: node tests/browser/dashboard_test.mjs BIN_DIR OUT_DIR');
  if (!fs.existsSync(CHROMIUM)) return finish(77, `SKIP: ${CHROMIUM} is missing (apt-get install chromium)`);
  if (!fs.existsSync(PLAYWRIGHT_DIR)) return finish(77, `SKIP: ${PLAYWRIGHT_DIR} is missing (cd web && npm ci)`);
  for (const bin of ['sparrowd', 'sparrow']) {
    check(fs.existsSync(path.join(binDir, bin)), `${path.join(binDir, bin)} does not exist`);
  }
  fs.mkdirSync(outDir, { recursive: true });
  tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sparrow-dashboard-'));

  const grpcPort = await freePort();
  const httpPort = await freePort();
  const base = `http://127.0.0.1:${httpPort}`;
  startSparrowd(binDir, grpcPort, httpPort);
  await waitFor('GET /api/v1/session', async () => (await fetch(`${base}/api/v1/session`)).ok, 30_000);
  log(`sparrowd up: gRPC ${grpcPort}, HTTP ${httpPort}`);
  // The pages are compiled into sparrowd; a binary built without web/ answers 404 here.
  const index = await fetch(`${base}/`);
  check(
    index.ok,
    `sparrowd serves no dashboard at / (${index.status}: ${await index.text()}); ` +
      'was it built with web/src and web/node_modules (npm ci --prefix web)?',
  );

  await runCli(path.join(binDir, 'sparrow'), [
    'datagen',
    'cascaded-tanks',
    '--samples',
    '2048',
    '--seed',
    '1',
    '-o',
    path.join(tmpDir, 'tanks.csv'),
  ]);
  const specs = writeSpecs();
  const longId = await submit(binDir, grpcPort, specs.long);
  const shortId = await submit(binDir, grpcPort, specs.short);
  log(`submitted long ${longId}, short ${shortId}`);
  // The UI steps below need the long job running (2 workers: it does not wait for the short one).
  await waitFor(
    'the long job to run',
    async () => (await getJson(`${base}/api/v1/jobs/${longId}`)).summary.state === 'RUNNING',
  );

  const { chromium } = createRequire(PLAYWRIGHT_DIR + '/')('playwright-core');
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
  page.setDefaultTimeout(STEP_TIMEOUT_MS);
  const pageErrors = [];
  page.on('pageerror', (error) => pageErrors.push(error.message));
  // A script or style the Content-Security-Policy blocks only shows up on the console.
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy|Refused to/.test(message.text()))
      pageErrors.push(message.text());
  });

  // Runs table: both jobs appear, each row links to its job page.
  await page.goto(`${base}/#/`);
  for (const id of [longId, shortId]) await page.waitForSelector(`#runs-table tr[data-job-id="${id}"]`);
  const href = await page.getAttribute(`#runs-table tr[data-job-id="${longId}"] td[data-key="name"] a`, 'href');
  check(href === `#/job/${longId}`, `the long job's row links to ${href}`);
  log('PASS runs table lists both jobs');

  // Newest first by default; then sorted by name, and the other way round.
  const names = () => page.$$eval('#runs-table tbody td[data-key="name"]', (cells) => cells.map((c) => c.textContent));
  const order = await page.$$eval('#runs-table tbody tr', (rows) => rows.map((r) => r.dataset.jobId));
  check(order.join() === [shortId, longId].join(), `the runs table is not newest first: ${order}`);
  await page.click('#runs-table th[data-key="name"]');
  await waitFor('ascending names', async () => (await names()).join('|') === 'long adam|short lbfgs');
  await page.click('#runs-table th[data-key="name"]');
  await waitFor('descending names', async () => (await names()).join('|') === 'short lbfgs|long adam');

  // Filtering by state keeps exactly the jobs in that state.
  await page.selectOption('#state-filter', 'RUNNING');
  await waitFor('the RUNNING filter', () =>
    page.$$eval(
      '#runs-table tbody tr',
      (rows, id) => rows.some((r) => r.dataset.jobId === id) && rows.every((r) => r.dataset.state === 'RUNNING'),
      longId,
    ),
  );
  await page.selectOption('#state-filter', 'FAILED');
  await waitFor(
    'the FAILED filter to hide the long job',
    async () => !(await page.$(`#runs-table tr[data-job-id="${longId}"]`)),
  );
  await page.selectOption('#state-filter', '');
  await page.fill('#text-filter', 'long adam');
  await waitFor('the text filter', async () => (await names()).join('|') === 'long adam');
  await page.fill('#text-filter', '');
  log('PASS runs table sorts and filters');

  // Live job page: the loss curve grows between two reads.
  await page.goto(`${base}/#/job/${longId}`);
  await page.waitForSelector('#chart-loss canvas');
  await waitFor('the long job to start reporting', async () => (await points(page, '#chart-loss')) > 0);
  const before = await points(page, '#chart-loss');
  await waitFor('the loss curve to grow', async () => (await points(page, '#chart-loss')) > before, 30_000);
  log(`PASS live loss curve grew from ${before} to ${await points(page, '#chart-loss')} points`);

  // CSV download of the plotted data.
  const [csv] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid="chart-loss-csv"]')]);
  const csvText = fs.readFileSync(await csv.path(), 'utf8');
  check(
    csvText.startsWith('iteration,loss') && csvText.trim().split('\n').length > 1,
    `unexpected loss CSV: ${csvText.slice(0, 80)}`,
  );
  const [png] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid="chart-loss-png"]')]);
  const pngBytes = fs.readFileSync(await png.path());
  check(
    pngBytes.subarray(1, 4).toString() === 'PNG' && pngBytes.length > 2000,
    `unexpected loss PNG (${pngBytes.length} bytes)`,
  );
  log('PASS loss CSV and PNG downloads');

  // Log axis and smoothing rebuild the charts with a smoothed series over the raw one.
  await page.check('#log-y');
  await page.fill('#smoothing', '0.9');
  await page.waitForSelector('#chart-loss .u-legend >> text=loss (raw)');
  await page.selectOption('#x-axis', 'elapsed_seconds');
  await waitFor('the loss chart over wall time', async () => (await points(page, '#chart-loss')) > 0);
  log('PASS log y, smoothing and wall-time axis');

  // Runs table screenshot with one job running and one done.
  await waitFor(
    'the short job to succeed',
    async () => {
      const { summary } = await getJson(`${base}/api/v1/jobs/${shortId}`);
      check(
        !['FAILED', 'CANCELLED'].includes(summary.state),
        `the short job ended ${summary.state}: ${summary.reason}`,
      );
      return summary.state === 'SUCCEEDED';
    },
    120_000,
  );
  await page.goto(`${base}/#/`);
  await page.waitForSelector(`#runs-table tr[data-job-id="${shortId}"][data-state="SUCCEEDED"]`);
  const runsPng = path.join(outDir, 'dashboard-runs.png');
  await page.screenshot({ path: runsPng });

  // Compare two jobs picked with the checkboxes.
  await page.check(`[data-testid="select-${longId}"]`);
  await page.check(`[data-testid="select-${shortId}"]`);
  await page.click('#compare-button');
  await page.waitForSelector('#compare-table tbody tr:nth-child(2)');
  check(
    page.url().endsWith(`#/compare/${longId},${shortId}`) || page.url().endsWith(`#/compare/${shortId},${longId}`),
    `compare address is ${page.url()}`,
  );
  await waitFor('the compare loss chart', async () => (await points(page, '#chart-compare-loss')) > 0);
  await page.check('#compare-log-y');
  await waitFor('the compare loss chart on a log axis', async () => (await points(page, '#chart-compare-loss')) > 0);
  const comparePng = path.join(outDir, 'dashboard-compare.png');
  await page.screenshot({ path: comparePng, fullPage: true });
  log('PASS compare page');

  // Cancel the long job from its page.
  await page.goto(`${base}/#/job/${longId}`);
  await page.waitForSelector('#cancel-button:not([disabled])');
  await page.click('#cancel-button');
  await waitFor(
    'the job page to show CANCELLED',
    async () => {
      const shown = await page.getAttribute('#job-state', 'data-state');
      if (shown === 'CANCELLED') return true;
      // Not yet: this becomes the reason given if it never happens.
      const { summary } = await getJson(`${base}/api/v1/jobs/${longId}`);
      throw new Error(`the page shows ${shown}, the server says ${summary.state}`);
    },
    30_000,
  );
  check(await page.isDisabled('#cancel-button'), 'the cancel button is still enabled after CANCELLED');
  // It keeps the model it had reached, shown as partial.
  await page.waitForSelector('#after-run h2:has-text("partial")', { timeout: 30_000 });
  await page.waitForSelector('#after-run #chart-fit-0 canvas', { timeout: 30_000 });
  log('PASS cancel from the job page');

  // The short job's trained model: fit plot and weight heat map.
  await page.goto(`${base}/#/job/${shortId}`);
  await page.waitForSelector('#chart-fit-0 canvas');
  await page.waitForSelector('#heatmap canvas.heatmap');
  check((await points(page, '#chart-fit-0')) > 0, 'the fit plot has no points');
  check((await points(page, '#chart-heatmap-0')) > 0, 'the heat map has no weights');
  const jobPng = path.join(outDir, 'dashboard-job.png');
  await page.screenshot({ path: jobPng });
  await page.screenshot({ path: path.join(outDir, 'dashboard-job-full.png'), fullPage: true });
  log('PASS fit plot and heat map of the finished job');

  // A job watched from submission to the end: the page follows the stream to SUCCEEDED and
  // then shows the trained model without a reload.
  const watchedId = await submit(binDir, grpcPort, specs.short);
  await page.goto(`${base}/#/job/${watchedId}`);
  const stateAtLoad = await page.getAttribute('#job-state', 'data-state');
  await page.waitForSelector('#job-state[data-state="SUCCEEDED"]', { timeout: 120_000 });
  await page.waitForSelector('#chart-fit-0 canvas');
  await page.waitForSelector('#heatmap canvas.heatmap');
  log(`PASS live job page went from ${stateAtLoad} to SUCCEEDED and drew the model`);

  // A sweep job: its trials' table with the chosen one, the path plot, and the overlay of the
  // trials' curves.
  const sweepId = await submit(binDir, grpcPort, specs.sweep);
  await page.goto(`${base}/#/job/${sweepId}`);
  await page.waitForSelector('#job-state[data-state="SUCCEEDED"]', { timeout: 180_000 });
  await waitFor('the chosen trial', async () => (await page.$$('#sweep-trials tbody tr.chosen')).length === 1);
  const trialRows = await page.$$eval('#sweep-trials tbody tr', (rows) => rows.length);
  check(trialRows === 3, `the sweep page lists ${trialRows} trials, not 3`);
  check((await points(page, '#chart-path-validation')) === 3, 'the path plot does not have the 3 points');
  const sweepPng = path.join(outDir, 'dashboard-sweep.png');
  await page.screenshot({ path: sweepPng, fullPage: true });
  await page.click('#overlay-trials');
  await waitFor('the overlay of 3 trials', async () => (await page.$$('#compare-table tbody tr')).length === 3);
  log('PASS sweep page: trials, chosen trial, path plot and overlay');

  // An API error shows up in the banner.
  await page.goto(`${base}/#/job/no-such-job`);
  await page.waitForSelector('#error-banner:not([hidden])');
  log(`PASS error banner: ${await page.textContent('#error-message')}`);

  // Narrow window: the table scrolls inside its box, the page itself does not.
  await page.setViewportSize({ width: 400, height: 800 });
  await page.goto(`${base}/#/`);
  await page.waitForSelector(`#runs-table tr[data-job-id="${shortId}"]`);
  const pageWidth = await page.evaluate(() => document.documentElement.scrollWidth);
  check(pageWidth <= 400, `at 400 px the page is ${pageWidth} px wide`);
  log('PASS narrow layout');

  // The login page: a form that posts the token to /login.
  await page.goto(`${base}/login`);
  check((await page.getAttribute('#login-form', 'method')) === 'post', 'the login form does not POST');
  check(await page.$('#login-form input[name="token"]'), 'the login form has no token field');
  log('PASS login page');

  for (const file of [runsPng, jobPng, comparePng, sweepPng]) await checkNotBlank(page, file);
  check(pageErrors.length === 0, `uncaught errors in the page: ${pageErrors.join('; ')}`);

  if (process.env.SPARROW_UPDATE_SCREENSHOTS === '1') {
    const imgDir = path.join(REPO, 'docs', 'img');
    fs.mkdirSync(imgDir, { recursive: true });
    fs.copyFileSync(runsPng, path.join(imgDir, 'dashboard-runs.png'));
    fs.copyFileSync(jobPng, path.join(imgDir, 'dashboard-job.png'));
    log(`updated ${imgDir}/dashboard-{runs,job}.png`);
  }
  return finish(0, 'PASS');
}

main().catch((error) => finish(1, `FAIL: ${error.message}`));
