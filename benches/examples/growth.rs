//! How cost grows with N, machine-independently: one operation per subject, measured by
//! callgrind as instructions per call of that operation alone. `benches/growth.sh` runs every
//! subject at every N, writes `docs/perf/growth.csv` and draws `docs/perf/*.svg`; by hand:
//!
//! ```text
//! cargo build --release -p resilix-benches --example growth
//! valgrind --tool=callgrind --toggle-collect='*growth_op*' --callgrind-out-file=out \
//!     target/release/examples/growth keyed-rate-limit-hit 64 20000
//! target/release/examples/growth plot docs/perf/growth.csv docs/perf
//! ```
//!
//! Unlike `instructions.rs` (which cancels start-up by the difference of two runs), each
//! measured operation here is a function of its own whose name contains `growth_op`, and
//! callgrind counts only inside it (`--toggle-collect`): the setup an operation needs before
//! each call (a table filled back to N keys, say) costs nothing in the figure. The figure
//! includes the call itself, a handful of instructions, the same for every N.
//!
//! The subjects, and what N is:
//!
//! * `keyed-rate-limit-{hit,miss,evict}` and `keyed-breaker-{hit,miss,evict}`: a table of
//!   capacity [`CAPACITY`]. *hit*: N keys placed, calls cycle through them. *miss*: a key not
//!   in the table, which has N placed keys that are all in use (not idle): it takes a free
//!   entry among its 8 candidates, or the overflow state when none is free. *evict*: the table
//!   is full, N of its entries in use and the rest idle: a new key takes an idle candidate's
//!   entry (or the overflow state when all 8 are in use).
//! * `breaker-window`, `breaker-window-failing`, `throttler-window`: a 10 s breaker window
//!   (and the throttler's default window) in N buckets, admit + settle on a clock moving 1 µs
//!   per call; `-failing` settles one call in ten as a failure.
//! * `wait-queue`: a bulkhead's `WaitQueue` of capacity [`WAITERS`] holding N waiters: one
//!   waiter joins and the oldest is woken (pop), so the queue stays at N.
use std::hint::black_box;
use std::time::Duration;

use resilix::Verdict;
use resilix::breaker::{Breaker, Config, KeyedBreaker, TimeBuckets};
use resilix::bulkhead::wait::{WaitConfig, WaitOrder, WaitQueue};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::rate_limit::{KeyedRateLimiter, Rate, RateLimitConfig};
use resilix::throttler::{Throttler, ThrottlerConfig};
use resilix::time::Instant;

#[path = "../../sim/src/svg.rs"]
#[allow(dead_code)]
mod svg;

/// The keyed tables' capacity.
const CAPACITY: usize = 1024;
/// The wait queue's capacity (its `max_waiters` too).
const WAITERS: usize = 256;
/// The clock's step between calls.
const STEP: Duration = Duration::from_micros(1);
/// Where the timelines start.
const T0: Instant = Instant::from_secs(1_000);

/// Keys as a caller's ids would come: sequential (the table mixes them itself).
fn key(i: usize) -> u64 {
    i as u64
}

/// A key no setup ever used.
fn fresh(i: u64) -> u64 {
    (1 << 40) + i
}

// ---- keyed rate limiter ----

type KeyedRl = KeyedRateLimiter<CAPACITY>;

/// A million a second, a burst of 100,000: a key drained of its burst stays in use (not
/// idle) for 0.1 s, longer than any run; a key that took one cell is idle again 1 µs later.
fn keyed_rl() -> Box<KeyedRl> {
    Box::new(
        KeyedRateLimiter::new(
            RateLimitConfig::new(Rate::per_second(1_000_000)).with_burst(100_000),
        )
        .unwrap(),
    )
}

#[inline(never)]
fn growth_op_keyed_rl(t: &KeyedRl, key: u64, now: Instant) -> bool {
    black_box(t).try_acquire(black_box(key), now).is_ok()
}

/// Places keys until `n` hold an entry; answers them. Each took one cell (idle 1 µs later).
fn place_rl(t: &KeyedRl, n: usize, now: Instant) -> Vec<u64> {
    let mut placed = Vec::new();
    let mut i = 0;
    while placed.len() < n && i < 64 * CAPACITY {
        let before = t.len();
        t.try_acquire(key(i), now).unwrap();
        if t.len() > before {
            placed.push(key(i));
        }
        i += 1;
    }
    placed
}

fn keyed_rl_hit(n_keys: usize, ops: u64) {
    let t = keyed_rl();
    let keys = place_rl(&t, n_keys, T0);
    let mut now = T0;
    for i in 0..ops {
        now = now + STEP;
        assert!(growth_op_keyed_rl(&t, keys[i as usize % keys.len()], now));
    }
}

/// A table with `in_use` placed keys drained of their burst (in use for 0.1 s).
fn drained_rl(in_use: usize, now: Instant) -> Box<KeyedRl> {
    let t = keyed_rl();
    for k in place_rl(&t, in_use, now) {
        let _ = t.try_acquire_n(k, now, 99_999);
    }
    t
}

fn keyed_rl_miss(n_keys: usize, ops: u64) {
    let mut now = T0;
    let t = drained_rl(n_keys, now);
    for i in 0..ops {
        now = now + STEP * 2;
        growth_op_keyed_rl(&t, fresh(i), now);
        // The new key is idle again (it took one cell 2 µs ago): free its entry, so the next
        // call finds the same N keys in use. Not measured.
        t.evict_idle(now + STEP * 2);
    }
}

fn keyed_rl_evict(in_use: usize, ops: u64) {
    let mut now = T0;
    let t = drained_rl(in_use, now);
    // Fill every other entry with keys that took one cell: idle from 1 µs on.
    let mut i = 0;
    while t.len() < CAPACITY && i < 64 * CAPACITY {
        t.try_acquire(fresh(1 << 30) + i as u64, now).unwrap();
        i += 1;
    }
    for i in 0..ops {
        now = now + STEP * 2;
        growth_op_keyed_rl(&t, fresh(i), now);
    }
}

// ---- keyed breaker ----

type KeyedBr = KeyedBreaker<CAPACITY>;

fn keyed_br() -> Box<KeyedBr> {
    Box::new(KeyedBreaker::new(Config::DEFAULT).unwrap())
}

#[inline(never)]
fn growth_op_keyed_breaker(
    t: &KeyedBr,
    key: u64,
    verdict: &Verdict,
    rng: &mut SeededRandom,
    now: Instant,
) -> bool {
    let mut env = Env::new(now, rng);
    match black_box(t).admit(black_box(key), &mut env) {
        Ok(p) => {
            p.settle(black_box(verdict), &mut env);
            true
        }
        Err(_) => false,
    }
}

/// Places keys from `first` on until `n` more hold an entry; each settles `verdict` (a
/// failure keeps its breaker in use for the window's 10 s; a success leaves it idle).
fn place_br(t: &KeyedBr, n: usize, verdict: &Verdict, now: Instant, first: u64) -> Vec<u64> {
    let mut rng = SeededRandom::new(1);
    let mut placed = Vec::new();
    let mut i = 0;
    while placed.len() < n && i < 64 * CAPACITY {
        let k = first + i as u64;
        let mut env = Env::new(now, &mut rng);
        let permit = t.admit(k, &mut env).unwrap();
        if permit.is_overflow() {
            // Not placed: a success, so the overflow breaker never opens.
            permit.settle(&Verdict::Success, &mut env);
        } else {
            permit.settle(verdict, &mut env);
            placed.push(k);
        }
        i += 1;
    }
    placed
}

fn keyed_br_hit(n_keys: usize, ops: u64) {
    let t = keyed_br();
    let keys = place_br(&t, n_keys, &Verdict::Transient, T0, 0);
    let mut rng = SeededRandom::new(2);
    let mut now = T0;
    for i in 0..ops {
        now = now + STEP;
        let k = keys[i as usize % keys.len()];
        assert!(growth_op_keyed_breaker(
            &t,
            k,
            &Verdict::Success,
            &mut rng,
            now
        ));
    }
}

fn keyed_br_miss(n_keys: usize, ops: u64) {
    let t = keyed_br();
    place_br(&t, n_keys, &Verdict::Transient, T0, 0);
    let mut rng = SeededRandom::new(2);
    let mut now = T0;
    for i in 0..ops {
        now = now + STEP;
        growth_op_keyed_breaker(&t, fresh(i), &Verdict::Success, &mut rng, now);
        // The new key's breaker is idle (one success): free it. Not measured.
        t.evict_idle(now);
    }
}

fn keyed_br_evict(in_use: usize, ops: u64) {
    let t = keyed_br();
    place_br(&t, in_use, &Verdict::Transient, T0, 0);
    // Fill the other entries with idle keys (one success each); a new idle key may take
    // another idle key's entry rather than a free one, so fill until the table is full.
    let mut first = fresh(1 << 30);
    while t.len() < CAPACITY && first < fresh(1 << 30) + 64 * CAPACITY as u64 {
        place_br(&t, 1, &Verdict::Success, T0, first);
        first += 1;
    }
    let mut rng = SeededRandom::new(2);
    let mut now = T0;
    for i in 0..ops {
        now = now + STEP;
        growth_op_keyed_breaker(&t, fresh(i), &Verdict::Success, &mut rng, now);
    }
}

// ---- windows ----

#[inline(never)]
fn growth_op_policy<P: Policy>(p: &P, verdict: &Verdict, rng: &mut SeededRandom, now: Instant) {
    let mut env = Env::new(now, rng);
    if let Ok(permit) = black_box(p).admit(&mut env) {
        permit.settle(black_box(verdict), &mut env);
    }
}

/// Admit + settle on a clock moving 1 µs per call; one in `fail_one_in` settles a failure.
fn windowed<P: Policy>(p: &P, ops: u64, fail_one_in: u64) {
    let mut rng = SeededRandom::new(1);
    let mut now = T0;
    for i in 0..ops {
        now = now + STEP;
        let verdict = if fail_one_in > 0 && i % fail_one_in == 0 {
            Verdict::Transient
        } else {
            Verdict::Success
        };
        growth_op_policy(p, &verdict, &mut rng, now);
    }
}

fn breaker_window<const B: usize>(ops: u64, fail_one_in: u64) {
    let b: Breaker<TimeBuckets<B>> =
        Breaker::time_based(Config::DEFAULT, Duration::from_secs(10)).unwrap();
    windowed(&b, ops, fail_one_in);
}

fn throttler_window<const B: usize>(ops: u64) {
    let t = Throttler::<B>::with_buckets(ThrottlerConfig::DEFAULT).unwrap();
    windowed(&t, ops, 0);
}

/// The bucket counts measured, each a monomorphisation.
macro_rules! by_buckets {
    ($b:expr, $f:ident $(, $arg:expr)*) => {
        match $b {
            1 => $f::<1>($($arg),*),
            2 => $f::<2>($($arg),*),
            5 => $f::<5>($($arg),*),
            10 => $f::<10>($($arg),*),
            20 => $f::<20>($($arg),*),
            50 => $f::<50>($($arg),*),
            100 => $f::<100>($($arg),*),
            200 => $f::<200>($($arg),*),
            500 => $f::<500>($($arg),*),
            1000 => $f::<1000>($($arg),*),
            other => panic!("{other} buckets is not one of the measured counts"),
        }
    };
}

// ---- waiters ----

#[inline(never)]
fn growth_op_wait_queue(q: &mut WaitQueue<u64, WAITERS>, item: u64, now: Instant, c: &WaitConfig) {
    let q = black_box(q);
    if q.len() == WAITERS {
        black_box(q.pop(WaitOrder::Fifo));
        let _ = q.push(item, now, c);
    } else {
        let _ = q.push(item, now, c);
        black_box(q.pop(WaitOrder::Fifo));
    }
}

fn wait_queue(waiters: usize, ops: u64) {
    let config =
        WaitConfig::new(WAITERS as u32, Duration::from_secs(3_600), WaitOrder::Fifo).unwrap();
    let mut q = Box::new(WaitQueue::<u64, WAITERS>::new());
    for i in 0..waiters {
        q.push(i as u64, T0, &config).unwrap();
    }
    let mut now = T0;
    for i in 0..ops {
        now = now + STEP;
        growth_op_wait_queue(&mut q, i, now, &config);
    }
    assert_eq!(q.len(), waiters);
}

// ---- the plots ----

/// A figure's subjects, each with whether the design claims its cost is flat in N (drawn as a
/// dashed line at the cost for the first N).
type Drawn = &'static [(&'static str, bool)];

/// Each figure: its file, title, x label, the subjects drawn in it, and whether its y axis is
/// logarithmic (for costs that span orders of magnitude).
const FIGURES: &[(&str, &str, &str, Drawn, bool)] = &[
    (
        "keyed-rate-limit",
        "Keyed rate limiter, 1,024 entries: instructions per call",
        "keys in the table (N)",
        &[
            ("keyed-rate-limit-hit", true),
            ("keyed-rate-limit-miss", true),
            ("keyed-rate-limit-evict", true),
        ],
        false,
    ),
    (
        "keyed-breaker",
        "Keyed breaker, 1,024 entries: instructions per admit + settle",
        "keys in the table (N)",
        &[
            ("keyed-breaker-hit", true),
            ("keyed-breaker-miss", true),
            ("keyed-breaker-evict", true),
        ],
        false,
    ),
    (
        "windows",
        "Time windows: instructions per admit + settle",
        "buckets in the window (N)",
        &[
            ("breaker-window", true),
            ("breaker-window-failing", false),
            ("throttler-window", false),
        ],
        true,
    ),
    (
        "waiters",
        "Bulkhead wait queue (capacity 256): instructions per join + wake",
        "waiters queued (N)",
        &[("wait-queue", false)],
        false,
    ),
];

fn plot(csv: &str, out: &str) {
    let text = std::fs::read_to_string(csv).unwrap_or_else(|e| panic!("{csv}: {e}"));
    let rows: Vec<(String, f64, f64)> = text
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            Some((
                f.first()?.to_string(),
                f.get(1)?.parse().ok()?,
                f.get(2)?.parse().ok()?,
            ))
        })
        .collect();
    for (file, title, x_label, subjects, log_y) in FIGURES {
        let mut series = Vec::new();
        for (subject, flat) in *subjects {
            let points: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| r.0 == *subject)
                .map(|r| (r.1, r.2))
                .collect();
            if points.is_empty() {
                continue;
            }
            if *flat {
                let (x0, y0) = points[0];
                let x1 = points.last().unwrap().0;
                series.push(svg::Series {
                    name: format!("{} if O(1)", subject.rsplit('-').next().unwrap()),
                    points: vec![(x0, y0), (x1, y0)],
                    dashed: true,
                });
            }
            series.push(svg::Series {
                name: (*subject).to_string(),
                points,
                dashed: false,
            });
        }
        if series.is_empty() {
            continue;
        }
        let chart = svg::Chart {
            title: (*title).to_string(),
            x_label: (*x_label).to_string(),
            y_label: "instructions per operation".to_string(),
            series,
            log_y: *log_y,
        };
        let path = format!("{out}/{file}.svg");
        std::fs::write(&path, chart.render()).unwrap_or_else(|e| panic!("{path}: {e}"));
    }
}

/// A subject's run: N, and the number of operations.
type Run = fn(usize, u64);

const SUBJECTS: &[(&str, Run)] = &[
    ("keyed-rate-limit-hit", keyed_rl_hit),
    ("keyed-rate-limit-miss", keyed_rl_miss),
    ("keyed-rate-limit-evict", keyed_rl_evict),
    ("keyed-breaker-hit", keyed_br_hit),
    ("keyed-breaker-miss", keyed_br_miss),
    ("keyed-breaker-evict", keyed_br_evict),
    ("breaker-window", |b, n| {
        by_buckets!(b, breaker_window, n, 0)
    }),
    ("breaker-window-failing", |b, n| {
        by_buckets!(b, breaker_window, n, 10)
    }),
    ("throttler-window", |b, n| {
        by_buckets!(b, throttler_window, n)
    }),
    ("wait-queue", wait_queue),
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--list") => {
            for (name, _) in SUBJECTS {
                println!("{name}");
            }
        }
        Some("plot") if args.len() == 3 => plot(&args[1], &args[2]),
        Some(subject) => {
            let x: usize = args.get(1).and_then(|s| s.parse().ok()).expect("N");
            let ops: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10_000);
            match SUBJECTS.iter().find(|(name, _)| *name == subject) {
                Some((_, run)) => run(x, ops),
                None => {
                    let names: Vec<_> = SUBJECTS.iter().map(|(name, _)| *name).collect();
                    eprintln!("unknown subject {subject:?}: {}", names.join(", "));
                    std::process::exit(2);
                }
            }
        }
        None => {
            eprintln!("usage: growth SUBJECT N [OPS] | growth --list | growth plot CSV DIR");
            std::process::exit(2);
        }
    }
}
