#!/usr/bin/env node
// check.mjs: load the resilix wasm module in Node the way a Workers-style isolate would (no
// WASI, no bindgen glue, nothing imported) and check its decisions.
//
//   node firmware/wasm/check.mjs path/to/resilix_wasm.wasm
//
// 1. The module's shape: no imports at all (so no global randomness and no clock it could
//    read behind the host's back) and no start function (nothing runs at instantiation).
// 2. Every scenario of firmware/checks, compared inside the module with the vectors the host
//    computed (src/expected.rs), exactly as the firmware does under QEMU.
// 3. The C ABI driven as a Worker would drive it: the host supplies the time and the seed,
//    and every expected value below is one the core's own host tests assert.
// 4. The breaker, retry, throttler, rate limiter and limiter through the C ABI, driven from
//    here step by step as the scenarios of firmware/checks drive them on the device, with the
//    same seeds and configurations; each trace must equal the vector the host computed for
//    that scenario (checks/src/expected.rs, read out of the module).
// Exit status: 0 all passed, 1 a check failed, 2 the module could not be loaded.
import { readFileSync } from 'node:fs';

const file = process.argv[2];
if (!file) {
  console.error('usage: node check.mjs resilix_wasm.wasm');
  process.exit(2);
}
const bytes = readFileSync(file);
let module;
try {
  module = await WebAssembly.compile(bytes);
} catch (e) {
  console.error(`check.mjs: cannot load ${file}: ${e.message}`);
  process.exit(2);
}

let passed = 0, failed = 0;
function check(name, fn) {
  let why = null;
  try {
    why = fn();
  } catch (e) {
    why = `threw: ${e.message}`;
  }
  if (why === null || why === undefined) { passed++; console.log(`check ${name} ... ok`); }
  else { failed++; console.log(`check ${name} ... FAILED: ${why}`); }
}
const eq = (got, want, what) => (got === want ? null : `${what}: got ${got}, want ${want}`);
const all = (...results) => results.find((r) => r !== null) ?? null;
// A fresh instance per check, as an isolate is fresh per deployment.
const fresh = () => new WebAssembly.Instance(module, {}).exports;

// ---- 1. shape ----
check('imports_nothing', () => {
  const imports = WebAssembly.Module.imports(module);
  return imports.length === 0 ? null : `imports ${imports.map((i) => `${i.module}.${i.name}`).join(', ')}`;
});
check('no_start_function', () => {
  // Walk the binary's sections: id 8 is the start section.
  let at = 8;
  const leb = () => {
    let result = 0, shift = 0, byte;
    do { byte = bytes[at++]; result |= (byte & 0x7f) << shift; shift += 7; } while (byte & 0x80);
    return result >>> 0;
  };
  while (at < bytes.length) {
    const id = bytes[at++];
    const size = leb();
    if (id === 8) return 'the module has a start function';
    at += size;
  }
  return null;
});

// ---- 2. the shared on-device scenarios ----
{
  const x = fresh();
  const n = x.checks_len();
  if (n === 0) check('scenarios_present', () => 'no scenarios exported');
  for (let i = 0; i < n; i++) {
    const name = Buffer.from(new Uint8Array(x.memory.buffer, x.check_name_ptr(i), x.check_name_len(i))).toString();
    check(`scenario_${name}`, () => {
      const code = fresh().check_run(i);
      if (code === 0) return null;
      if (code >= 1000) return `step ${code - 1000} differs from the host's vector`;
      return ['', 'inline assertion failed', 'trace length differs', 'trace overflowed'][code] ?? `code ${code}`;
    });
  }
}

// ---- 3. the C ABI, host-supplied time and seed ----
check('seeded_random_matches_core_pins', () => {
  const x = fresh();
  // core/src/random/seeded.rs pins these four outputs for seed 42.
  const pinned = [2643743425, 1762251840, 1632151183, 1417845339];
  return all(...pinned.map((want, i) => eq(x.rx_random(42n, i) >>> 0, want, `seed 42 output ${i}`)),
    x.rx_random(43n, 0) >>> 0 === pinned[0] ? 'seed 43 gives seed 42\'s stream' : null);
});

const KIND = { success: 1, answered: 2, overload: 3, transient: 4, timeout: 5, uncertain: 7 };
const verdict = (kind, retryAfterMs) => BigInt(KIND[kind]) | (retryAfterMs === undefined ? 0n : BigInt(retryAfterMs + 1) << 8n);
function classify(x, status, header, nowUnixSecs = 0) {
  const enc = new TextEncoder().encode(header ?? '');
  new Uint8Array(x.memory.buffer, x.rx_buffer(), enc.length).set(enc);
  return x.rx_classify(status, enc.length, BigInt(nowUnixSecs));
}
check('http_classification_and_retry_after', () => {
  const x = fresh();
  const now = 784111777; // Sun, 06 Nov 1994 08:49:37 GMT (core's parse_delay doc test)
  return all(
    eq(classify(x, 200), verdict('success'), '200'),
    eq(classify(x, 404), verdict('answered'), '404'),
    eq(classify(x, 504), verdict('timeout'), '504'),
    eq(classify(x, 500, '1', now), verdict('uncertain'), '500 drops its Retry-After'),
    eq(classify(x, 408), verdict('transient'), '408 is safe to repeat'),
    eq(classify(x, 429, '120', now), verdict('overload', 120000), '429 delta-seconds'),
    eq(classify(x, 503, 'Sun, 06 Nov 1994 08:50:07 GMT', now), verdict('overload', 30000), '503 HTTP-date'),
    eq(classify(x, 503, 'Sun, 06 Nov 1994 08:49:07 GMT', now), verdict('overload'), 'a past date is no advice'),
    eq(classify(x, 503, '-1', now), verdict('overload'), 'a negative delay is ignored'),
  );
});

check('no_default_seed', () => {
  const x = fresh();
  return all(eq(x.rx_admit(0n), -1, 'admit before the host seeds'), eq(x.rx_request(0n, 200, 5n), -1n, 'request before seeding'));
});

check('bulkhead_permits_across_host_calls', () => {
  const x = fresh();
  x.rx_seed(0x5eedn);
  const a = x.rx_admit(1000n), b = x.rx_admit(1001n);
  const full = x.rx_admit(1002n);
  const heldFull = x.rx_held();
  const cancelled = x.rx_cancel(b); // the host aborted b's fetch
  const heldAfterCancel = x.rx_held();
  const c = x.rx_admit(1003n);
  const settledA = x.rx_settle(a, 503, 1050n);
  const settledC = x.rx_settle(c, 200, 1060n);
  return all(
    a >= 0 && b >= 0 ? null : `first two refused: ${a}, ${b}`,
    eq(full, -(10 + 4), 'third request refused as bulkhead-full'),
    eq(heldFull, 2, 'held when full'),
    eq(cancelled, 1, 'cancel found the permit'),
    eq(heldAfterCancel, 1, 'a cancelled request gives its slot back'),
    c >= 0 ? null : `slot not reusable after cancel: ${c}`,
    eq(settledA, verdict('overload'), 'settled 503'),
    eq(settledC, verdict('success'), 'settled 200'),
    eq(x.rx_held(), 0, 'held after settling'),
    eq(x.rx_settle(a, 200, 1070n), 0n, 'a permit settles once'),
  );
});

check('pipeline_requests_feed_only_settled_latency', () => {
  const x = fresh();
  x.rx_seed(7n);
  const a = x.rx_admit(0n), b = x.rx_admit(0n); // another path holds both slots
  const shed = x.rx_request(10n, 200, 5n);
  x.rx_cancel(a); x.rx_cancel(b);
  const results = [];
  for (let i = 1; i <= 100; i++) results.push(x.rx_request(BigInt(100 * i), i % 10 === 0 ? 500 : 200, BigInt(i)));
  return all(
    eq(shed, -14n, 'a request into a full bulkhead is refused'),
    eq(results.filter((r) => r === verdict('uncertain')).length, 10, 'ten 500s'),
    eq(x.rx_latency_count(), 100n, 'only settled requests reach the histogram'),
    // durations 1..100 ms: the median is 50 ms within the histogram's 6.25 %.
    Math.abs(Number(x.rx_latency_quantile_us(0.5)) - 50000) <= 50000 / 16 ? null : `median ${x.rx_latency_quantile_us(0.5)} us`,
    eq(x.rx_latency_quantile_us(1.0), 100000n, 'the maximum is exact'),
  );
});

// ---- 4. every policy through the C ABI, held to the host's vectors ----
const MS = 1_000_000n, S = 1_000_000_000n;
const POLICY = { breaker: 1, throttler: 2, rate: 3, limiter: 4 };
const REFUSED = { circuitOpen: -11, limiterFull: -12, throttled: -13, rateLimited: -15 };
const NONE = 0xffffffffffffffffn;

// The host's vector for the scenario called `name`, read from the module.
function hostVector(x, name) {
  for (let i = 0; i < x.checks_len(); i++) {
    const n = Buffer.from(new Uint8Array(x.memory.buffer, x.check_name_ptr(i), x.check_name_len(i))).toString();
    if (n === name) return Array.from(new BigUint64Array(x.memory.buffer, x.check_expected_ptr(i), x.check_expected_len(i)));
  }
  throw new Error(`no scenario ${name}`);
}
// null when `trace` is exactly the host's vector, else the first difference.
function sameAsHost(x, name, trace) {
  const want = hostVector(x, name);
  for (let i = 0; i < Math.max(trace.length, want.length); i++) {
    if (trace[i] !== want[i]) return `${name} step ${i}: C ABI ${trace[i]}, host ${want[i]}`;
  }
  return null;
}
// Inline assertions of a scenario, as its `ensure`s: the first failure wins.
function scenario(fn) {
  const failures = [];
  const ensure = (ok, what) => { if (!ok) failures.push(what); };
  const result = fn(ensure);
  return failures[0] ?? result;
}

check('abi_breaker_matches_host_breaker_states', () => scenario((ensure) => {
  // checks/src/scenarios/breaker.rs, step for step.
  const x = fresh();
  x.rx_seed(0xB4EACE55n);
  let now = 100n * S;
  const t = [], state = () => BigInt(x.rx_breaker_state());
  const admit = () => x.rx_policy_admit(POLICY.breaker, now);
  const settle = (slot, status) => x.rx_policy_settle(slot, status, now);
  const stale = admit();
  ensure(stale >= 0, 'closed breaker refused');
  for (let i = 0; i < 4; i++) settle(admit(), 500);
  t.push(state());
  ensure(admit() === REFUSED.circuitOpen, 'open breaker admitted a call');
  const firstProbeAt = x.rx_retry_at_ns();
  ensure(firstProbeAt - now <= 5n * S && firstProbeAt - now >= 4n * S, 'jittered wait out of range');
  t.push(firstProbeAt);
  settle(stale, 200); // from an earlier epoch: ignored
  now = firstProbeAt;
  let p1 = admit(), p2 = admit();
  ensure(p1 >= 0 && p2 >= 0 && x.rx_is_probe(p1) === 1 && x.rx_is_probe(p2) === 1, 'half-open permits are not probes');
  t.push(state());
  ensure(admit() < 0, 'a third probe was admitted');
  x.rx_cancel(p2);
  t.push(BigInt(x.rx_breaker_probes()));
  p2 = admit();
  ensure(p2 >= 0, "a dropped probe's slot was not freed");
  settle(p1, 504);
  t.push(state());
  x.rx_cancel(p2);
  ensure(admit() === REFUSED.circuitOpen, 're-opened breaker admitted a call');
  const secondProbeAt = x.rx_retry_at_ns();
  ensure(secondProbeAt - now > 5n * S && secondProbeAt - now <= 10n * S, 'backoff did not grow the wait');
  t.push(secondProbeAt);
  now = secondProbeAt;
  p1 = admit(); p2 = admit();
  now = secondProbeAt + 30n * MS;
  settle(p1, 200);
  t.push(state());
  settle(p2, 404);
  t.push(state());
  x.rx_breaker_operator(0, now); // force open
  t.push(state());
  ensure(admit() < 0, 'forced open admitted a call');
  x.rx_breaker_operator(1, now); // disable
  for (let i = 0; i < 10; i++) settle(admit(), 500);
  t.push(state());
  x.rx_breaker_operator(2, now); // reset
  t.push(state());
  for (now of [0n, (100n + 365n * 24n * 3600n) * S]) {
    const p = admit();
    ensure(p >= 0, 'refused after time went back or a year ahead');
    settle(p, 200);
  }
  t.push(BigInt(x.rx_transitions()), BigInt(x.rx_rejections()));
  return sameAsHost(x, 'breaker_states', t);
}));

check('abi_retry_matches_host_retry_jitter', () => scenario((ensure) => {
  // checks/src/scenarios/retry.rs `jitter`: the core's default retry (full jitter, base
  // 100 ms, cap 20 s), three calls, the last answered 503 with Retry-After: 3.
  const x = fresh();
  x.rx_seed(0x00177E12n);
  let now = 50n * S;
  const t = [];
  const ceiling = (attempt) => { const c = 100n * MS * (1n << BigInt(attempt)); return c < 20n * S ? c : 20n * S; };
  for (let call = 0; call < 3; call++) {
    x.rx_retry_begin(now);
    let attempts = 0;
    for (;;) {
      attempts++;
      now += 7n * MS;
      // 408: a transient failure (safe to repeat for any call), as the host's Verdict::Transient.
      const kind = call === 2 ? x.rx_retry_decide(503, 3000n, 0, now) : x.rx_retry_decide(408, -1n, 0, now);
      const detail = x.rx_retry_detail();
      t.push(BigInt(kind));
      if (kind === 2) {
        t.push(detail);
        const delay = detail - now;
        if (call === 2) ensure(delay >= 3n * S, 'Retry-After not honoured');
        else ensure(delay <= ceiling(attempts), 'jitter above the backoff ceiling');
        now = detail;
      } else {
        if (kind === 3) t.push(detail);
        break;
      }
    }
    t.push(BigInt(attempts));
  }
  return sameAsHost(x, 'retry_jitter', t);
}));

check('abi_throttler_and_rate_limiter_match_host', () => scenario((ensure) => {
  // checks/src/scenarios/retry.rs `throttle_and_rate`.
  const x = fresh();
  x.rx_seed(0x74077100n);
  let now = 1n * S;
  const t = [];
  for (let i = 0; i < 50; i++) {
    const p = x.rx_policy_admit(POLICY.throttler, now);
    ensure(p >= 0, 'healthy upstream throttled');
    x.rx_policy_settle(p, 200, now);
    now += 10n * MS;
  }
  let sent = 0n, shed = 0n;
  for (let i = 0; i < 300; i++) {
    const p = x.rx_policy_admit(POLICY.throttler, now);
    if (p >= 0) { sent++; x.rx_policy_settle(p, 503, now); }
    else { ensure(p === REFUSED.throttled, 'refused for the wrong reason'); shed++; }
    now += 10n * MS;
  }
  ensure(sent > 0n && shed > 0n, 'an overloaded upstream was not throttled');
  t.push(sent, shed);
  let admitted = 0n;
  for (let i = 0; i < 30; i++) {
    const p = x.rx_policy_admit(POLICY.rate, now);
    if (p >= 0) { admitted++; x.rx_policy_settle(p, 200, now); }
  }
  t.push(admitted);
  ensure(x.rx_policy_admit(POLICY.rate, now) === REFUSED.rateLimited, 'rate limiter admitted past its burst');
  const at = x.rx_retry_at_ns();
  ensure(at !== NONE, 'rate-limited without a retry-at');
  t.push(at - now);
  now = at;
  ensure(x.rx_policy_admit(POLICY.rate, now) >= 0, 'not admitted at the instant it gave');
  return sameAsHost(x, 'throttler_and_rate_limiter', t);
}));

check('abi_limiters_match_host_limiter_adapts', () => scenario((ensure) => {
  // checks/src/scenarios/limiter.rs: Gradient2, Vegas, AIMD; latencies from the host's own
  // generator seeded as the scenario's.
  const x = fresh();
  const t = [];
  for (let kind = 0; kind < 3; kind++) {
    x.rx_seed(0x1111n);
    x.rx_draw_seed(0x2222n);
    let now = 1n * S;
    const policy = POLICY.limiter + kind;
    const limit = x.rx_limiter_limit(kind);
    const held = [];
    for (let i = 0; i < 16; i++) {
      const p = x.rx_policy_admit(policy, now);
      if (p >= 0) held.push(p);
      else ensure(p === REFUSED.limiterFull, 'refused for the wrong reason');
    }
    ensure(held.length === limit, 'admitted a different number than the limit');
    held.forEach((p) => x.rx_cancel(p));
    ensure(x.rx_limiter_in_flight(kind) === 0, 'cancelled permits kept their slots');
    for (let round = 0; round < 400; round++) {
      const slow = round >= 200;
      const p = x.rx_policy_admit(policy, now);
      now += (BigInt(slow ? 80 : 10) * 1000n + x.rx_draw_below(2000n)) * 1000n;
      if (p >= 0) x.rx_policy_settle(p, slow && x.rx_draw_chance(1n, 10n) === 1 ? 503 : 200, now);
      if (round % 50 === 49) t.push(BigInt(x.rx_limiter_limit_fixed(kind)));
    }
    ensure(x.rx_limiter_in_flight(kind) === 0, 'in-flight count leaked');
    t.push(BigInt(x.rx_limiter_limit(kind)));
  }
  return sameAsHost(x, 'limiter_adapts', t);
}));

check('abi_policies_need_a_seed', () => {
  const x = fresh();
  return all(
    eq(x.rx_policy_admit(POLICY.breaker, 0n), -1, 'breaker admit before the host seeds'),
    eq(x.rx_retry_decide(500, -1n, 0, 0n), 0, 'retry decision without a call'),
  );
});

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
