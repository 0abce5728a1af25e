// worker.mjs: an example Worker that proxies to a flaky upstream through resilix.
//
//   GET /api/...          proxied to env.UPSTREAM with retries, breaker, budget, rate limit
//   GET /stats            this isolate's policy state, as JSON
//   GET /selftest/frozen  the time rule, checked in this runtime (see frozenSelftest)
//   GET /cancel/hang      a call to an upstream that never answers (the run aborts it)
//
// Bindings (config.capnp): UPSTREAM, the upstream's origin.
import resilixWasm from './resilix.wasm';
import { Resilix, SELFTEST, ADMITTED, BAD_HANDLE, RETRY, DONE } from './resilix.mjs';

// Module scope: the policies live as long as this isolate. Nothing here reads the clock or
// draws a random value.
const resilix = new Resilix(resilixWasm);

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === '/stats') return Response.json(resilix.stats());
    if (url.pathname === '/selftest/frozen') return Response.json(await frozenSelftest());
    if (url.pathname === '/cancel/hang') {
      // A call whose client goes away while its fetch hangs (policy set SELFTEST, 2 s): the
      // runtime may drop the request without running its `finally`; the slot's lease
      // reclaims it then.
      return resilix.fetch(`${env.UPSTREAM}/api/hang`, {}, { set: SELFTEST, timeoutMs: 2_000 }).catch(unreachable);
    }
    if (!url.pathname.startsWith('/api/')) return new Response('not found\n', { status: 404 });
    const id = request.headers.get('x-request-id') ?? '';
    return resilix.fetch(`${env.UPSTREAM}${url.pathname}`, {}, {
      timeoutMs: 5_000,
      // Tell the upstream which attempt this is and whether it is a half-open probe, so its
      // counts can be checked against the policies.
      annotate(headers, { attempt, probe }) {
        headers.set('x-request-id', id);
        headers.set('x-resilix-attempt', String(attempt));
        if (probe) headers.set('x-resilix-probe', '1');
      },
    }).catch(unreachable);
  },
};

/** The last attempt failed without a response (a network error, or its timeout). */
function unreachable(error) {
  return new Response(`upstream unreachable: ${error?.name ?? error}\n`, {
    status: 502,
    headers: { 'x-resilix-outcome': `failed:${error?.name ?? 'error'}` },
  });
}

/**
 * The time rule: in production Date.now() does not advance while code runs, only across I/O.
 * Every step below makes several decisions at one instant read once (as the production
 * runtime would return it), and the only way time moves is an awaited wait. Policy set
 * SELFTEST: breaker opens after 3 failures in a row and stays open 300 ms; rate 10/s, burst 5.
 */
async function frozenSelftest() {
  const x = resilix.abi;
  const checks = [];
  const check = (name, ok, detail) => checks.push({ name, ok: Boolean(ok), detail });
  const begin = (now) => x.rx_begin(SELFTEST, now, 5_000, 0);

  // Does this runtime freeze Date.now() while code runs? (Production does; local workerd
  // need not. The steps below do not depend on it: they read the clock once per instant.)
  const before = Date.now();
  for (let spin = 0; Date.now() - before < 20 && spin < 5e7; spin++);
  const spinAdvancedMs = Date.now() - before;
  const runtimeFrozen = spinAdvancedMs === 0;

  const t = before; // the frozen instant
  // 1. An attempt admitted and settled at the same instant: zero elapsed time is a duration.
  {
    const h = begin(t);
    const admitted = x.rx_admit(h, t);
    const next = x.rx_settle_http(h, t, 200, 0);
    x.rx_end(h);
    check('zero_elapsed_attempt', admitted === ADMITTED && next === DONE, { admitted, next });
  }
  // 2. A 503 with Retry-After at a frozen instant: the retry is due a second later, never
  //    "now", however long the clock stays frozen.
  let retryAt;
  {
    const h = begin(t);
    x.rx_admit(h, t);
    const next = x.rx_settle_http(h, t, 503, resilix.writeHeader('1'));
    retryAt = x.rx_next_at_ms(h);
    x.rx_end(h);
    check('retry_after_from_frozen_instant', next === RETRY && retryAt - t >= 1000, { next, delayMs: retryAt - t });
  }
  // 3. Two more failures at the same instant open the breaker (3 in a row).
  for (let i = 0; i < 2; i++) {
    const h = begin(t);
    x.rx_admit(h, t);
    x.rx_settle_http(h, t, 503, 0);
    x.rx_end(h);
  }
  check('breaker_opens_at_one_instant', x.rx_breaker_state(SELFTEST) === 1, { state: x.rx_breaker_state(SELFTEST) });
  // 4. Open at the frozen instant: refused, with a retry-at within the open wait (300 ms less
  //    up to 10 % jitter); asked again at the same instant, still refused (no time served).
  let openUntil;
  {
    const h = begin(t);
    x.rx_admit(h, t);
    openUntil = x.rx_next_at_ms(h);
    const first = resilix.reason(h);
    x.rx_end(h);
    const h2 = begin(t);
    x.rx_admit(h2, t);
    const again = resilix.reason(h2);
    x.rx_end(h2);
    const wait = openUntil - t;
    check('open_circuit_refuses_while_frozen',
      first === 'circuit-open' && again === 'circuit-open' && wait >= 270 && wait <= 300,
      { first, again, waitMs: wait });
  }
  // 5. The wait is I/O: after it, the clock shows at least the time waited.
  await scheduler.wait(Math.ceil(openUntil - t));
  const t1 = Date.now();
  check('wait_advances_the_clock', t1 >= openUntil, { waitedMs: t1 - t, askedMs: openUntil - t });
  // 6. At the new instant: one probe, and only one, however many calls arrive at once; its
  //    success (zero elapsed time since its admission) closes the circuit.
  {
    const probe = begin(t1);
    const admitted = x.rx_admit(probe, t1);
    const isProbe = x.rx_is_probe(probe);
    const other = begin(t1);
    const second = x.rx_admit(other, t1) === ADMITTED ? 'admitted' : resilix.reason(other);
    x.rx_end(other);
    const next = x.rx_settle_http(probe, t1, 200, 0);
    x.rx_end(probe);
    check('one_probe_then_closed',
      admitted === ADMITTED && isProbe === 1 && second === 'circuit-open' && next === DONE && x.rx_breaker_state(SELFTEST) === 0,
      { admitted, isProbe, second, next, state: x.rx_breaker_state(SELFTEST) });
  }
  // 8a. A call the runtime will drop mid-flight (see 8b), admitted now: it holds a permit.
  const lost = x.rx_begin(SELFTEST, t1, 50, 0);
  const lostAdmitted = x.rx_admit(lost, t1);
  // 7. The rate limit at one instant: a burst's worth at most, then refusals with a retry-at
  //    in the future; asking again at the same instant refills nothing.
  {
    const held = [];
    let admitted = 0, refusal = '', refusedAt = -1;
    for (let i = 0; i < 8; i++) {
      const h = begin(t1);
      const code = x.rx_admit(h, t1);
      if (code === ADMITTED) { admitted++; held.push(h); continue; }
      refusal = resilix.reason(h);
      refusedAt = x.rx_next_at_ms(h);
      held.push(h);
      break;
    }
    const h = begin(t1);
    const again = x.rx_admit(h, t1) === ADMITTED ? 'admitted' : resilix.reason(h);
    held.push(h);
    held.forEach((handle) => x.rx_end(handle));
    check('rate_limit_at_one_instant',
      admitted <= 5 && refusal === 'rate-limited' && refusedAt > t1 && again === 'rate-limited',
      { admitted, refusal, refusedInMs: refusedAt - t1, again });
  }
  // 8b. A call the runtime drops mid-flight (its `finally` never runs) holds its slot and its
  //    permits until its lease ends (deadline + 1 s); the first call to begin after that
  //    reclaims it, which cancels the permits.
  {
    const admitted = lostAdmitted;
    const liveBefore = x.rx_live(), reclaimedBefore = x.rx_reclaimed();
    await scheduler.wait(1_100);
    const t2 = Date.now();
    const h = begin(t2);
    const reclaimed = x.rx_reclaimed() - reclaimedBefore;
    const stale = x.rx_admit(lost, t2);
    x.rx_end(h);
    check('lease_reclaims_a_dropped_call',
      admitted === ADMITTED && liveBefore === 1 && reclaimed === 1 && stale === BAD_HANDLE && x.rx_live() === 0,
      { admitted, liveBefore, reclaimed, staleHandle: stale });
  }
  check('no_slot_left_behind', x.rx_live() === 0, { live: x.rx_live() });
  return { runtimeFrozen, spinAdvancedMs, checks };
}
