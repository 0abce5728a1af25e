// run.mjs: the Worker in workerd against a flaky upstream, checked from the upstream's log.
//
//   node test/run.mjs [path/to/workerd]     (default: the npm package's binary)
//
// 1. Starts the upstream (upstream.mjs) and workerd (config.capnp) on free loopback ports.
// 2. GET /selftest/frozen: the time rule, checked inside workerd.
// 3. 200 requests through the Worker, one every SPACING_MS: the first 90 while the upstream
//    is flaky (every 5th answer a 503 + Retry-After: 1), the next 60 during an outage (every
//    answer so), the last 50 once it is healthy again.
// 4. Checks on what the upstream saw: retries within the budget, no attempt before the
//    Retry-After it followed, the breaker opening (traffic stops), probing while open (one
//    probe at a time, never before the open wait), and closing once a probe succeeds.
// Prints one line per check and "N passed, N failed"; exits 1 on any failure, 2 if the
// setup failed. Bounded: everything is stopped after DEADLINE_MS.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { startUpstream, RETRY_AFTER_S } from './upstream.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..');
// The platform's binary itself (the package's bin/ script is a Node wrapper that would not
// pass on the control descriptor).
const WORKERD = process.argv[2] ?? createRequire(import.meta.url)('workerd').default;
const REQUESTS = 200, OUTAGE_FROM = 90, HEALTHY_FROM = 150, SPACING_MS = 25;
const DEADLINE_MS = 90_000;
// The Worker's policy set UPSTREAM (wasm/src/policies.rs).
const BUDGET = { initial: 5, retryCost: 1, firstTrySuccess: 0.1, retrySuccess: 0.1 };
const OPEN_WAIT_MS = 1000, OPEN_JITTER = 0.1, MAX_ATTEMPTS = 3;
// Clocks compared here are whole milliseconds on one side (the Worker's Date.now()).
const MS_SLACK = 1;

let workerd = null;
const watchdog = setTimeout(() => {
  console.error(`run.mjs: not done after ${DEADLINE_MS} ms, stopping`);
  workerd?.kill('SIGKILL');
  process.exit(2);
}, DEADLINE_MS);

function startWorkerd(upstreamUrl) {
  return new Promise((resolve, reject) => {
    workerd = spawn(WORKERD, ['serve', path.join(ROOT, 'config.capnp'), '--socket-addr', 'http=127.0.0.1:0', '--control-fd', '3'], {
      cwd: ROOT,
      env: { ...process.env, RESILIX_UPSTREAM: upstreamUrl },
      stdio: ['ignore', 'inherit', 'inherit', 'pipe'],
    });
    let control = '';
    workerd.stdio[3].on('data', (chunk) => {
      control += chunk;
      for (const line of control.split('\n').slice(0, -1)) {
        const event = JSON.parse(line);
        if (event.event === 'listen' && event.socket === 'http') resolve(`http://127.0.0.1:${event.port}`);
      }
    });
    if (process.env.WORKERD_PID_FILE) writeFileSync(process.env.WORKERD_PID_FILE, String(workerd.pid));
    workerd.once('exit', (code, signal) => reject(new Error(`workerd exited early (${code ?? signal})`)));
    workerd.once('error', reject);
  });
}

const results = [];
function check(name, ok, detail = '') {
  results.push(ok);
  console.log(`check ${name} ... ${ok ? 'ok' : 'FAILED'}${detail ? `  (${detail})` : ''}`);
}

async function main() {
  const upstream = await startUpstream();
  const base = await startWorkerd(upstream.url);
  console.log(`upstream ${upstream.url}, worker ${base}`);

  // ---- the time rule, inside workerd ----
  const selftest = await (await fetch(`${base}/selftest/frozen`)).json();
  console.log(`selftest: this runtime ${selftest.runtimeFrozen ? 'froze' : 'did not freeze'} Date.now() during a busy loop (it advanced ${selftest.spinAdvancedMs} ms)`);
  for (const c of selftest.checks) check(`frozen_clock.${c.name}`, c.ok, JSON.stringify(c.detail));

  const reclaimedBefore = (await (await fetch(`${base}/stats`)).json()).reclaimedSlots;

  // ---- a request its client abandons while the Worker's fetch hangs ----
  // (Half a second after the selftest, whose policy set it shares, so its rate limit has
  // refilled; it runs beside the load.)
  const abandoned = new Promise((resolve) => setTimeout(resolve, 500)).then(() =>
    fetch(`${base}/cancel/hang`, { signal: AbortSignal.timeout(200) })).then(
    (r) => `answered ${r.status} ${r.headers.get('x-resilix-outcome')}`, (e) => `abandoned by its client (${e.name})`);

  // ---- the load ----
  const sent = [];
  const start = Date.now();
  const responses = await Promise.all(Array.from({ length: REQUESTS }, (_, i) => new Promise((resolve) => {
    setTimeout(async () => {
      if (i === OUTAGE_FROM) upstream.phase = 'outage';
      if (i === HEALTHY_FROM) upstream.phase = 'healthy';
      const phase = upstream.phase;
      sent.push({ i, phase });
      try {
        const r = await fetch(`${base}/api/item/${i}`, { headers: { 'x-request-id': String(i) } });
        await r.arrayBuffer();
        resolve({ i, phase, status: r.status, outcome: r.headers.get('x-resilix-outcome') ?? '', attempts: Number(r.headers.get('x-resilix-attempts')) });
      } catch (e) {
        resolve({ i, phase, status: 0, outcome: `error:${e.message}`, attempts: 0 });
      }
    }, i * SPACING_MS);
  })));
  const elapsed = Date.now() - start;
  // The abandoned call's lease (2 s + 1 s grace) ran out during the load, whose calls
  // swept it up if the runtime had not run its `finally`.
  console.log(`abandoned call: ${await abandoned}; the upstream saw ${upstream.hung.length} attempt(s) of it`);
  const stats = await (await fetch(`${base}/stats`)).json();

  // ---- what happened ----
  const log = upstream.log;
  const byPhase = (xs, p) => xs.filter((x) => x.phase === p).length;
  const outcomes = {};
  for (const r of responses) outcomes[r.outcome] = (outcomes[r.outcome] ?? 0) + 1;
  console.log(`200 requests in ${elapsed} ms; outcomes at the client: ${JSON.stringify(outcomes)}`);
  console.log('phase    client requests  upstream requests  retries  503s  probes');
  for (const p of ['flaky', 'outage', 'healthy']) {
    const l = log.filter((e) => e.phase === p);
    console.log(`${p.padEnd(8)} ${String(byPhase(sent, p)).padStart(15)} ${String(l.length).padStart(18)} ${String(l.filter((e) => e.attempt > 1).length).padStart(8)} ${String(l.filter((e) => e.status === 503).length).padStart(5)} ${String(l.filter((e) => e.probe).length).padStart(7)}`);
  }
  console.log(`worker stats: ${JSON.stringify(stats)}`);
  if (process.env.RUN_DEBUG) for (const r of responses) console.log(JSON.stringify(r), JSON.stringify(log.filter((e) => e.id === String(r.i)).map((e) => [e.attempt, e.status, Math.round(e.arrival - start)])));

  // ---- checks ----
  check('every_request_answered', responses.every((r) => (r.status === 200 || r.status === 503) && /^(ok|gave-up:|refused:)/.test(r.outcome)),
    responses.filter((r) => !(r.status === 200 || r.status === 503)).map((r) => `${r.i}:${r.status}:${r.outcome}`).slice(0, 5).join(' '));
  const firsts = log.filter((e) => e.attempt === 1);
  const retries = log.filter((e) => e.attempt > 1);
  check('every_upstream_request_stamped', log.every((e) => e.id !== '' && e.attempt >= 1 && e.attempt <= MAX_ATTEMPTS),
    `${log.length} requests, attempts 1..${MAX_ATTEMPTS}`);
  check('one_first_attempt_per_request', new Set(firsts.map((e) => e.id)).size === firsts.length && firsts.length <= REQUESTS,
    `${firsts.length} first attempts`);

  // The token bucket can have granted at most (initial + deposits) / cost retries: deposits
  // come only from successes, which the upstream counts (capacity only loses deposits).
  const firstOk = firsts.filter((e) => e.status === 200).length;
  const retryOk = retries.filter((e) => e.status === 200).length;
  const allowance = Math.floor((BUDGET.initial + BUDGET.firstTrySuccess * firstOk + BUDGET.retrySuccess * retryOk) / BUDGET.retryCost + 1e-9);
  // Every 5th answer failing wants retries for 20 % of calls; deposits of 0.1 per success
  // pay for 10 %, so the budget must also have said no.
  const budgetRefused = responses.filter((r) => r.outcome === 'gave-up:budget-exceeded').length;
  check('retries_within_budget', retries.length <= allowance && retries.length > 0 && budgetRefused > 0,
    `${retries.length} retries reached the upstream; the budget allows at most ${allowance} (5 + 0.1 x ${firstOk} first-try successes + 0.1 x ${retryOk} successful retries); ${budgetRefused} calls gave up with budget-exceeded`);

  // No attempt before the Retry-After its predecessor was answered with.
  const attempts = new Map();
  for (const e of log) attempts.set(`${e.id}#${e.attempt}`, e);
  let pairs = 0, early = [];
  for (const e of retries) {
    const prev = attempts.get(`${e.id}#${e.attempt - 1}`);
    if (!prev) { early.push(`${e.id}#${e.attempt}: no previous attempt`); continue; }
    if (prev.retryAfterS === null) continue;
    pairs++;
    const gap = e.arrival - prev.sent;
    if (gap < prev.retryAfterS * 1000 - MS_SLACK) early.push(`${e.id}#${e.attempt} after ${gap.toFixed(1)} ms`);
  }
  const minGap = Math.min(...retries.map((e) => { const p = attempts.get(`${e.id}#${e.attempt - 1}`); return p ? e.arrival - p.sent : Infinity; }));
  check('no_request_before_its_retry_after', early.length === 0 && pairs >= 3,
    early.length ? early.slice(0, 5).join(', ') : `${pairs} retries after a Retry-After of ${RETRY_AFTER_S} s; the earliest came ${minGap.toFixed(1)} ms after the 503 left`);

  // The breaker opened: in the outage the Worker refused calls itself, and the upstream saw
  // fewer requests than the client sent.
  const circuitOpen = responses.filter((r) => r.outcome === 'refused:circuit-open');
  check('breaker_opened', circuitOpen.length > 0 && byPhase(log, 'outage') < byPhase(sent, 'outage'),
    `${circuitOpen.length} calls refused circuit-open; outage: ${byPhase(sent, 'outage')} client requests, ${byPhase(log, 'outage')} reached the upstream`);

  // Probing: while open, single probes; failed ones during the outage, then one that
  // succeeded and closed the circuit, after which ordinary traffic flowed again.
  const probes = log.filter((e) => e.probe);
  const lastProbe = probes.at(-1);
  const afterClose = lastProbe ? log.filter((e) => e.arrival > lastProbe.arrival && !e.probe) : [];
  check('breaker_probed_half_open', probes.some((p) => p.status === 503) && lastProbe?.status === 200 && afterClose.length > 0 && afterClose.every((e) => e.status === 200),
    `${probes.length} probes: ${probes.map((p) => p.status).join(', ')}; ${afterClose.length} requests after the last`);
  const overlapping = probes.filter((p) => log.some((e) => e !== p && e.arrival >= p.arrival && e.arrival <= p.sent));
  check('one_probe_at_a_time', probes.length > 0 && overlapping.length === 0,
    overlapping.length ? `requests arrived during probes of ${overlapping.map((p) => p.id).join(', ')}` : 'no request reached the upstream while a probe was out');
  // After a failed probe the circuit re-opens for the open wait (less its jitter): nothing
  // reaches the upstream before then.
  const minOpen = OPEN_WAIT_MS * (1 - OPEN_JITTER) - MS_SLACK;
  const quiet = probes.filter((p) => p.status === 503).map((p) => {
    const next = log.find((e) => e.arrival > p.sent);
    return next ? next.arrival - p.sent : Infinity;
  });
  check('open_wait_after_failed_probe', quiet.length > 0 && quiet.every((q) => q >= minOpen),
    `silence after each failed probe: ${quiet.map((q) => `${q.toFixed(0)} ms`).join(', ')} (at least ${minOpen} ms)`);
  const firstProbe = probes[0];
  const before = firstProbe ? log.filter((e) => e.arrival < firstProbe.arrival).at(-1) : undefined;
  const silence = firstProbe && before ? firstProbe.arrival - before.arrival : 0;
  check('silence_before_first_probe', silence >= OPEN_WAIT_MS / 2,
    `${silence.toFixed(0)} ms without a request before the first probe`);

  check('worker_state_after_run', stats.liveCalls === 0 && stats.breaker === 'closed' && stats.transitions >= 4 && stats.randomDraws > 0 && stats.randomDraws === stats.moduleDraws,
    `live calls ${stats.liveCalls}, breaker ${stats.breaker}, ${stats.transitions} transitions, ${stats.randomDraws} random words drawn inside requests`);

  // Either the runtime ran the call on to its own timeout (workerd does) and its `finally`
  // freed the slot, or it dropped the call and the slot's lease reclaimed it.
  check('abandoned_call_released', upstream.hung.length >= 1 && stats.liveCalls === 0,
    `${stats.reclaimedSlots > reclaimedBefore ? `dropped by the runtime, ${stats.reclaimedSlots - reclaimedBefore} slot(s) reclaimed by lease` : 'workerd ran it on to its own timeout; its finally freed the slot'}; ${stats.liveCalls} held after the run`);

  const failed = results.filter((ok) => !ok).length;
  console.log(`${results.length - failed} passed, ${failed} failed`);
  return failed === 0 ? 0 : 1;
}

let code = 2;
try {
  code = await main();
} catch (e) {
  console.error(`run.mjs: ${e.stack ?? e}`);
} finally {
  clearTimeout(watchdog);
  workerd?.kill('SIGTERM');
}
process.exit(code);
