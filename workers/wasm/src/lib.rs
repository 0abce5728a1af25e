//! resilix inside a Cloudflare Worker: the core's policies in module-scope statics, behind a
//! thin C ABI that the JavaScript wrapper (`../src/resilix.mjs`) drives around each `fetch`.
//!
//! What a Workers isolate asks of a module, and how this one answers:
//!
//! * **State lives for the isolate.** The policies are statics of this module; the Worker
//!   instantiates it once, at module scope, and every request the isolate serves shares them.
//!   Nothing runs at instantiation (no start function): building a policy draws nothing.
//! * **Time is an argument.** Every export that decides takes `now_ms`, the host's
//!   `Date.now()` read at the last I/O boundary (request start, after the fetch, after the
//!   wait). Milliseconds since 1970 become the core's nanosecond instants, so a `Retry-After`
//!   HTTP-date is read against the same clock.
//! * **Randomness is drawn lazily.** The one import, `resilix_host.random_u32`, is answered by
//!   `crypto.getRandomValues` and called only while a policy draws (backoff jitter, the
//!   breaker's open-wait jitter), which happens only inside a request. workerd refuses random
//!   values at module scope, so a draw there would fail the Worker's load.
//! * **Requests interleave.** One isolate serves many requests at once, each suspended at its
//!   own `await`. Each logical call holds a slot of a fixed table between exports (its retry
//!   state and its admitted attempt, whose permits it holds across the fetch).
//! * **Requests can vanish.** A request the runtime cancels (the client went away) never runs
//!   its `finally`, so its slot would hold its permits (a half-open probe among them) for
//!   ever. Every slot has a lease, the call's deadline plus [`GRACE_MS`]; the next call to
//!   begin drops expired slots, which cancels their permits (the core's contract: a dropped
//!   permit gives back what it holds and records nothing).
//!
//! Exports (handles are `i32`: slot index + 256 × generation, so a stale handle is refused):
//!
//! * `rx_begin(set, now_ms, timeout_ms, idempotent) -> handle` (negative: `ERR_FULL`,
//!   `ERR_SET`)
//! * `rx_admit(handle, now_ms) -> code`: [`ADMITTED`], a refusal `1..=6` (the reason's index
//!   in `RejectReason::ALL` + 1), [`DEADLINE_PASSED`] or [`BAD_HANDLE`]; then
//!   `rx_is_probe(handle)` and `rx_attempt_deadline_ms(handle)`
//! * `rx_settle_http(handle, now_ms, status, retry_after_len) -> next` (the `Retry-After`
//!   value written into `rx_buffer()` first) and `rx_settle_failure(handle, now_ms, timed_out)`
//!   for a fetch that threw or was aborted: [`DONE`], [`RETRY`] or [`GIVE_UP`]
//! * `rx_next_at_ms(handle)`: when to try again (a retry's instant, or a refusal's retry-at;
//!   negative when none); `rx_reason(handle) -> len`: the text of the last refusal or
//!   give-up, written into `rx_buffer()`
//! * `rx_end(handle)`: frees the slot, cancelling a held attempt
//! * stats: `rx_breaker_state(set)`, `rx_budget_milli(set)`, `rx_live()`, `rx_reclaimed()`,
//!   `rx_transitions(set)`, `rx_draws()`
// no_std on wasm32, the one target it ships for; std elsewhere only so that `cargo clippy`
// can check it on the host (nothing else builds it there).
#![cfg_attr(target_arch = "wasm32", no_std)]

#[cfg(target_feature = "atomics")]
compile_error!("HostCell relies on a single-threaded module (no wasm threads)");

mod policies;

use core::cell::RefCell;
use core::sync::atomic::{AtomicU32, Ordering};
use core::time::Duration;

use resilix::Verdict;
use resilix::call::{CallOptions, Next, Stop};
use resilix::classify::http::{carries_retry_after, classify_status};
use resilix::classify::retry_after::parse_delay;
use resilix::observe::{CircuitState, Event, Observer};
use resilix::permit::Env;
use resilix::random::Random;
use resilix::rejection::RejectReason;
use resilix::time::{Deadline, Instant};

use policies::{LiveAttempt, LiveCall, SETS};

#[cfg(target_arch = "wasm32")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::arch::wasm32::unreachable()
}

/// Module state for a single-threaded isolate.
struct HostCell<T>(T);
// SAFETY: wasm32-unknown-unknown without the `atomics` feature (checked above) has one thread,
// and the host calls exports one at a time (the one import, `random_u32`, never calls back),
// so the `RefCell`s inside are never borrowed from two places at once.
unsafe impl<T> Sync for HostCell<T> {}

#[link(wasm_import_module = "resilix_host")]
unsafe extern "C" {
    /// 32 random bits from the host's `crypto.getRandomValues`, drawn when a policy needs them.
    safe fn random_u32() -> u32;
}

/// The host's randomness, asked for one word at a time, only when a policy draws.
struct HostRandom;

impl Random for HostRandom {
    fn next_u32(&mut self) -> u32 {
        DRAWS.fetch_add(1, Ordering::Relaxed);
        random_u32()
    }
}

/// Counts what the policies report, per policy set.
struct Heard {
    transitions: [AtomicU32; SETS],
}

struct SetObserver(usize);

impl Observer for SetObserver {
    fn on_event(&self, event: &Event) {
        if let Event::CircuitTransition { .. } = event {
            HEARD.transitions[self.0].fetch_add(1, Ordering::Relaxed);
        }
    }
}

static HEARD: Heard = Heard {
    transitions: [const { AtomicU32::new(0) }; SETS],
};
static DRAWS: AtomicU32 = AtomicU32::new(0);
static RECLAIMED: AtomicU32 = AtomicU32::new(0);

/// How many logical calls one isolate holds at once. A Worker isolate serves a few hundred
/// concurrent requests at most in practice; a call that finds the table full is refused
/// (`ERR_FULL`) rather than let through unguarded.
pub const SLOTS: usize = 128;
/// How long past its deadline a slot is kept before the next `rx_begin` reclaims it (ours):
/// the wrapper races each fetch against the attempt deadline and settles a timeout then, so a
/// slot still held a second later belongs to a request the runtime cancelled.
pub const GRACE_MS: u64 = 1_000;
/// The longest call a slot accepts, so every lease ends (ours: Workers' own wall-clock limit
/// for a request's subrequests is far shorter in practice).
pub const MAX_TIMEOUT_MS: f64 = 300_000.0;

/// `rx_admit`: the attempt is admitted; send it.
pub const ADMITTED: u32 = 0;
/// `rx_admit`: the call's deadline has passed.
pub const DEADLINE_PASSED: u32 = 7;
/// Any export: the handle is not a live call (ended, reclaimed, or never issued).
pub const BAD_HANDLE: u32 = 8;
/// `rx_settle_*`: the call is over, successfully or with an answer to pass on.
pub const DONE: u32 = 0;
/// `rx_settle_*`: wait until `rx_next_at_ms`, then admit again.
pub const RETRY: u32 = 1;
/// `rx_settle_*`: not retried; `rx_reason` says why.
pub const GIVE_UP: u32 = 2;
/// `rx_begin`: every slot is taken.
pub const ERR_FULL: i32 = -1;
/// `rx_begin`: no such policy set.
pub const ERR_SET: i32 = -2;

/// One logical call between exports.
struct Live {
    set: usize,
    call: LiveCall,
    attempt: Option<LiveAttempt>,
    probe: bool,
    lease: Instant,
    next_at: Option<Instant>,
    reason: &'static str,
}

struct Slot {
    generation: u16,
    live: Option<Live>,
}

static TABLE: HostCell<RefCell<[Slot; SLOTS]>> = HostCell(RefCell::new(
    [const {
        Slot {
            generation: 0,
            live: None,
        }
    }; SLOTS],
));

const BUFFER_LEN: usize = 256;
static BUFFER: HostCell<RefCell<[u8; BUFFER_LEN]>> = HostCell(RefCell::new([0; BUFFER_LEN]));

/// The host's milliseconds since 1970 as an instant; NaN and negatives read as the origin,
/// values past the `u64` nanosecond range saturate (`as` does both).
///
/// Whole milliseconds and the fraction are converted apart: `ms * 1e6` in one `f64` is about
/// 1.8e18, far past the 2^53 that `f64` holds exactly, and would round a whole `Date.now()`
/// by up to 128 ns, so a 1 s Retry-After could come back as 999.9998 ms.
fn instant(ms: f64) -> Instant {
    let whole = ms as u64;
    let fraction_ns = ((ms - whole as f64) * 1e6) as u64;
    Instant::from_nanos(whole.saturating_mul(1_000_000).saturating_add(fraction_ns))
}

/// The inverse of [`instant`], exact for whole milliseconds.
fn millis(at: Instant) -> f64 {
    let ns = at.as_nanos();
    (ns / 1_000_000) as f64 + (ns % 1_000_000) as f64 / 1e6
}

fn handle(index: usize, generation: u16) -> i32 {
    (index as i32) | ((generation as i32) << 8)
}

/// Runs `f` on the live call behind `h`, or returns `None` for a stale or unknown handle.
fn with_live<T>(h: i32, f: impl FnOnce(&mut Live) -> T) -> Option<T> {
    if h < 0 {
        return None;
    }
    let (index, generation) = ((h & 0xff) as usize, (h >> 8) as u16);
    let mut table = TABLE.0.borrow_mut();
    let slot = table.get_mut(index)?;
    if slot.generation != generation {
        return None;
    }
    slot.live.as_mut().map(f)
}

fn free(slot: &mut Slot) {
    // Dropping the call and any held attempt cancels its permits.
    slot.live = None;
    slot.generation = slot.generation.wrapping_add(1);
}

/// Buffer for the host: the `Retry-After` value it writes before `rx_settle_http`, and the
/// reason text `rx_reason` writes back.
#[unsafe(no_mangle)]
pub extern "C" fn rx_buffer() -> *const u8 {
    BUFFER.0.as_ptr() as *const u8
}

/// Starts a logical call through policy set `set` at `now_ms`, due within `timeout_ms`.
#[unsafe(no_mangle)]
pub extern "C" fn rx_begin(set: u32, now_ms: f64, timeout_ms: f64, idempotent: u32) -> i32 {
    let set = set as usize;
    if set >= SETS {
        return ERR_SET;
    }
    let now = instant(now_ms);
    let timeout = timeout_ms.clamp(0.0, MAX_TIMEOUT_MS);
    let deadline = Deadline::after(now, Duration::from_nanos((timeout * 1e6) as u64));
    let mut table = TABLE.0.borrow_mut();
    let mut free_index = None;
    for (i, slot) in table.iter_mut().enumerate() {
        if slot.live.as_ref().is_some_and(|l| l.lease < now) {
            free(slot);
            RECLAIMED.fetch_add(1, Ordering::Relaxed);
        }
        if slot.live.is_none() && free_index.is_none() {
            free_index = Some(i);
        }
    }
    let Some(i) = free_index else {
        return ERR_FULL;
    };
    let options = CallOptions::default()
        .deadline(deadline)
        .idempotent(idempotent != 0);
    let slot = &mut table[i];
    slot.live = Some(Live {
        set,
        call: policies::pipeline(set).call(now, options),
        attempt: None,
        probe: false,
        lease: deadline
            .instant()
            .saturating_add(Duration::from_millis(GRACE_MS)),
        next_at: None,
        reason: "",
    });
    handle(i, slot.generation)
}

/// Asks every policy of the call's set whether the next attempt may be sent at `now_ms`.
#[unsafe(no_mangle)]
pub extern "C" fn rx_admit(h: i32, now_ms: f64) -> u32 {
    with_live(h, |live| {
        // An attempt still held is cancelled: the host is starting over.
        live.attempt = None;
        let mut rng = HostRandom;
        let observer = SetObserver(live.set);
        let mut env = Env::new(instant(now_ms), &mut rng).with_observer(&observer);
        match live.call.admit(&mut env) {
            Ok(attempt) => {
                // Half-open admits only probes, and the state is read in the same export
                // that admitted (no other call can run in between): a half-open breaker
                // right after admission means this attempt is a probe.
                live.probe = policies::breaker(live.set).state() == CircuitState::HalfOpen;
                live.attempt = Some(attempt);
                live.next_at = None;
                ADMITTED
            }
            Err(Stop::Refused(rejection)) => {
                live.next_at = rejection.retry_at();
                live.reason = rejection.reason().code();
                let index = RejectReason::ALL
                    .iter()
                    .position(|r| *r == rejection.reason())
                    .unwrap_or(0);
                index as u32 + 1
            }
            Err(Stop::DeadlinePassed) => {
                live.next_at = None;
                live.reason = "deadline-passed";
                DEADLINE_PASSED
            }
        }
    })
    .unwrap_or(BAD_HANDLE)
}

/// Whether the attempt just admitted is a half-open probe of the breaker.
#[unsafe(no_mangle)]
pub extern "C" fn rx_is_probe(h: i32) -> u32 {
    with_live(h, |live| (live.attempt.is_some() && live.probe) as u32).unwrap_or(0)
}

/// The instant the admitted attempt must be raced against (attempt timeout or the call's
/// deadline, the tighter), in ms since 1970; negative when none.
#[unsafe(no_mangle)]
pub extern "C" fn rx_attempt_deadline_ms(h: i32) -> f64 {
    with_live(h, |live| {
        live.attempt
            .as_ref()
            .and_then(|a| a.deadline())
            .map_or(-1.0, |d| millis(d.instant()))
    })
    .unwrap_or(-1.0)
}

fn settle(h: i32, now_ms: f64, verdict: impl FnOnce(Instant) -> Verdict) -> u32 {
    with_live(h, |live| {
        let Some(attempt) = live.attempt.take() else {
            return BAD_HANDLE;
        };
        let now = instant(now_ms);
        let verdict = verdict(now);
        let mut rng = HostRandom;
        let observer = SetObserver(live.set);
        let mut env = Env::new(now, &mut rng).with_observer(&observer);
        match live.call.settle(attempt, &verdict, &mut env) {
            Next::Done => {
                live.next_at = None;
                DONE
            }
            Next::RetryAt(at) => {
                live.next_at = Some(at);
                RETRY
            }
            Next::GiveUp(reason) => {
                live.next_at = None;
                live.reason = reason.as_str();
                GIVE_UP
            }
        }
    })
    .unwrap_or(BAD_HANDLE)
}

/// Settles the admitted attempt with an HTTP response: its `status` and, if `retry_after_len`
/// is not zero, the `Retry-After` value the host wrote into `rx_buffer()` (parsed by the core,
/// both forms; an HTTP-date is read against `now_ms`).
#[unsafe(no_mangle)]
pub extern "C" fn rx_settle_http(h: i32, now_ms: f64, status: u32, retry_after_len: u32) -> u32 {
    let status = status.min(u16::MAX as u32) as u16;
    settle(h, now_ms, |now| {
        let retry_after = if retry_after_len > 0 && carries_retry_after(status) {
            let buffer = BUFFER.0.borrow();
            let len = (retry_after_len as usize).min(BUFFER_LEN);
            parse_delay(&buffer[..len], now.as_nanos() / 1_000_000_000)
        } else {
            None
        };
        classify_status(status, retry_after)
    })
}

/// Settles the admitted attempt whose fetch failed without a response: `timed_out` when the
/// host aborted it at its deadline ([`Verdict::Timeout`], retried only for idempotent calls),
/// else a network error ([`Verdict::Transient`]).
#[unsafe(no_mangle)]
pub extern "C" fn rx_settle_failure(h: i32, now_ms: f64, timed_out: u32) -> u32 {
    settle(h, now_ms, |_| {
        if timed_out != 0 {
            Verdict::Timeout
        } else {
            Verdict::Transient
        }
    })
}

/// When to try again, in ms since 1970: the retry's instant after `RETRY`, or the refusing
/// policy's retry-at after a refusal; negative when there is none.
#[unsafe(no_mangle)]
pub extern "C" fn rx_next_at_ms(h: i32) -> f64 {
    with_live(h, |live| live.next_at.map_or(-1.0, millis)).unwrap_or(-1.0)
}

/// Writes the last refusal's or give-up's text (`circuit-open`, `budget-exceeded`, ...) into
/// `rx_buffer()` and returns its length.
#[unsafe(no_mangle)]
pub extern "C" fn rx_reason(h: i32) -> u32 {
    let text = with_live(h, |live| live.reason).unwrap_or("bad-handle");
    let mut buffer = BUFFER.0.borrow_mut();
    let n = text.len().min(BUFFER_LEN);
    buffer[..n].copy_from_slice(&text.as_bytes()[..n]);
    n as u32
}

/// Ends the call and frees its slot; an attempt still held is cancelled (its permits are
/// given back, nothing is recorded).
#[unsafe(no_mangle)]
pub extern "C" fn rx_end(h: i32) {
    if h < 0 {
        return;
    }
    let (index, generation) = ((h & 0xff) as usize, (h >> 8) as u16);
    let mut table = TABLE.0.borrow_mut();
    if let Some(slot) = table.get_mut(index)
        && slot.generation == generation
        && slot.live.is_some()
    {
        free(slot);
    }
}

/// The breaker's state: 0 closed, 1 open, 2 half-open, 3 forced open, 4 disabled.
#[unsafe(no_mangle)]
pub extern "C" fn rx_breaker_state(set: u32) -> u32 {
    if set as usize >= SETS {
        return u32::MAX;
    }
    match policies::breaker(set as usize).state() {
        CircuitState::Closed => 0,
        CircuitState::Open => 1,
        CircuitState::HalfOpen => 2,
        CircuitState::ForcedOpen => 3,
        CircuitState::Disabled => 4,
    }
}

/// The retry budget's balance, in thousandths of a token.
#[unsafe(no_mangle)]
pub extern "C" fn rx_budget_milli(set: u32) -> u32 {
    if set as usize >= SETS {
        return u32::MAX;
    }
    policies::budget(set as usize).balance().as_milli()
}

/// How many breaker transitions set `set` has reported.
#[unsafe(no_mangle)]
pub extern "C" fn rx_transitions(set: u32) -> u32 {
    HEARD
        .transitions
        .get(set as usize)
        .map_or(0, |t| t.load(Ordering::Relaxed))
}

/// Calls holding a slot.
#[unsafe(no_mangle)]
pub extern "C" fn rx_live() -> u32 {
    TABLE.0.borrow().iter().filter(|s| s.live.is_some()).count() as u32
}

/// Slots reclaimed after their lease ran out (requests the runtime cancelled).
#[unsafe(no_mangle)]
pub extern "C" fn rx_reclaimed() -> u32 {
    RECLAIMED.load(Ordering::Relaxed)
}

/// Random words drawn from the host so far.
#[unsafe(no_mangle)]
pub extern "C" fn rx_draws() -> u32 {
    DRAWS.load(Ordering::Relaxed)
}
