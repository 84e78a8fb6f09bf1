// Dashboard acceptance criterion A: what 100 browsers watching one job live cost sparrowd.
//
//   node bench/dashboard_sse.mjs [--bin-dir /tmp/dash-bin] [--clients 100] [--runs 3]
//                                [--epochs 50000] [--train-samples 1024] [--json FILE]
//
// Each run starts a fresh sparrowd (`--listen 127.0.0.1:0 --http-listen 127.0.0.1:0 --data-dir
// TMP --workers 1 --min-event-interval-ms 0`), submits one Adam job on a small state-space RNN
// (synthetic cascaded tanks, 1024 training samples, one event per epoch: about 2,000 iterations
// and events per second on the 2-core VM) and measures, from just before the submission to the
// end of the job (and of every stream):
//   - CPU seconds (utime + stime) of sparrowd's main process and of its worker child processes
//     (the job runs in a `sparrowd --sparrow-worker` child; reaped children via cutime/cstime,
//     live ones sampled every 200 ms from /proc/PID/task/*/children);
//   - VmRSS of sparrowd's main process (sampled every 200 ms; the peak, and VmHWM at the end)
//     minus its VmRSS just before the submission;
//   - the job's own rate: iterations / elapsed_seconds of its final summary.
// Runs alternate (a) no viewer and (b) N SSE clients on /api/v1/jobs/ID/events; the clients are
// one separate node process (this script with --sse-clients) holding N connections, parsing every
// frame (id, event, JSON data) and checking that each got every seq 1..last_seq in order and the
// final state last. Extra CPU = median(b) - median(a) of CPU seconds per wall second (percentage
// points of one core); extra memory = median(b) - median(a) of the RSS growth.
import http from 'node:http';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  childPids, getJson, gitCommit, median, parseArgs, procCpu, procStatusKb, runCli, sleep,
  startSparrowd, submit, tanksSpec, waitForJobEnd,
} from './dashboard_lib.mjs';

const REPO = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');

// ---- client mode: N SSE connections in this process ---------------------------------------------

async function sseClients(url, n) {
  const results = Array.from({ length: n }, () => ({ events: 0, iterations: 0, lastSeq: 0, errors: [], final: null }));
  const t0 = Date.now();
  await Promise.all(results.map((r) => new Promise((resolve) => {
    const req = http.get(url, { agent: false, headers: { Accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) {
        r.errors.push(`HTTP ${res.statusCode}`);
        res.resume();
        res.on('end', resolve);
        return;
      }
      res.setEncoding('utf8');
      let buffer = '';
      res.on('data', (chunk) => {
        buffer += chunk;
        let cut;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          let id = null, kind = null, data = null;
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) continue; // keep-alive comment
            const colon = line.indexOf(':');
            const field = line.slice(0, colon);
            const value = line.slice(colon + 1).trimStart();
            if (field === 'id') id = Number(value);
            else if (field === 'event') kind = value;
            else if (field === 'data') data = data === null ? value : `${data}\n${value}`;
          }
          if (data === null) continue;
          const event = JSON.parse(data);
          r.events++;
          if (event.seq !== id || id !== r.lastSeq + 1) {
            if (r.errors.length < 5) r.errors.push(`seq ${id} (data ${event.seq}) after ${r.lastSeq}`);
          }
          r.lastSeq = id;
          if (kind === 'iteration') r.iterations++;
          if (kind === 'state' && ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(event.state)) r.final = event.state;
        }
      });
      res.on('end', resolve);
      res.on('error', (e) => { r.errors.push(e.message); resolve(); });
    });
    req.on('error', (e) => { r.errors.push(e.message); resolve(); });
  })));
  const cpu = process.cpuUsage();
  process.stdout.write(`${JSON.stringify({
    seconds: (Date.now() - t0) / 1000,
    cpu_seconds: (cpu.user + cpu.system) / 1e6,
    max_rss_mb: process.resourceUsage().maxRSS / 1024,
    results,
  })}\n`);
}

// ---- one measured run -----------------------------------------------------------------------

async function oneRun({ binDir, tmp, csv, clients, epochs, trainSamples, index }) {
  const dataDir = path.join(tmp, `data-${index}`);
  const sd = await startSparrowd(binDir, dataDir, path.join(tmp, `sparrowd-${index}.log`));
  try {
    const specPath = path.join(tmp, 'sse-spec.json');
    fs.writeFileSync(specPath, JSON.stringify(tanksSpec({
      name: 'sse bench', csv, maxEpochs: epochs, trainLast: trainSamples, nx: 2, hidden: 4,
    })));
    await sleep(500); // let sparrowd settle after start-up
    const rss0 = procStatusKb(sd.pid, 'VmRSS');
    const cpu0 = procCpu(sd.pid);
    const t0 = process.hrtime.bigint();
    const id = await submit(binDir, sd.grpc, specPath);

    let clientProc = null;
    let clientOut = '';
    let clientDone = Promise.resolve();
    if (clients > 0) {
      clientProc = spawn(process.execPath, [
        new URL(import.meta.url).pathname, '--sse-clients', `${sd.base}/api/v1/jobs/${id}/events`, String(clients),
      ], { stdio: ['ignore', 'pipe', 'inherit'] });
      clientProc.stdout.on('data', (d) => { clientOut += d; });
      clientDone = new Promise((resolve) => clientProc.on('exit', resolve));
    }

    // Sample memory and the live workers' CPU.
    let maxRss = rss0;
    const workerCpu = new Map();
    const sample = () => {
      try {
        maxRss = Math.max(maxRss, procStatusKb(sd.pid, 'VmRSS'));
        for (const pid of childPids(sd.pid)) {
          try { workerCpu.set(pid, procCpu(pid).self); } catch { /* exited */ }
        }
      } catch { /* sparrowd gone */ }
    };
    const timer = setInterval(sample, 200);

    const summary = await waitForJobEnd(sd.base, id, 600_000);
    await clientDone;
    // Wait for the worker to be reaped (its CPU then shows in cutime) or at most 3 s.
    for (let i = 0; i < 30 && childPids(sd.pid).length > 0; i++) { sample(); await sleep(100); }
    clearInterval(timer);
    sample();
    const wall = Number(process.hrtime.bigint() - t0) / 1e9;
    const cpu1 = procCpu(sd.pid);
    const hwm = procStatusKb(sd.pid, 'VmHWM');
    const mainCpu = cpu1.self - cpu0.self;
    const reaped = cpu1.children - cpu0.children;
    const sampledWorkers = [...workerCpu.values()].reduce((a, b) => a + b, 0);
    const workersCpu = Math.max(reaped, sampledWorkers);

    const run = {
      mode: clients > 0 ? `${clients} SSE clients` : 'no viewer',
      clients,
      job: id,
      state: summary.state,
      iterations: summary.iterations,
      last_seq: summary.last_seq,
      job_seconds: summary.elapsed_seconds,
      it_per_s: summary.iterations / summary.elapsed_seconds,
      wall_s: wall,
      main_cpu_s: mainCpu,
      worker_cpu_s: workersCpu,
      total_cpu_s: mainCpu + workersCpu,
      cpu_per_wall: (mainCpu + workersCpu) / wall,
      main_cpu_per_wall: mainCpu / wall,
      rss_before_mb: rss0 / 1024,
      rss_growth_mb: (maxRss - rss0) / 1024,
      hwm_mb: hwm / 1024,
      load: os.loadavg()[0],
    };
    if (clients > 0) {
      const out = JSON.parse(clientOut);
      const bad = out.results.filter((r) => r.errors.length || r.lastSeq !== summary.last_seq ||
        r.events !== summary.last_seq || r.final !== summary.state);
      run.client_cpu_s = out.cpu_seconds;
      run.client_events_each = median(out.results.map((r) => r.events));
      run.client_events_min = Math.min(...out.results.map((r) => r.events));
      run.clients_complete = out.results.length - bad.length;
      if (bad.length) run.client_problems = bad.slice(0, 3);
    }
    return run;
  } finally {
    await sd.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

function fmt(v, d = 2) {
  return Number.isFinite(v) ? v.toFixed(d) : String(v);
}

async function main() {
  const argv = process.argv.slice(2);
  if (argv[0] === '--sse-clients') return sseClients(argv[1], Number(argv[2]));
  const opt = parseArgs(argv, {
    bin_dir: path.join(REPO, 'build', 'bin'), clients: 100, runs: 3, epochs: 50000, train_samples: 1024, json: '',
  });
  const binDir = path.resolve(opt.bin_dir);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sparrow-sse-bench-'));
  const csv = path.join(tmp, 'tanks.csv');
  await runCli(path.join(binDir, 'sparrow'), ['datagen', 'cascaded-tanks', '--samples', '2048', '--seed', '1', '-o', csv]);
  console.log(`# dashboard_sse: ${new Date().toISOString()}, commit ${gitCommit(REPO)}, ${os.cpus().length} cores, ` +
    `load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  console.log(`# bin ${binDir}; job: Adam, state-space RNN nx 2 [4], ${opt.train_samples} samples, ${opt.epochs} epochs, report_every 1`);
  const runs = [];
  for (let i = 0; i < opt.runs; i++) {
    for (const clients of [0, opt.clients]) {
      const run = await oneRun({ binDir, tmp, csv, clients, epochs: opt.epochs, trainSamples: opt.train_samples, index: runs.length });
      runs.push(run);
      console.log(`run ${runs.length} ${run.mode}: ${run.state} ${run.iterations} it in ${fmt(run.job_seconds)} s = ` +
        `${fmt(run.it_per_s, 0)} it/s; wall ${fmt(run.wall_s)} s; CPU main ${fmt(run.main_cpu_s)} s + workers ` +
        `${fmt(run.worker_cpu_s)} s = ${fmt(100 * run.cpu_per_wall, 1)} % of a core; RSS +${fmt(run.rss_growth_mb, 1)} MB ` +
        `(HWM ${fmt(run.hwm_mb, 1)} MB); load ${fmt(run.load)}` +
        (run.clients ? `; clients: ${run.clients_complete}/${run.clients} got all ${run.last_seq} events ` +
          `(min ${run.client_events_min}), client CPU ${fmt(run.client_cpu_s)} s` : ''));
      if (run.client_problems) console.log(`  problems: ${JSON.stringify(run.client_problems)}`);
    }
  }
  const pick = (c, key) => median(runs.filter((r) => r.clients === c).map((r) => r[key]));
  const a = (k) => pick(0, k), b = (k) => pick(opt.clients, k);
  const result = {
    date: new Date().toISOString(), commit: gitCommit(REPO), clients: opt.clients, runs: opt.runs,
    median_no_viewer: { it_per_s: a('it_per_s'), cpu_per_wall: a('cpu_per_wall'), main_cpu_per_wall: a('main_cpu_per_wall'), total_cpu_s: a('total_cpu_s'), rss_growth_mb: a('rss_growth_mb'), hwm_mb: a('hwm_mb') },
    median_clients: { it_per_s: b('it_per_s'), cpu_per_wall: b('cpu_per_wall'), main_cpu_per_wall: b('main_cpu_per_wall'), total_cpu_s: b('total_cpu_s'), rss_growth_mb: b('rss_growth_mb'), hwm_mb: b('hwm_mb'), client_cpu_s: b('client_cpu_s') },
    extra_cpu_pct_of_core: 100 * (b('cpu_per_wall') - a('cpu_per_wall')),
    extra_cpu_relative: b('total_cpu_s') / a('total_cpu_s') - 1,
    // The viewers' CPU per second of training at the no-viewer speed: not flattered when the
    // viewers slow the job down (then (b) spreads its CPU over a longer wall time).
    extra_cpu_pct_of_core_at_baseline_speed: 100 * (b('total_cpu_s') - a('total_cpu_s')) / a('wall_s'),
    extra_rss_mb: b('rss_growth_mb') - a('rss_growth_mb'),
    it_per_s_ratio: b('it_per_s') / a('it_per_s'),
    all_clients_complete: runs.filter((r) => r.clients).every((r) => r.clients_complete === r.clients),
    runs: runs,
  };
  console.log('\n| | no viewer | ' + `${opt.clients} SSE clients | extra |`);
  console.log('|---|---:|---:|---:|');
  console.log(`| job it/s | ${fmt(a('it_per_s'), 0)} | ${fmt(b('it_per_s'), 0)} | ×${fmt(result.it_per_s_ratio, 3)} |`);
  console.log(`| sparrowd + worker CPU, % of one core | ${fmt(100 * a('cpu_per_wall'), 1)} | ${fmt(100 * b('cpu_per_wall'), 1)} | ` +
    `+${fmt(result.extra_cpu_pct_of_core, 1)} points (target ≤ 10) |`);
  console.log(`| sparrowd main process only, % of one core | ${fmt(100 * a('main_cpu_per_wall'), 1)} | ${fmt(100 * b('main_cpu_per_wall'), 1)} | +${fmt(100 * (b('main_cpu_per_wall') - a('main_cpu_per_wall')), 1)} points |`);
  console.log(`| extra CPU seconds / wall seconds of the no-viewer run | | | +${fmt(result.extra_cpu_pct_of_core_at_baseline_speed, 1)} points |`);
  console.log(`| wall seconds (submit to end of job and streams) | ${fmt(a('wall_s'))} | ${fmt(b('wall_s'))} | |`);
  console.log(`| CPU seconds for the whole job | ${fmt(a('total_cpu_s'))} | ${fmt(b('total_cpu_s'))} | +${fmt(100 * result.extra_cpu_relative, 1)} % |`);
  console.log(`| sparrowd RSS growth, MB | ${fmt(a('rss_growth_mb'), 1)} | ${fmt(b('rss_growth_mb'), 1)} | +${fmt(result.extra_rss_mb, 1)} MB (target ≤ 50) |`);
  console.log(`| sparrowd VmHWM, MB | ${fmt(a('hwm_mb'), 1)} | ${fmt(b('hwm_mb'), 1)} | |`);
  console.log(`| the clients' own CPU (one node process) | | ${fmt(b('client_cpu_s'))} s | |`);
  console.log(`all clients got every event: ${result.all_clients_complete}`);
  if (opt.json) fs.writeFileSync(opt.json, `${JSON.stringify(result, null, 2)}\n`);
  fs.rmSync(tmp, { recursive: true, force: true });
}

main().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});
