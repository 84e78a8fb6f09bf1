// Shared helpers of the dashboard benchmarks (bench/dashboard_sse.mjs, bench/dashboard_series.mjs):
// start sparrowd on free ports, submit specs with `sparrow submit`, read a process's CPU time and
// memory from /proc. Linux only.
import { spawn, execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

export const CLK_TCK = 100; // getconf CLK_TCK on Linux x86-64

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function median(values) {
  const v = [...values].sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const m = Math.floor(v.length / 2);
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

export function parseArgs(argv, defaults) {
  const out = { ...defaults };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([\w-]+)(?:=(.*))?$/.exec(argv[i]);
    if (!m) throw new Error(`unexpected argument ${argv[i]}`);
    const key = m[1].replace(/-/g, '_');
    if (!(key in defaults)) throw new Error(`unknown option --${m[1]}`);
    const value = m[2] ?? argv[++i];
    out[key] = typeof defaults[key] === 'number' ? Number(value) : value;
  }
  return out;
}

export async function waitFor(what, probe, timeoutMs = 60_000, everyMs = 100) {
  const deadline = Date.now() + timeoutMs;
  let last = null;
  while (Date.now() < deadline) {
    try {
      const v = await probe();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await sleep(everyMs);
  }
  throw new Error(`timed out waiting for ${what}${last ? ` (${last.message})` : ''}`);
}

export async function runCli(bin, args) {
  const { stdout } = await promisify(execFile)(bin, args, { timeout: 120_000, maxBuffer: 1 << 26 });
  return stdout;
}

// Starts sparrowd with ports 0 and reads the chosen ports from its log. Returns
// {pid, child, grpc, http, stop()}; stop() sends SIGTERM to its process group and waits.
export async function startSparrowd(binDir, dataDir, logFile, extraArgs = []) {
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(logFile, '');
  const out = fs.openSync(logFile, 'a');
  const args = [
    '--listen', '127.0.0.1:0',
    '--http-listen', '127.0.0.1:0',
    '--data-dir', dataDir,
    '--workers', '1',
    '--min-event-interval-ms', '0',
    ...extraArgs,
  ];
  const child = spawn(path.join(binDir, 'sparrowd'), args, { detached: true, stdio: ['ignore', out, out] });
  fs.closeSync(out);
  let exited = false;
  const exitPromise = new Promise((resolve) => child.on('exit', () => { exited = true; resolve(); }));
  const ports = await waitFor('sparrowd ports', () => {
    if (exited) throw new Error(`sparrowd exited: ${fs.readFileSync(logFile, 'utf8')}`);
    const text = fs.readFileSync(logFile, 'utf8');
    const http = /dashboard on http:\/\/([\d.]+:\d+)/.exec(text);
    const grpc = /listening on ([\d.]+:\d+)/.exec(text);
    return http && grpc ? { http: http[1], grpc: grpc[1] } : null;
  }, 30_000, 50);
  const base = `http://${ports.http}`;
  await waitFor('GET /api/v1/session', async () => (await fetch(`${base}/api/v1/session`)).ok, 30_000, 50);
  return {
    pid: child.pid,
    child,
    grpc: ports.grpc,
    base,
    command: `sparrowd ${args.join(' ')}`,
    async stop() {
      if (exited) return;
      try { process.kill(-child.pid, 'SIGTERM'); } catch { /* gone */ }
      const t = setTimeout(() => { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } }, 10_000);
      await exitPromise;
      clearTimeout(t);
    },
  };
}

export async function submit(binDir, grpc, specPath) {
  const stdout = await runCli(path.join(binDir, 'sparrow'), ['submit', specPath, '--server', grpc, '--json']);
  return JSON.parse(stdout).job_id;
}

export async function getJson(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`GET ${url}: ${r.status} ${await r.text()}`);
  return r.json();
}

export async function waitForJobEnd(base, id, timeoutMs) {
  return waitFor(`job ${id} to end`, async () => {
    const { summary } = await getJson(`${base}/api/v1/jobs/${id}`);
    return ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(summary.state) ? summary : null;
  }, timeoutMs, 250);
}

// A small state-space RNN on the synthetic cascaded tanks (sparrow datagen), Adam, one event per
// epoch (report_every 1). trainLast = number of training samples: 1024 gives about 2,000 epochs/s
// on the 2-core VM, 16 (with nx = 1, 2 hidden units) about 80,000.
export function tanksSpec({ name, csv, maxEpochs, trainLast, nx, hidden }) {
  return {
    name,
    data: { csv_path: csv, inputs: ['u'], outputs: ['y'] },
    split: { train: [{ first: 1, last: trainLast }], test: [{ first: 1025, last: 2048 }] },
    model: {
      state_space_rnn: { nx, fx_hidden: [hidden], fy_hidden: [hidden], initial_state: 'INITIAL_STATE_FREE' },
      init_scale: 0.5,
    },
    regularization: { rho_x0: 0.01, rho_theta: 0.01 },
    optimizer: { adam: { learning_rate: 0.001 } },
    stopping: { max_epochs: maxEpochs, report_every: 1 },
    seed: 1,
  };
}

// utime + stime (and cutime + cstime: waited-for children) of a process, in seconds.
export function procCpu(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields after the command: state(3) ... utime(14) stime(15) cutime(16) cstime(17), 1-based.
  const num = (k) => Number(f[k - 3]);
  return { self: (num(14) + num(15)) / CLK_TCK, children: (num(16) + num(17)) / CLK_TCK };
}

export function procStatusKb(pid, key) {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}

export function childPids(pid) {
  const out = [];
  for (const task of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const text = fs.readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
      if (text) out.push(...text.split(/\s+/).map(Number));
    } catch { /* thread gone */ }
  }
  return out;
}

export function gitCommit(repo) {
  try {
    return execFileSync('git', ['-C', repo, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}
