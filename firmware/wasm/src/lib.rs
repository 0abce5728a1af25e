//! The resilix core behind a C ABI for a Workers-style wasm host.
//!
//! The host supplies everything a policy needs from outside, as arguments: the time
//! (`now_ms`, from the host's clock) and the seed of the module's generator (from the host's
//! entropy). The module imports nothing, so it cannot reach for global randomness, and it has
//! no start function: policies are `const`-initialised statics, live from the first call.
//!
//! Exports:
//! * `checks_len`, `check_run(i)`, `check_name_ptr(i)`, `check_name_len(i)`: the on-device
//!   scenarios of `resilix-firmware-checks`, compared with the host's vectors (0 = passed,
//!   otherwise `Failure::code`).
//! * `rx_random(seed, index)`: the `index`-th `u32` of `SeededRandom::new(seed)`.
//! * `rx_buffer`, `rx_classify(status, len, now_unix_secs)`: a response through the HTTP
//!   classifier, its `Retry-After` (if `len > 0`) written by the host into the buffer first.
//! * `rx_seed(seed)`, `rx_admit(now_ms)`, `rx_settle(slot, status, now_ms)`,
//!   `rx_cancel(slot)`, `rx_held()`: one module-wide bulkhead (2 slots) and a request's permit
//!   held across host calls, as a Worker holds it across a `fetch`.
//! * `rx_request(now_ms, status, took_ms)`, `rx_latency_count()`, `rx_latency_quantile_us(q)`:
//!   a whole request through a pipeline around that bulkhead, observed by a duration histogram.
//! * Every policy through one permit table, time in nanoseconds (the host's clock × 10⁶, so
//!   instants the policies hand back can be passed in again exactly):
//!   `rx_policy_admit(policy, now_ns)` (policy: 0 bulkhead, 1 breaker, 2 throttler, 3 rate
//!   limiter, 4..6 limiter Gradient2/Vegas/AIMD), `rx_policy_settle(slot, status, now_ns)`,
//!   `rx_cancel(slot)`, `rx_is_probe(slot)`, `rx_retry_at_ns()` (of the last refusal);
//!   `rx_breaker_state()`, `rx_breaker_probes()`, `rx_breaker_operator(op, now_ns)`,
//!   `rx_limiter_limit(i)`, `rx_limiter_limit_fixed(i)`, `rx_limiter_in_flight(i)`,
//!   `rx_transitions()`, `rx_rejections()` (events heard).
//! * `rx_retry_begin(now_ns)`, `rx_retry_decide(status, retry_after_ms, idempotent, now_ns)`,
//!   `rx_retry_detail()`: the core's `Retry` (defaults: full jitter) deciding after each
//!   attempt of a call, jitter drawn from the seeded generator.
//! * `rx_draw_seed(seed)`, `rx_draw_below(n)`, `rx_draw_chance(num, den)`: a second seeded
//!   generator for the host's own draws (check.mjs replays the scenarios' latency streams).
//! * `check_expected_ptr(i)`, `check_expected_len(i)`: the host's vector of scenario `i`, which
//!   check.mjs holds the C ABI's decisions to.
#![no_std]

#[cfg(target_feature = "atomics")]
compile_error!("HostCell below relies on a single-threaded module (no wasm threads)");

use core::cell::RefCell;
use core::time::Duration;

use core::sync::atomic::{AtomicU32, Ordering};

use resilix::Verdict;
use resilix::breaker::Breaker;
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::classify::http::classify_status;
use resilix::classify::retry_after::parse_delay;
use resilix::limiter::Limiter;
use resilix::observe::DurationHistogram;
use resilix::observe::{Event, Observer};
use resilix::permit::{Env, Permit, Policy};
use resilix::pipeline::Pipeline;
use resilix::random::{Random, SeededRandom};
use resilix::rate_limit::RateLimiter;
use resilix::retry::{AttemptOutcome, Retry, RetryConfig, RetryDecision, RetryPolicy, RetryState};
use resilix::throttler::{Throttler, ThrottlerConfig};
use resilix::time::Instant;
use resilix_firmware_checks::codes::{give_up_code, reason_code, state_code, verdict_code};
use resilix_firmware_checks::{ALL, config};

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::arch::wasm32::unreachable()
}

/// Module state for a single-threaded isolate.
struct HostCell<T>(RefCell<T>);
// SAFETY: wasm32-unknown-unknown without the `atomics` feature (checked above) has one thread;
// the host calls exports one at a time, so no two borrows can race.
unsafe impl<T> Sync for HostCell<T> {}

const SLOTS: usize = 16;
static BULKHEAD: Bulkhead = Bulkhead::new(match BulkheadConfig::new(2) {
    Ok(c) => c,
    Err(_) => panic!("a bulkhead of two is valid"),
});
/// The policies behind `rx_policy_*`, configured as the scenarios configure them
/// (`resilix_firmware_checks::config`), so the host's vectors hold for them too.
static BREAKER: Breaker = match Breaker::new(config::BREAKER) {
    Ok(b) => b,
    Err(_) => panic!("the scenario's breaker is valid"),
};
static THROTTLER: Throttler = match Throttler::new(ThrottlerConfig::DEFAULT) {
    Ok(t) => t,
    Err(_) => panic!("the default throttler is valid"),
};
static RATE: RateLimiter = match RateLimiter::new(config::RATE) {
    Ok(r) => r,
    Err(_) => panic!("the scenario's rate is valid"),
};
static LIMITERS: [Limiter; 3] = {
    const fn new(c: resilix::limiter::LimiterConfig) -> Limiter {
        match Limiter::new(c) {
            Ok(l) => l,
            Err(_) => panic!("the scenario's limiters are valid"),
        }
    }
    [
        new(config::LIMITERS[0]),
        new(config::LIMITERS[1]),
        new(config::LIMITERS[2]),
    ]
};
/// The core's retry with its defaults (3 attempts, full jitter from 100 ms, cap 20 s).
const RETRY: Retry = Retry::unbudgeted(RetryConfig::DEFAULT);

/// A permit of any of the module's policies, held across host calls.
enum Held {
    Bulkhead(<Bulkhead as Policy>::Permit<'static>),
    Breaker(<Breaker as Policy>::Permit<'static>),
    Throttler(<Throttler as Policy>::Permit<'static>),
    Rate(<RateLimiter as Policy>::Permit<'static>),
    Limiter(<Limiter as Policy>::Permit<'static>),
}

impl Held {
    fn settle(self, verdict: &Verdict, env: &mut Env<'_, SeededRandom, Heard>) {
        match self {
            Held::Bulkhead(p) => p.settle(verdict, env),
            Held::Breaker(p) => p.settle(verdict, env),
            Held::Throttler(p) => p.settle(verdict, env),
            Held::Rate(p) => p.settle(verdict, env),
            Held::Limiter(p) => p.settle(verdict, env),
        }
    }
}

static PERMITS: HostCell<[Option<Held>; SLOTS]> = HostCell(RefCell::new([const { None }; SLOTS]));
/// The instant the last refusal said to come back at, in nanoseconds (`u64::MAX`: none).
static RETRY_AT: HostCell<u64> = HostCell(RefCell::new(u64::MAX));
/// One call's retry memory and the detail of its last decision.
static RETRY_CALL: HostCell<(Option<RetryState>, u32, u64)> = HostCell(RefCell::new((None, 0, 0)));
/// The host's own generator (see `rx_draw_*`); never used by a policy.
static DRAW: HostCell<SeededRandom> = HostCell(RefCell::new(SeededRandom::new(0)));

/// Counts the events the policies report.
struct Heard {
    transitions: AtomicU32,
    rejections: AtomicU32,
}

impl Observer for Heard {
    fn on_event(&self, event: &Event) {
        match event {
            Event::CircuitTransition { .. } => self.transitions.fetch_add(1, Ordering::Relaxed),
            Event::Rejected { .. } => self.rejections.fetch_add(1, Ordering::Relaxed),
            _ => 0,
        };
    }
}

static HEARD: Heard = Heard {
    transitions: AtomicU32::new(0),
    rejections: AtomicU32::new(0),
};

/// Runs `f` with the module's generator at `now_ns`, or returns `unseeded` if the host has
/// not seeded it.
fn with_env<T>(
    now_ns: u64,
    unseeded: T,
    f: impl FnOnce(&mut Env<'_, SeededRandom, Heard>) -> T,
) -> T {
    let mut rng = RNG.0.borrow_mut();
    let Some(rng) = rng.as_mut() else {
        return unseeded;
    };
    f(&mut Env::new(Instant::from_nanos(now_ns), rng).with_observer(&HEARD))
}

/// No default seed: a request before `rx_seed` is refused (every isolate would jitter alike).
static RNG: HostCell<Option<SeededRandom>> = HostCell(RefCell::new(None));
static BUFFER: HostCell<[u8; 64]> = HostCell(RefCell::new([0; 64]));
/// Durations of settled requests only: the pipeline never reports a shed one.
static LATENCY: DurationHistogram = DurationHistogram::new();

#[unsafe(no_mangle)]
pub extern "C" fn checks_len() -> u32 {
    ALL.len() as u32
}

#[unsafe(no_mangle)]
pub extern "C" fn check_run(i: u32) -> u32 {
    match ALL.get(i as usize) {
        Some(check) => check.verify().map_or_else(|f| f.code(), |()| 0),
        None => u32::MAX,
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn check_name_ptr(i: u32) -> *const u8 {
    ALL.get(i as usize)
        .map_or(core::ptr::null(), |c| c.name.as_ptr())
}

#[unsafe(no_mangle)]
pub extern "C" fn check_name_len(i: u32) -> u32 {
    ALL.get(i as usize).map_or(0, |c| c.name.len() as u32)
}

#[unsafe(no_mangle)]
pub extern "C" fn rx_random(seed: u64, index: u32) -> u32 {
    let mut rng = SeededRandom::new(seed);
    for _ in 0..index {
        rng.next_u32();
    }
    rng.next_u32()
}

#[unsafe(no_mangle)]
pub extern "C" fn rx_buffer() -> *mut u8 {
    BUFFER.0.as_ptr().cast()
}

fn verdict_of(status: u32, retry_after: Option<Duration>) -> Verdict {
    classify_status(u16::try_from(status).unwrap_or(0), retry_after)
}

#[unsafe(no_mangle)]
pub extern "C" fn rx_classify(status: u32, len: u32, now_unix_secs: u64) -> u64 {
    let buffer = BUFFER.0.borrow();
    let header = buffer.get(..len as usize).unwrap_or(&[]);
    let retry_after = if header.is_empty() {
        None
    } else {
        parse_delay(header, now_unix_secs)
    };
    verdict_code(&verdict_of(status, retry_after))
}

#[unsafe(no_mangle)]
pub extern "C" fn rx_seed(seed: u64) {
    *RNG.0.borrow_mut() = Some(SeededRandom::new(seed));
}

/// Admits a request into the bulkhead at the host's `now_ms`: as [`rx_policy_admit`] with
/// policy 0.
#[unsafe(no_mangle)]
pub extern "C" fn rx_admit(now_ms: u64) -> i32 {
    rx_policy_admit(0, now_ms.saturating_mul(1_000_000))
}

/// Admits a request into `policy` (0 bulkhead, 1 breaker, 2 throttler, 3 rate limiter, 4..6
/// limiter Gradient2/Vegas/AIMD) at `now_ns`: the slot holding its permit (0..), or a
/// negative code: -1 not seeded, -2 no free slot in this table, -3 no such policy,
/// -(10 + reason) refused (its retry-at then in [`rx_retry_at_ns`]).
#[unsafe(no_mangle)]
pub extern "C" fn rx_policy_admit(policy: u32, now_ns: u64) -> i32 {
    with_env(now_ns, -1, |env| {
        let mut permits = PERMITS.0.borrow_mut();
        let Some(slot) = permits.iter().position(Option::is_none) else {
            return -2;
        };
        let admitted = match policy {
            0 => BULKHEAD.admit(env).map(Held::Bulkhead),
            1 => BREAKER.admit(env).map(Held::Breaker),
            2 => THROTTLER.admit(env).map(Held::Throttler),
            3 => RATE.admit(env).map(Held::Rate),
            4..=6 => LIMITERS[policy as usize - 4].admit(env).map(Held::Limiter),
            _ => return -3,
        };
        match admitted {
            Ok(permit) => {
                permits[slot] = Some(permit);
                slot as i32
            }
            Err(r) => {
                *RETRY_AT.0.borrow_mut() = r.retry_at().map_or(u64::MAX, |at| at.as_nanos());
                -(10 + reason_code(r.reason()) as i32)
            }
        }
    })
}

/// Where the last refusal said to come back, in nanoseconds; `u64::MAX` when it gave none.
#[unsafe(no_mangle)]
pub extern "C" fn rx_retry_at_ns() -> u64 {
    *RETRY_AT.0.borrow()
}

/// Settles the request in `slot` with the response `status` at `now_ms`: as
/// [`rx_policy_settle`].
#[unsafe(no_mangle)]
pub extern "C" fn rx_settle(slot: u32, status: u32, now_ms: u64) -> u64 {
    rx_policy_settle(slot, status, now_ms.saturating_mul(1_000_000))
}

/// Settles the permit in `slot` with the response `status` at `now_ns`: its verdict code, or
/// 0 if the slot holds none (a permit settles once) or the module is not seeded.
#[unsafe(no_mangle)]
pub extern "C" fn rx_policy_settle(slot: u32, status: u32, now_ns: u64) -> u64 {
    let taken = PERMITS
        .0
        .borrow_mut()
        .get_mut(slot as usize)
        .and_then(Option::take);
    let Some(permit) = taken else { return 0 };
    with_env(now_ns, 0, |env| {
        let verdict = verdict_of(status, None);
        permit.settle(&verdict, env);
        verdict_code(&verdict)
    })
}

/// 1 if the permit in `slot` is a half-open breaker's probe.
#[unsafe(no_mangle)]
pub extern "C" fn rx_is_probe(slot: u32) -> u32 {
    let permits = PERMITS.0.borrow();
    u32::from(matches!(permits.get(slot as usize), Some(Some(Held::Breaker(p))) if p.is_probe()))
}

/// The breaker's state: 1 closed, 2 open, 3 half-open, 4 forced open, 5 disabled.
#[unsafe(no_mangle)]
pub extern "C" fn rx_breaker_state() -> u32 {
    state_code(BREAKER.state()) as u32
}

#[unsafe(no_mangle)]
pub extern "C" fn rx_breaker_probes() -> u32 {
    BREAKER.probes_in_flight()
}

/// The operator's switches at `now_ns`: 0 force open, 1 disable, 2 reset. 1 if done.
#[unsafe(no_mangle)]
pub extern "C" fn rx_breaker_operator(op: u32, now_ns: u64) -> u32 {
    with_env(now_ns, 0, |env| {
        match op {
            0 => BREAKER.force_open(env),
            1 => BREAKER.disable(env),
            2 => BREAKER.reset(env),
            _ => return 0,
        }
        1
    })
}

/// Circuit transitions the observer heard.
#[unsafe(no_mangle)]
pub extern "C" fn rx_transitions() -> u32 {
    HEARD.transitions.load(Ordering::Relaxed)
}

/// Rejection events the observer heard.
#[unsafe(no_mangle)]
pub extern "C" fn rx_rejections() -> u32 {
    HEARD.rejections.load(Ordering::Relaxed)
}

fn limiter(i: u32) -> Option<&'static Limiter> {
    LIMITERS.get(i as usize)
}

/// Limiter `i`'s limit (0 Gradient2, 1 Vegas, 2 AIMD); 0 for no such limiter.
#[unsafe(no_mangle)]
pub extern "C" fn rx_limiter_limit(i: u32) -> u32 {
    limiter(i).map_or(0, Limiter::limit)
}

/// Limiter `i`'s limit in its fixed-point form.
#[unsafe(no_mangle)]
pub extern "C" fn rx_limiter_limit_fixed(i: u32) -> u32 {
    limiter(i).map_or(0, Limiter::limit_fixed)
}

#[unsafe(no_mangle)]
pub extern "C" fn rx_limiter_in_flight(i: u32) -> u32 {
    limiter(i).map_or(0, Limiter::in_flight)
}

/// Starts a call for the retry policy at `now_ns`.
#[unsafe(no_mangle)]
pub extern "C" fn rx_retry_begin(now_ns: u64) {
    *RETRY_CALL.0.borrow_mut() = (Some(RETRY.begin(Instant::from_nanos(now_ns))), 0, 0);
}

/// The call's next attempt settled at `now_ns` with `status` (and the upstream's Retry-After
/// in milliseconds, negative for none; `idempotent` 1 if a timeout may be repeated): 1 done, 2 retry (at [`rx_retry_detail`] ns), 3 give
/// up (the reason's code in [`rx_retry_detail`]); 0 when no call was begun or not seeded.
#[unsafe(no_mangle)]
pub extern "C" fn rx_retry_decide(
    status: u32,
    retry_after_ms: i64,
    idempotent: u32,
    now_ns: u64,
) -> u32 {
    let mut call = RETRY_CALL.0.borrow_mut();
    let (Some(state), attempts, detail) = &mut *call else {
        return 0;
    };
    let retry_after = u64::try_from(retry_after_ms)
        .ok()
        .map(Duration::from_millis);
    with_env(now_ns, 0, |env| {
        *attempts += 1;
        let outcome = AttemptOutcome {
            verdict: verdict_of(status, retry_after),
            attempt: *attempts,
            idempotent: idempotent != 0,
            deadline: None,
        };
        let (kind, value) = match RETRY.decide(state, &outcome, env) {
            RetryDecision::Done => (1, 0),
            RetryDecision::RetryAt(at) => (2, at.as_nanos()),
            RetryDecision::GiveUp(reason) => (3, give_up_code(&reason)),
        };
        *detail = value;
        kind
    })
}

/// The retry-at instant (ns) or give-up code of the last decision.
#[unsafe(no_mangle)]
pub extern "C" fn rx_retry_detail() -> u64 {
    RETRY_CALL.0.borrow().2
}

/// Seeds the host's own generator (never used by a policy).
#[unsafe(no_mangle)]
pub extern "C" fn rx_draw_seed(seed: u64) {
    *DRAW.0.borrow_mut() = SeededRandom::new(seed);
}

/// A uniform draw below `n` from the host's generator (`Random::below`).
#[unsafe(no_mangle)]
pub extern "C" fn rx_draw_below(n: u64) -> u64 {
    DRAW.0.borrow_mut().below(n)
}

/// 1 with probability `num / den` from the host's generator (`Random::chance`).
#[unsafe(no_mangle)]
pub extern "C" fn rx_draw_chance(num: u64, den: u64) -> u32 {
    u32::from(DRAW.0.borrow_mut().chance(num, den))
}

#[unsafe(no_mangle)]
pub extern "C" fn check_expected_ptr(i: u32) -> *const u64 {
    ALL.get(i as usize)
        .map_or(core::ptr::null(), |c| c.expected.as_ptr())
}

#[unsafe(no_mangle)]
pub extern "C" fn check_expected_len(i: u32) -> u32 {
    ALL.get(i as usize).map_or(0, |c| c.expected.len() as u32)
}

/// Cancels the request in `slot` (the host's `fetch` was aborted): the permit is dropped,
/// gives its slot back and records nothing. 1 if there was one.
#[unsafe(no_mangle)]
pub extern "C" fn rx_cancel(slot: u32) -> u32 {
    let taken = PERMITS
        .0
        .borrow_mut()
        .get_mut(slot as usize)
        .and_then(Option::take);
    u32::from(taken.is_some())
}

#[unsafe(no_mangle)]
pub extern "C" fn rx_held() -> u32 {
    BULKHEAD.held()
}

/// One whole request through the module's pipeline (the shared bulkhead, a 1 s attempt
/// timeout), admitted at `now_ms` and answered `took_ms` later with `status`: the verdict
/// code, or a negative code as for `rx_admit` when it was refused.
#[unsafe(no_mangle)]
pub extern "C" fn rx_request(now_ms: u64, status: u32, took_ms: u64) -> i64 {
    let mut rng = RNG.0.borrow_mut();
    let Some(rng) = rng.as_mut() else { return -1 };
    let pipeline = Pipeline::new()
        .bulkhead(&BULKHEAD)
        .attempt_timeout(Duration::from_secs(1));
    let mut env = Env::new(Instant::from_millis(now_ms), rng).with_observer(&LATENCY);
    match pipeline.admit(&mut env, None) {
        Ok(attempt) => {
            env.now = Instant::from_millis(now_ms.saturating_add(took_ms));
            let verdict = verdict_of(status, None);
            attempt.settle(&verdict, &mut env);
            verdict_code(&verdict) as i64
        }
        Err(r) => -(10 + reason_code(r.reason()) as i64),
    }
}

/// How many requests the latency histogram holds.
#[unsafe(no_mangle)]
pub extern "C" fn rx_latency_count() -> u64 {
    LATENCY.count()
}

/// The `q`-quantile of settled requests' durations, in microseconds; `u64::MAX` when empty.
#[unsafe(no_mangle)]
pub extern "C" fn rx_latency_quantile_us(q: f64) -> u64 {
    LATENCY
        .quantile(q)
        .map_or(u64::MAX, |d| d.as_micros() as u64)
}
