// resilix.mjs: a resilient fetch for Cloudflare Workers, over the resilix wasm module.
//
//   import resilixWasm from './resilix.wasm';          // a WebAssembly.Module in Workers
//   import { Resilix } from './resilix.mjs';
//   const resilix = new Resilix(resilixWasm);           // module scope: lives for the isolate
//   export default {
//     fetch: (request, env) => resilix.fetch(`${env.UPSTREAM}/api`, {}, { timeoutMs: 5000 }),
//   };
//
// The rules of an isolate, and how this file keeps them:
// * Module scope instantiates the module and nothing else: no clock is read and no random
//   value drawn there (workerd refuses random values at module scope).
// * The clock is read at I/O boundaries only: when a call starts, after each fetch settles,
//   after each wait. Those are the instants at which a production Worker's Date.now()
//   advances (it is frozen while code runs), so every decision is made on the time the
//   runtime would show, on any host: several decisions between two I/O boundaries share one
//   instant, and the policies treat zero elapsed time as zero (no refill, no open wait
//   served, no retry due).
// * Waits are I/O: `scheduler.wait` (setTimeout where there is no scheduler). Never wait by
//   polling Date.now(): in production it would not advance, and the loop would spin until
//   the runtime kills the request.
// * Randomness is drawn lazily: the module asks for a random word only while a policy draws
//   (backoff jitter, the breaker's open-wait jitter), inside the request that needs it, and
//   each word comes from crypto.getRandomValues.
// * Each isolate holds its own policies: limits and budgets here are per isolate.

/** Codes of the module's ABI (wasm/src/lib.rs). */
const ADMITTED = 0, DEADLINE_PASSED = 7, BAD_HANDLE = 8;
const DONE = 0, RETRY = 1, GIVE_UP = 2;
const ERR_FULL = -1;
const BUFFER_LEN = 256;

/** The policy sets compiled into the module (wasm/src/policies.rs). */
export const UPSTREAM = 0, SELFTEST = 1;

const wait = globalThis.scheduler?.wait
  ? (ms) => globalThis.scheduler.wait(ms)
  : (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const encoder = new TextEncoder();
const decoder = new TextDecoder();

const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE']);

export class Resilix {
  #x;
  #draws = 0;
  #word = new Uint32Array(1);

  /** @param {WebAssembly.Module} module the compiled resilix module (the `.wasm` import). */
  constructor(module) {
    const instance = new WebAssembly.Instance(module, {
      resilix_host: { random_u32: () => this.#random() },
    });
    this.#x = instance.exports;
  }

  #random() {
    this.#draws++;
    crypto.getRandomValues(this.#word);
    return this.#word[0];
  }

  /** The module's ABI, for callers that drive the policies themselves. */
  get abi() {
    return this.#x;
  }

  /** The buffer shared with the module, as bytes. */
  #buffer() {
    return new Uint8Array(this.#x.memory.buffer, this.#x.rx_buffer(), BUFFER_LEN);
  }

  /** Writes a header value for the module to parse; 0 when absent or too long to be valid. */
  writeHeader(value) {
    if (value === null || value === undefined) return 0;
    const { read, written } = encoder.encodeInto(value, this.#buffer());
    return read === value.length ? written : 0;
  }

  /** The text of handle `h`'s last refusal or give-up. */
  reason(h) {
    const n = this.#x.rx_reason(h);
    return decoder.decode(this.#buffer().slice(0, n));
  }

  /**
   * `fetch` through the policies of set `options.set` (default UPSTREAM): retry with backoff
   * and the upstream's Retry-After, a circuit breaker, a shared retry budget and a rate limit.
   *
   * Resolves to the upstream's response (the last one, if retries ran out) or, when a policy
   * refused the call, to a 503 of our own with a Retry-After. Every response carries
   * `x-resilix-outcome` (`ok`, `gave-up:<reason>`, `refused:<reason>`) and
   * `x-resilix-attempts`. Rejects only when the last attempt failed without a response.
   *
   * options: `timeoutMs` (the whole call, retries and waits included; default 10 s),
   * `idempotent` (default: by method, RFC 9110 §9.2.2), `set`, and `annotate(headers,
   * {attempt, probe})` to add headers to each attempt's request.
   */
  async fetch(input, init = {}, options = {}) {
    const x = this.#x;
    const set = options.set ?? UPSTREAM;
    const method = (init.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    const idempotent = options.idempotent ?? IDEMPOTENT_METHODS.has(method);
    let now = Date.now();
    const h = x.rx_begin(set, now, options.timeoutMs ?? 10_000, idempotent ? 1 : 0);
    if (h < 0) {
      return refusal(h === ERR_FULL ? 'slots-full' : 'bad-set', -1, now, 0);
    }
    try {
      for (let attempt = 1; ; attempt++) {
        const admitted = x.rx_admit(h, now);
        if (admitted !== ADMITTED) {
          const reason = admitted === BAD_HANDLE ? 'bad-handle' : this.reason(h);
          return refusal(reason, x.rx_next_at_ms(h), now, attempt - 1);
        }
        const probe = x.rx_is_probe(h) === 1;
        const deadline = x.rx_attempt_deadline_ms(h);
        const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
        options.annotate?.(headers, { attempt, probe });
        const signal = deadline >= 0 ? AbortSignal.timeout(Math.max(1, Math.ceil(deadline - now))) : undefined;
        let response = null, error = null, next;
        try {
          response = await fetch(input, { ...init, headers, signal });
          now = Date.now();
          const len = this.writeHeader(response.headers.get('retry-after'));
          next = x.rx_settle_http(h, now, response.status, len);
        } catch (e) {
          now = Date.now();
          error = e;
          const timedOut = e?.name === 'TimeoutError' || e?.name === 'AbortError';
          next = x.rx_settle_failure(h, now, timedOut ? 1 : 0);
        }
        if (next === DONE || next === GIVE_UP) {
          if (response === null) throw error;
          const outcome = next === DONE ? 'ok' : `gave-up:${this.reason(h)}`;
          return annotated(response, outcome, attempt);
        }
        if (next !== RETRY) throw new Error(`resilix: settle answered ${next}`);
        // The connection goes back to the pool before the wait, not after it.
        await response?.body?.cancel();
        const at = x.rx_next_at_ms(h);
        await wait(Math.max(0, Math.ceil(at - now)));
        now = Date.now();
      }
    } finally {
      x.rx_end(h);
    }
  }

  /** The isolate's policy state, for a stats endpoint or a log line. */
  stats(set = UPSTREAM) {
    const x = this.#x;
    const states = ['closed', 'open', 'half-open', 'forced-open', 'disabled'];
    return {
      breaker: states[x.rx_breaker_state(set)] ?? 'unknown',
      transitions: x.rx_transitions(set),
      budgetTokens: x.rx_budget_milli(set) / 1000,
      liveCalls: x.rx_live(),
      reclaimedSlots: x.rx_reclaimed(),
      randomDraws: this.#draws,
      moduleDraws: x.rx_draws(),
    };
  }
}

/** Our own answer when a policy refused: 503, with when to come back if the policy knows. */
function refusal(reason, nextAtMs, now, attempts) {
  const headers = new Headers({
    'content-type': 'text/plain',
    'x-resilix-outcome': `refused:${reason}`,
    'x-resilix-attempts': String(attempts),
  });
  if (nextAtMs >= 0) headers.set('retry-after', String(Math.max(1, Math.ceil((nextAtMs - now) / 1000))));
  return new Response(`refused by resilix: ${reason}\n`, { status: 503, headers });
}

function annotated(response, outcome, attempts) {
  const copy = new Response(response.body, response);
  copy.headers.set('x-resilix-outcome', outcome);
  copy.headers.set('x-resilix-attempts', String(attempts));
  return copy;
}

export { ADMITTED, DEADLINE_PASSED, BAD_HANDLE, DONE, RETRY, GIVE_UP };
