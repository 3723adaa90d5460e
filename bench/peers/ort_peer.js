// ONNX Runtime (onnxruntime-node, CPU) on the models ort_runner.py wrote:
// for each problem of the job file, a session with the run's threads, one
// checked execution whose output is written for the comparison, then the
// timing rule of `dgrad bench` (timing.py, bench/measure.c). Only
// session.run is timed, on inputs and an output tensor allocated once;
// then ONNX Runtime's own time per run, from its profiler.
// Usage: node ort_peer.js JOB.json; one JSON line per problem on stdout.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

function nowMs() {
  return Number(process.hrtime.bigint()) / 1e6;
}

function readF32(file, dims) {
  const bytes = fs.readFileSync(file);
  const n = dims.reduce((a, b) => a * b, 1);
  if (bytes.length !== 4 * n) throw new Error(`${file}: ${bytes.length} bytes, expected ${4 * n}`);
  // Own, aligned copy: a Buffer may share a pool at any offset.
  const data = new Float32Array(n);
  new Uint8Array(data.buffer).set(bytes);
  return data;
}

function median(v) {
  const s = [...v].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

// The rule of timing.py: warm-up, executions per sample, samples.
async function measure(run, t) {
  const w = Math.max(t.warmup, 1);
  let t0 = nowMs();
  for (let k = 0; k < w; k++) await run();
  const per = (nowMs() - t0) / w;
  let inner = per > 0 ? Math.ceil(t.min_sample_ms / per) : 1000;
  inner = Math.min(Math.max(inner, 1), 10000);
  let reps = t.reps;
  const perRound = per * inner;
  const budgetMs = t.max_problem_s * 1e3;
  if (perRound * reps > budgetMs) {
    const fit = Math.floor(budgetMs / perRound);
    reps = fit >= 3 ? fit : Math.min(reps, 3);
  }
  const samples = [];
  for (let r = 0; r < reps; r++) {
    t0 = nowMs();
    for (let k = 0; k < inner; k++) await run();
    samples.push((nowMs() - t0) / inner);
  }
  return { ms: median(samples), min_ms: Math.min(...samples), max_ms: Math.max(...samples), reps, inner };
}

// The run's threads for the op, none across ops (there is one).
function sessionOptions(job) {
  return {
    executionProviders: ['cpu'],
    intraOpNumThreads: job.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  };
}

async function runProblem(job, p) {
  const session = await ort.InferenceSession.create(p.model, sessionOptions(job));
  const feeds = {};
  for (const input of p.inputs) feeds[input.name] = new ort.Tensor('float32', readF32(input.file, input.dims), input.dims);
  const yDims = p.output.dims;
  const y = new ort.Tensor('float32', new Float32Array(yDims.reduce((a, b) => a * b, 1)), yDims);
  const fetches = { [p.output.name]: y };
  const first = await session.run(feeds, fetches);
  const got = first[p.output.name];
  if (got.dims.join('x') !== yDims.join('x')) throw new Error(`output ${got.dims.join('x')}, expected ${yDims.join('x')}`);
  fs.writeFileSync(p.output.file, Buffer.from(got.data.buffer, got.data.byteOffset, got.data.byteLength));
  const timing = await measure(() => session.run(feeds, fetches), job.timing);
  await session.release();
  timing.session_ms = await profiledRunMs(job, p, feeds, fetches, timing.reps);
  return timing;
}

// ONNX Runtime's own time inside run (its profiler's model_run events),
// without the Node binding around it (argument conversion, the copy of
// the output into the result tensor, the promise): median over `reps`
// runs after the warm-up, on a second session with profiling on.
async function profiledRunMs(job, p, feeds, fetches, reps) {
  const prefix = `${p.model}.profile`;
  const session = await ort.InferenceSession.create(p.model, {
    ...sessionOptions(job),
    enableProfiling: true,
    profileFilePrefix: prefix,
  });
  const warmup = Math.max(job.timing.warmup, 1);
  for (let k = 0; k < warmup + reps; k++) await session.run(feeds, fetches);
  session.endProfiling();
  await session.release();
  const dir = path.dirname(prefix);
  const file = fs.readdirSync(dir).map((f) => path.join(dir, f)).find((f) => f.startsWith(prefix) && f.endsWith('.json'));
  if (!file) throw new Error(`no profile written with prefix ${prefix}`);
  const runs = JSON.parse(fs.readFileSync(file, 'utf8')).filter((e) => e.cat === 'Session' && e.name === 'model_run');
  fs.unlinkSync(file);
  if (runs.length !== warmup + reps) throw new Error(`profile has ${runs.length} runs, expected ${warmup + reps}`);
  return median(runs.slice(warmup).map((e) => e.dur / 1e3));
}

async function main() {
  const job = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  let failed = 0;
  for (const p of job.problems) {
    let line;
    try {
      line = { id: p.id, ...(await runProblem(job, p)) };
    } catch (e) {
      line = { id: p.id, error: String(e && e.message ? e.message : e) };
      failed++;
    }
    process.stdout.write(JSON.stringify(line) + '\n');
  }
  process.exitCode = failed ? 1 : 0;
}

if (process.argv[2] === '--version') {
  process.stdout.write(JSON.stringify({ 'onnxruntime-node': ort.env.versions.node, node: process.versions.node }) + '\n');
} else {
  main().catch((e) => {
    process.stderr.write(`ort_peer.js: ${e.stack || e}\n`);
    process.exit(1);
  });
}
