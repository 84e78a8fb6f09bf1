// Dashboard acceptance criterion B: a job with 1,000,000 events.
//
//   node bench/dashboard_series.mjs [--bin-dir /tmp/dash-bin] [--keep DIR] [--events 1000000]
//                                   [--restarts 5] [--warm 20] [--csv-encodings identity,gzip]
//                                   [--page-accept-encoding 'gzip, deflate'] [--json FILE]
//
// Makes (or, with --keep DIR / $BENCH_KEEP, reuses) a finished job with about --events events: Adam
// on a tiny state-space RNN (nx 1, 2 hidden units, 16 training samples of the synthetic cascaded
// tanks), max_epochs = events - 3, report_every 1, sparrowd --min-event-interval-ms 0. Then, per
// round (--restarts rounds), on a freshly started sparrowd over that data dir:
//   - series: the first GET /api/v1/jobs/ID/series?points=2000 (cold: the first request of a
//     freshly started sparrowd; the OS page cache is warm), then --warm more with each
//     Accept-Encoding: none (curl), "gzip, deflate" (node fetch), "gzip, deflate, br" (chromium),
//     each answered with gzip where accepted;
//   - sparrowd restarted again, the job page in headless Debian chromium (playwright-core from
//     web/node_modules), a fresh browser context each time: from navigation start to the loss chart
//     drawn (#chart-loss holds data-points > 0 and a canvas, then one more animation frame), as
//     performance.now() in the page; first cold, then 3 warm loads;
//   - GET /api/v1/jobs/ID/events.csv, the whole body read, per --csv-encodings (add br to see
//     what a browser's download costs: minutes);
//   - sparrowd restarted again, GET /api/v1/jobs (the runs table's request) cold.
// Reports medians. Targets: series <= 100 ms, first render <= 1 s.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import {
  getJson, gitCommit, median, parseArgs, procStatusKb, runCli, startSparrowd, submit, tanksSpec, waitForJobEnd,
} from './dashboard_lib.mjs';

const REPO = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const CHROMIUM = '/usr/bin/chromium';
const PLAYWRIGHT_DIR = path.join(REPO, 'web', 'node_modules', 'playwright-core');

// Accept-Encoding values: what curl sends by default (nothing), what node's fetch sends, and what
// chromium sends (sparrowd, i.e. cpp-httplib, then answers with brotli).
const ENCODINGS = { identity: '', gzip: 'gzip, deflate', br: 'gzip, deflate, br' };

// GET with an explicit Accept-Encoding; the body is read whole and not decoded.
function timedGet(url, encoding = 'identity') {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const headers = ENCODINGS[encoding] ? { 'Accept-Encoding': ENCODINGS[encoding] } : {};
    http.get(url, { agent: false, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        const body = Buffer.concat(chunks);
        if (res.statusCode !== 200) reject(new Error(`GET ${url}: ${res.statusCode} ${body.toString().slice(0, 200)}`));
        else resolve({ ms, bytes: body.length, body, contentEncoding: res.headers['content-encoding'] || 'identity' });
      });
      res.on('error', reject);
    }).on('error', reject);
  });
}

async function makeJob(binDir, keep, events) {
  const jobFile = path.join(keep, 'job.json');
  if (fs.existsSync(jobFile)) {
    const job = JSON.parse(fs.readFileSync(jobFile, 'utf8'));
    if (job.events_requested === events) {
      console.log(`# reusing job ${job.id} in ${keep} (trained ${job.created})`);
      return job;
    }
  }
  fs.rmSync(path.join(keep, 'data'), { recursive: true, force: true });
  fs.mkdirSync(keep, { recursive: true });
  const csv = path.join(keep, 'tanks.csv');
  await runCli(path.join(binDir, 'sparrow'), ['datagen', 'cascaded-tanks', '--samples', '2048', '--seed', '1', '-o', csv]);
  const specPath = path.join(keep, 'spec.json');
  // QUEUED, RUNNING and SUCCEEDED are the 3 state events.
  fs.writeFileSync(specPath, JSON.stringify(tanksSpec({
    name: `${events} events`, csv, maxEpochs: events - 3, trainLast: 16, nx: 1, hidden: 2,
  })));
  const sd = await startSparrowd(binDir, path.join(keep, 'data'), path.join(keep, 'sparrowd-train.log'));
  try {
    const t0 = Date.now();
    const id = await submit(binDir, sd.grpc, specPath);
    const summary = await waitForJobEnd(sd.base, id, 3_600_000);
    if (summary.state !== 'SUCCEEDED') throw new Error(`the ${events}-event job ended ${summary.state}: ${summary.reason}`);
    const job = {
      id, events_requested: events, last_seq: summary.last_seq, iterations: summary.iterations,
      train_seconds: summary.elapsed_seconds, submit_to_end_seconds: (Date.now() - t0) / 1000,
      created: new Date().toISOString(),
    };
    fs.writeFileSync(jobFile, `${JSON.stringify(job, null, 2)}\n`);
    console.log(`# trained ${id}: ${summary.iterations} iterations, last_seq ${summary.last_seq}, ` +
      `${summary.elapsed_seconds.toFixed(1)} s training, ${job.submit_to_end_seconds.toFixed(1)} s submit to end`);
    return job;
  } finally {
    await sd.stop();
  }
}

async function pageRender(browser, url, acceptEncoding) {
  const context = await browser.newContext({
    viewport: { width: 1280, height: 800 },
    ...(acceptEncoding ? { extraHTTPHeaders: { 'Accept-Encoding': acceptEncoding } } : {}),
  });
  try {
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const t0 = process.hrtime.bigint();
    await page.goto(url, { waitUntil: 'commit' });
    await page.waitForFunction(() => {
      const chart = document.querySelector('#chart-loss');
      return chart && Number(chart.dataset.points) > 0 && chart.querySelector('canvas');
    }, null, { timeout: 60_000, polling: 'raf' });
    const inPage = await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => resolve({
      ms: performance.now(),
      points: Number(document.querySelector('#chart-loss').dataset.points),
      // When the scripts and the series answer had arrived (ms since navigation start).
      assets: Math.max(...performance.getEntriesByType('resource')
        .filter((e) => /\/(app\.js|assets\/uPlot\.iife\.min\.js)$/.test(e.name)).map((e) => e.responseEnd)),
      series: Math.max(...performance.getEntriesByType('resource')
        .filter((e) => e.name.includes('/series?')).map((e) => e.responseEnd)),
    }))));
    const nodeMs = Number(process.hrtime.bigint() - t0) / 1e6;
    if (errors.length) throw new Error(`page errors: ${errors.join('; ')}`);
    return { ms: inPage.ms, node_ms: nodeMs, points: inPage.points, assets: inPage.assets, series: inPage.series };
  } finally {
    await context.close();
  }
}

async function main() {
  const opt = parseArgs(process.argv.slice(2), {
    bin_dir: path.join(REPO, 'build', 'bin'), keep: process.env.BENCH_KEEP || '', events: 1_000_000,
    restarts: 5, warm: 20, json: '', csv_encodings: 'identity,gzip', page_accept_encoding: '',
  });
  const binDir = path.resolve(opt.bin_dir);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sparrow-series-bench-'));
  const keep = path.resolve(opt.keep || tmp);
  console.log(`# dashboard_series: ${new Date().toISOString()}, commit ${gitCommit(REPO)}, ${os.cpus().length} cores, ` +
    `load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}; bin ${binDir}`);
  const job = await makeJob(binDir, keep, opt.events);

  let browser = null;
  if (fs.existsSync(CHROMIUM) && fs.existsSync(PLAYWRIGHT_DIR)) {
    const { chromium } = createRequire(`${PLAYWRIGHT_DIR}/`)('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  } else {
    console.log(`# no ${CHROMIUM} or ${PLAYWRIGHT_DIR}: page render skipped`);
  }

  const r = { jobs_list_cold: [], series_cold: [], series_warm_identity: [], series_warm_gzip: [], series_warm_br: [], page_cold: [], page_cold_node: [], page_cold_assets_at: [], page_cold_series_at: [], page_warm: [], page_warm_assets_at: [], page_warm_series_at: [], csv: [], rss_after_series_mb: [] };
  let seriesInfo = null, points = 0;
  const csvBytes = {}, seriesBytes = {};
  const dataDir = path.join(keep, 'data');
  try {
    for (let round = 0; round < opt.restarts; round++) {
      let sd = await startSparrowd(binDir, dataDir, path.join(tmp, 'sparrowd.log'));
      const seriesUrl = `${sd.base}/api/v1/jobs/${job.id}/series?points=2000`;
      try {
        const cold = await timedGet(seriesUrl);
        r.series_cold.push(cold.ms);
        for (const enc of Object.keys(ENCODINGS)) {
          const warm = [];
          for (let i = 0; i < opt.warm; i++) {
            const got = await timedGet(seriesUrl, enc);
            warm.push(got.ms);
            seriesBytes[enc] = `${got.bytes} bytes ${got.contentEncoding}`;
          }
          r[`series_warm_${enc}`].push(median(warm));
        }
        r.rss_after_series_mb.push(procStatusKb(sd.pid, 'VmRSS') / 1024);
        const s = JSON.parse(cold.body);
        seriesInfo = { count: s.count, points: s.iteration.length, downsampled: s.downsampled, last_seq: s.last_seq, bytes: cold.bytes };
        for (const enc of opt.csv_encodings.split(',')) {
          const csv = await timedGet(`${sd.base}/api/v1/jobs/${job.id}/events.csv`, enc);
          r[`csv_${enc}`] = r[`csv_${enc}`] || [];
          r[`csv_${enc}`].push(csv.ms);
          csvBytes[enc] = `${csv.bytes} bytes ${csv.contentEncoding}`;
        }
      } finally {
        await sd.stop();
      }
      // The runs table's GET /api/v1/jobs builds each job's summary from the same cached columns.
      sd = await startSparrowd(binDir, dataDir, path.join(tmp, 'sparrowd.log'));
      try {
        r.jobs_list_cold.push((await timedGet(`${sd.base}/api/v1/jobs`)).ms);
      } finally {
        await sd.stop();
      }
      if (!browser) {
        console.log(`round ${round + 1}: series cold ${r.series_cold.at(-1).toFixed(1)} ms, warm ${r.series_warm_identity.at(-1).toFixed(1)} ms`);
        continue;
      }
      sd = await startSparrowd(binDir, dataDir, path.join(tmp, 'sparrowd.log'));
      try {
        const url = `${sd.base}/#/job/${job.id}`;
        const cold = await pageRender(browser, url, opt.page_accept_encoding);
        r.page_cold.push(cold.ms);
        r.page_cold_node.push(cold.node_ms);
        r.page_cold_assets_at.push(cold.assets);
        r.page_cold_series_at.push(cold.series);
        points = cold.points;
        const warm = [];
        const warmAssets = [], warmSeries = [];
        for (let i = 0; i < 3; i++) {
          const w = await pageRender(browser, url, opt.page_accept_encoding);
          warm.push(w.ms);
          warmAssets.push(w.assets);
          warmSeries.push(w.series);
        }
        r.page_warm.push(median(warm));
        r.page_warm_assets_at.push(median(warmAssets));
        r.page_warm_series_at.push(median(warmSeries));
      } finally {
        await sd.stop();
      }
      console.log(`round ${round + 1}: series cold ${r.series_cold.at(-1).toFixed(1)} ms, warm ${r.series_warm_identity.at(-1).toFixed(1)} / ${r.series_warm_gzip.at(-1).toFixed(1)} / ${r.series_warm_br.at(-1).toFixed(1)} ms (identity / gzip / br); ` +
        `page cold ${r.page_cold.at(-1).toFixed(0)} ms (node ${r.page_cold_node.at(-1).toFixed(0)} ms), warm ${r.page_warm.at(-1).toFixed(0)} ms; ` +
        `csv ${r.csv_identity ? r.csv_identity.at(-1).toFixed(0) : '—'} ms; jobs list cold ${r.jobs_list_cold.at(-1).toFixed(0)} ms; load ${os.loadavg()[0].toFixed(2)}`);
    }
  } finally {
    if (browser) await browser.close();
  }
  const result = {
    date: new Date().toISOString(), commit: gitCommit(REPO), job, series: seriesInfo, chart_points: points,
    csv_bytes: csvBytes,
    median_ms: Object.fromEntries(Object.entries(r).map(([k, v]) => [k, median(v)])),
    max_ms: Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v.length ? Math.max(...v) : NaN])),
    samples: r,
  };
  const m = result.median_ms;
  const f = (v, d = 0) => (Number.isFinite(v) ? v.toFixed(d) : '—');
  console.log(`\njob ${job.id}: ${job.last_seq} events; series answer: ${seriesInfo.points} points of ${seriesInfo.count}, ` +
    `${JSON.stringify(seriesBytes)}; events.csv ${JSON.stringify(csvBytes)}`);
  console.log(`| ${opt.restarts} rounds, medians | ms | target |`);
  console.log('|---|---:|---:|');
  console.log(`| series?points=2000, cold (first call after start) | ${f(m.series_cold, 1)} (max ${f(result.max_ms.series_cold, 1)}) | ≤ 100 |`);
  for (const enc of Object.keys(ENCODINGS)) {
    console.log(`| series?points=2000, warm, Accept-Encoding ${enc === 'identity' ? 'none' : `"${ENCODINGS[enc]}"`} (median of ${opt.warm}) | ${f(m[`series_warm_${enc}`], 1)} | ≤ 100 |`);
  }
  console.log(`| job page, loss chart drawn, cold sparrowd | ${f(m.page_cold)} (max ${f(result.max_ms.page_cold)}) | ≤ 1000 |`);
  console.log(`| … of which: app.js + uPlot arrived / series arrived (cold) | ${f(m.page_cold_assets_at)} / ${f(m.page_cold_series_at)} | |`);
  console.log(`| job page, loss chart drawn, warm (median of 3) | ${f(m.page_warm)} | ≤ 1000 |`);
  console.log(`| … of which: app.js + uPlot arrived / series arrived (warm) | ${f(m.page_warm_assets_at)} / ${f(m.page_warm_series_at)} | |`);
  console.log(`| GET /api/v1/jobs (runs table), cold | ${f(m.jobs_list_cold, 1)} | |`);
  for (const enc of opt.csv_encodings.split(',')) console.log(`| events.csv, Accept-Encoding ${enc} (${csvBytes[enc]}) | ${f(m[`csv_${enc}`])} | |`);
  console.log(`sparrowd VmRSS after the series calls: ${f(median(r.rss_after_series_mb), 1)} MB`);
  if (opt.json) fs.writeFileSync(opt.json, `${JSON.stringify(result, null, 2)}\n`);
  fs.rmSync(tmp, { recursive: true, force: true });
}

main().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});
