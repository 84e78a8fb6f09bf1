// The cost of the series blocks (server/store/series_blocks.h) to a job that reports every
// iteration: the 1,000,000-event job of dashboard_series.mjs trained by this build's sparrowd and
// by a peer build's (--peer-bin-dir, e.g. one from before the blocks), alternating, --runs each.
//
//   node bench/dashboard_append.mjs --bin-dir build/bin --peer-bin-dir /tmp/old-bin
//                                   [--events 1000000] [--runs 3] [--json FILE]
//
// Per run: a fresh data dir, sparrowd (1 worker, --min-event-interval-ms 0), one job: Adam on a
// tiny RNN (nx 1, 2 hidden units, 16 training samples), report_every 1. Measures the optimizer
// time (the job's elapsed_seconds), submission to SUCCEEDED, sparrowd's CPU seconds (main
// process, the worker excluded) and the data dir's size. Reports medians and new/peer ratios.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  gitCommit, median, parseArgs, procCpu, runCli, startSparrowd, submit, tanksSpec, waitForJobEnd,
} from './dashboard_lib.mjs';

const REPO = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');

function dirBytes(dir) {
  let total = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    total += e.isDirectory() ? dirBytes(p) : fs.statSync(p).size;
  }
  return total;
}

async function trainOnce(binDir, work, csv, events) {
  const dataDir = path.join(work, 'data');
  fs.rmSync(dataDir, { recursive: true, force: true });
  const specPath = path.join(work, 'spec.json');
  fs.writeFileSync(specPath, JSON.stringify(tanksSpec({
    name: `${events} events`, csv, maxEpochs: events - 3, trainLast: 16, nx: 1, hidden: 2,
  })));
  const sd = await startSparrowd(binDir, dataDir, path.join(work, 'sparrowd.log'));
  try {
    const cpu0 = procCpu(sd.pid).self;
    const t0 = Date.now();
    const id = await submit(binDir, sd.grpc, specPath);
    const summary = await waitForJobEnd(sd.base, id, 3_600_000);
    const submitToEnd = (Date.now() - t0) / 1000;
    if (summary.state !== 'SUCCEEDED') throw new Error(`job ended ${summary.state}: ${summary.reason}`);
    return {
      train_s: summary.elapsed_seconds, submit_to_end_s: submitToEnd,
      sparrowd_cpu_s: procCpu(sd.pid).self - cpu0, last_seq: summary.last_seq,
    };
  } finally {
    await sd.stop();  // the data dir is measured after a clean stop
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2), {
    bin_dir: path.join(REPO, 'build', 'bin'), peer_bin_dir: '', events: 1000000, runs: 3, json: '',
  });
  if (!args.peer_bin_dir) throw new Error('--peer-bin-dir is required (a build to compare with)');
  const { events } = args;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'dashboard-append-'));
  const csv = path.join(work, 'tanks.csv');
  await runCli(path.join(args.bin_dir, 'sparrow'),
    ['datagen', 'cascaded-tanks', '--samples', '2048', '--seed', '1', '-o', csv]);
  console.log(`# dashboard_append: ${new Date().toISOString()}, commit ${gitCommit(REPO)}, ` +
    `${os.cpus().length} cores, ${events} events; new ${args.bin_dir}, peer ${args.peer_bin_dir}`);
  const results = { new: [], peer: [] };
  for (let run = 0; run < args.runs; ++run) {
    for (const [name, dir] of [['peer', args.peer_bin_dir], ['new', args.bin_dir]]) {
      const r = await trainOnce(dir, work, csv, events);
      r.data_mb = dirBytes(path.join(work, 'data')) / 1e6;
      results[name].push(r);
      console.log(`run ${run + 1} ${name}: train ${r.train_s.toFixed(2)} s, submit to end ` +
        `${r.submit_to_end_s.toFixed(2)} s, sparrowd CPU ${r.sparrowd_cpu_s.toFixed(2)} s, ` +
        `data ${r.data_mb.toFixed(1)} MB`);
    }
  }
  console.log('| median | peer | new | new / peer |\n|---|---:|---:|---:|');
  for (const key of ['train_s', 'submit_to_end_s', 'sparrowd_cpu_s', 'data_mb']) {
    const p = median(results.peer.map((r) => r[key]));
    const n = median(results.new.map((r) => r[key]));
    console.log(`| ${key} | ${p.toFixed(2)} | ${n.toFixed(2)} | ${(n / p).toFixed(3)} |`);
  }
  if (args.json) fs.writeFileSync(args.json, `${JSON.stringify(results, null, 2)}\n`);
  fs.rmSync(work, { recursive: true, force: true });
}

main().catch((e) => { console.error(e); process.exit(1); });
