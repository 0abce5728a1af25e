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
#![no_std]

#[cfg(target_feature = "atomics")]
compile_error!("HostCell below relies on a single-threaded module (no wasm threads)");

use core::cell::RefCell;
use core::time::Duration;

use resilix::bulkhead::{Bulkhead, BulkheadConfig, BulkheadPermit};
use resilix::classify::http::classify_status;
use resilix::classify::retry_after::parse_delay;
use resilix::observe::DurationHistogram;
use resilix::permit::{Env, Permit, Policy};
use resilix::pipeline::Pipeline;
use resilix::random::{Random, SeededRandom};
use resilix::time::Instant;
use resilix::{RejectReason, Verdict, VerdictKind};
use resilix_firmware_checks::ALL;

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::arch::wasm32::unreachable()
}

/// Module state for a single-threaded isolate.
struct HostCell<T>(RefCell<T>);
// SAFETY: wasm32-unknown-unknown without the `atomics` feature (checked above) has one thread;
// the host calls exports one at a time, so no two borrows can race.
unsafe impl<T> Sync for HostCell<T> {}

const SLOTS: usize = 4;
static BULKHEAD: Bulkhead = Bulkhead::new(match BulkheadConfig::new(2) {
    Ok(c) => c,
    Err(_) => panic!("a bulkhead of two is valid"),
});
static PERMITS: HostCell<[Option<BulkheadPermit<'static>>; SLOTS]> =
    HostCell(RefCell::new([const { None }; SLOTS]));
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

/// A verdict as one number: kind (1 success .. 6 rejected) in the low byte, the Retry-After
/// in milliseconds plus one above it (0: none).
fn verdict_code(v: &Verdict) -> u64 {
    let kind = match v.kind() {
        VerdictKind::Success => 1,
        VerdictKind::Answered => 2,
        VerdictKind::Overload => 3,
        VerdictKind::Transient => 4,
        VerdictKind::Timeout => 5,
        VerdictKind::Rejected => 6,
    };
    let after = v.retry_after().map_or(0, |d| d.as_millis() as u64 + 1);
    kind | after << 8
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

/// Admits a request at the host's `now_ms`: the slot holding its permit (0..), or a negative
/// code: -1 not seeded, -2 no free slot in this table, -(10 + reason) refused by a policy.
#[unsafe(no_mangle)]
pub extern "C" fn rx_admit(now_ms: u64) -> i32 {
    let mut rng = RNG.0.borrow_mut();
    let Some(rng) = rng.as_mut() else { return -1 };
    let mut permits = PERMITS.0.borrow_mut();
    let Some(slot) = permits.iter().position(Option::is_none) else {
        return -2;
    };
    let mut env = Env::new(Instant::from_millis(now_ms), rng);
    match (&BULKHEAD).admit(&mut env) {
        Ok(permit) => {
            permits[slot] = Some(permit);
            slot as i32
        }
        Err(r) => -(10 + reason_code(r.reason())),
    }
}

fn reason_code(r: RejectReason) -> i32 {
    match r {
        RejectReason::CircuitOpen => 1,
        RejectReason::LimiterFull => 2,
        RejectReason::Throttled => 3,
        RejectReason::BulkheadFull => 4,
        RejectReason::RateLimited => 5,
        RejectReason::BudgetExceeded => 6,
    }
}

/// Settles the request in `slot` with the response `status` at `now_ms`: its verdict code, or
/// 0 if the slot holds no request.
#[unsafe(no_mangle)]
pub extern "C" fn rx_settle(slot: u32, status: u32, now_ms: u64) -> u64 {
    let Some(permit) = PERMITS
        .0
        .borrow_mut()
        .get_mut(slot as usize)
        .and_then(Option::take)
    else {
        return 0;
    };
    let mut rng = RNG.0.borrow_mut();
    let Some(rng) = rng.as_mut() else { return 0 };
    let verdict = verdict_of(status, None);
    let mut env = Env::new(Instant::from_millis(now_ms), rng);
    permit.settle(&verdict, &mut env);
    verdict_code(&verdict)
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
        Err(r) => -(10 + i64::from(reason_code(r.reason()))),
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
