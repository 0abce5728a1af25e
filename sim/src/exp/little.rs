//! Experiment 7: Little's Law (docs/design/spec.md §6): a rate limiter does not bound concurrency.
//!
//! Open-loop arrivals at a fixed rate λ pass a real `RateLimiter` to an upstream whose time in
//! system W triples halfway through (`upstream::Degrading`). The rate limiter keeps admitting
//! at λ, so the time-average number in flight L = λW triples with W. With a `Bulkhead` or the
//! adaptive `Limiter` in the same pipeline, the number in flight stays under the cap or the
//! limit at every admission.

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant as WallClock};

use resilix::RejectReason;
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::limiter::{Limiter, LimiterConfig};
use resilix::pipeline::Pipeline;
use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
use resilix::time::Instant;

use super::Ctx;
use crate::engine::{ClientKind, Engine, Outcome, Workload};
use crate::net::Delay;
use crate::observer::Tally;
use crate::report::{Check, Section, Table, fmt_num};
use crate::stack::Stack;
use crate::svg::{Chart, Series};
use crate::upstream::Degrading;

/// Offered: 24 clients × 10 calls/s = 240/s.
const CLIENTS: usize = 24;
const RATE_PER_CLIENT: f64 = 10.0;
/// The rate limiter's quota, below the offered rate so that it is what sets λ: it admits
/// 200 calls a second before and after the degradation alike.
const QUOTA: u32 = 200;
const QUOTA_BURST: u32 = 20;
/// Mean service time before the degradation, and the factor after.
const BASE: Duration = Duration::from_millis(50);
const FACTOR: f64 = 3.0;
/// The bulkhead's cap: above L before (10), below L after (30).
const CAP: u32 = 15;
/// Seconds skipped after the start and after the degradation before measuring.
const SETTLE: f64 = 5.0;

fn lambda() -> f64 {
    f64::from(QUOTA)
}

/// Per phase: time-average in flight, admitted rate, mean time in system.
#[derive(Clone, Copy, Debug, Default)]
struct Phase {
    l: f64,
    lambda: f64,
    w: f64,
}

impl Phase {
    /// Over the whole buckets `[from, to)` of a 1-second series.
    fn of(o: &Outcome, from: usize, to: usize) -> Phase {
        let span = (to - from) as f64;
        let sum_f = |v: &[f64]| v.iter().skip(from).take(to - from).sum::<f64>();
        let sum_u = |v: &[u64]| v.iter().skip(from).take(to - from).sum::<u64>();
        let settled = sum_u(&o.series_settled);
        Phase {
            l: sum_f(&o.series_in_flight) / span,
            lambda: sum_u(&o.series_sent) as f64 / span,
            w: if settled == 0 {
                0.0
            } else {
                sum_f(&o.series_time_in_system) / settled as f64
            },
        }
    }
}

struct Run {
    before: Phase,
    after: Phase,
    max_in_flight: u64,
    series: Vec<(f64, f64)>,
    rate_limited: u64,
    bulkhead_full: u64,
    limiter_full: u64,
}

fn simulate<S: Stack>(
    ctx: &Ctx,
    stacks: &[S],
    secs: u64,
    watch: Option<&dyn Fn(Instant, u64)>,
) -> Run {
    let half = secs / 2;
    let w = Workload {
        clients: CLIENTS,
        rate: RATE_PER_CLIENT,
        kind: ClientKind::Open,
        duration: Duration::from_secs(secs),
        warmup: Duration::ZERO,
        net: Delay::Fixed(Duration::ZERO),
        idempotent: false,
        bucket: Duration::from_secs(1),
    };
    let up = Degrading {
        base: BASE,
        factor: FACTOR,
        from: Instant::from_secs(half),
        exp: true,
    };
    let tally = Tally::default();
    let mut engine = Engine::new(stacks, up, w, &tally);
    if let Some(watch) = watch {
        engine = engine.watch(watch);
    }
    let o = engine.run(ctx.master ^ 0x1177, 0);
    let (half, secs, settle) = (half as usize, secs as usize, SETTLE as usize);
    Run {
        before: Phase::of(&o, settle, half),
        after: Phase::of(&o, half + settle, secs),
        max_in_flight: o.max_in_flight,
        series: o
            .series_in_flight
            .iter()
            .take(secs)
            .enumerate()
            .map(|(i, l)| (i as f64 + 0.5, *l))
            .collect(),
        rate_limited: tally.rejected(RejectReason::RateLimited),
        bulkhead_full: tally.rejected(RejectReason::BulkheadFull),
        limiter_full: tally.rejected(RejectReason::LimiterFull),
    }
}

fn rate_limiter() -> RateLimiter {
    RateLimiter::new(RateLimitConfig::new(Rate::per_second(QUOTA)).with_burst(QUOTA_BURST))
        .expect("valid")
}

pub fn run(ctx: &Ctx) -> Section {
    let started = WallClock::now();
    let secs: u64 = if ctx.quick { 120 } else { 600 };
    let mut s = Section::new(
        "little",
        "Little's Law: a rate limiter does not bound concurrency",
        &format!(
            "{CLIENTS} open-loop clients × {RATE_PER_CLIENT} calls/s through a real \
             `RateLimiter` of {QUOTA}/s (burst {QUOTA_BURST}), which holds the admitted rate at \
             λ = {:.0}/s, to an upstream that always \
             answers, with exponential service times of mean {} ms that become {FACTOR}× \
             longer at t = {} s; no network delay, so W is the service time. Run for {secs} s; \
             each phase is measured over whole seconds, skipping the first {SETTLE:.0} s of \
             each. Then the same with a `Bulkhead` of {CAP}, and with the adaptive `Limiter` \
             (Gradient2, Netflix defaults: limit 20..200), in the pipeline.",
            lambda(),
            BASE.as_millis(),
            secs / 2
        ),
    );

    // The rate limiter alone.
    let rl = rate_limiter();
    let alone = simulate(ctx, &[Pipeline::new().rate_limit(&rl)], secs, None);

    // With a bulkhead: its own count is checked against the cap at every admission.
    let rl = rate_limiter();
    let bulkhead = Bulkhead::new(BulkheadConfig::new(CAP).expect("valid"));
    let over_cap = Cell::new(0u64);
    let watch_cap = |_now: Instant, in_flight: u64| {
        if bulkhead.held() > CAP || in_flight > u64::from(CAP) {
            over_cap.set(over_cap.get() + 1);
        }
    };
    let capped = simulate(
        ctx,
        &[Pipeline::new().bulkhead(&bulkhead).rate_limit(&rl)],
        secs,
        Some(&watch_cap),
    );

    // With the adaptive limiter: in flight ≤ limit at every admission, and the limit sampled.
    let rl = rate_limiter();
    let limiter = Limiter::new(LimiterConfig::gradient2()).expect("default");
    let over_limit = Cell::new(0u64);
    let admissions = Cell::new(0u64);
    let limits = RefCell::new(Vec::<(f64, f64)>::new());
    let next = Cell::new(0.0f64);
    let watch_limit = |now: Instant, in_flight: u64| {
        admissions.set(admissions.get() + 1);
        let (held, limit) = (limiter.in_flight(), limiter.limit());
        if held > limit || in_flight != u64::from(held) {
            over_limit.set(over_limit.get() + 1);
        }
        let t = now.since_origin().as_secs_f64();
        if t >= next.get() {
            limits.borrow_mut().push((t, f64::from(limit)));
            next.set(t.floor() + 1.0);
        }
    };
    let limited = simulate(
        ctx,
        &[Pipeline::new().limiter(&limiter).rate_limit(&rl)],
        secs,
        Some(&watch_limit),
    );
    let limits = limits.into_inner();
    let limit_after = {
        let half = (secs / 2) as f64 + SETTLE;
        let after: Vec<f64> = limits
            .iter()
            .filter(|(t, _)| *t >= half)
            .map(|(_, l)| *l)
            .collect();
        super::mean(&after)
    };
    let max_limit = limits.iter().map(|(_, l)| *l).fold(0.0, f64::max);

    let mut t = Table::new(
        "phases",
        "Time-average in flight L, admitted rate λ and time in system W, before and after W triples",
        &[
            "pipeline",
            "phase",
            "λ (admitted/s)",
            "W (ms)",
            "λW",
            "L measured",
            "max in flight (run)",
            "refused",
        ],
    );
    for (name, r, refused) in [
        (
            "rate limiter",
            &alone,
            format!("{} rate-limited", alone.rate_limited),
        ),
        (
            "rate limiter + bulkhead of 15",
            &capped,
            format!(
                "{} bulkhead-full, {} rate-limited",
                capped.bulkhead_full, capped.rate_limited
            ),
        ),
        (
            "rate limiter + adaptive limiter",
            &limited,
            format!(
                "{} limiter-full, {} rate-limited",
                limited.limiter_full, limited.rate_limited
            ),
        ),
    ] {
        for (phase, p) in [("before", r.before), ("after ×3", r.after)] {
            t.row(vec![
                name.into(),
                phase.into(),
                fmt_num(p.lambda),
                fmt_num(p.w * 1000.0),
                fmt_num(p.lambda * p.w),
                fmt_num(p.l),
                r.max_in_flight.to_string(),
                refused.clone(),
            ]);
        }
    }
    s.tables.push(t);

    // Little's Law itself, per phase: the three measured quantities agree. The residue is the
    // calls straddling a phase edge, O(W / phase) < 1%.
    for (phase, p) in [("before", alone.before), ("after", alone.after)] {
        s.checks.push(Check::rel(
            "L1",
            &format!("rate limiter, {phase}: L measured vs λW measured"),
            p.l,
            p.lambda * p.w,
            0.02,
        ));
    }
    // The rate limiter holds λ while W triples.
    s.checks.push(Check::rel(
        "L1",
        "rate limiter: admitted rate after ÷ before (λ held)",
        alone.after.lambda / alone.before.lambda,
        1.0,
        0.03,
    ));
    // So L triples. Tolerance: L is λ (held by the limiter) times a mean of exponential
    // service times, over 11,000 calls a phase in the quick profile: a standard error near 1%
    // per phase, so ±5% on the ratio is over 3 standard errors.
    let ratio = alone.after.l / alone.before.l;
    s.checks.push(Check::rel(
        "L1",
        "rate limiter: L after ÷ L before while W triples",
        ratio,
        FACTOR,
        0.05,
    ));
    s.checks.push(Check::new(
        "L2",
        "bulkhead of 15: in flight at every admission ≤ cap",
        format!(
            "max {} (L after {}), {} over",
            capped.max_in_flight,
            fmt_num(capped.after.l),
            over_cap.get()
        ),
        format!("≤ {CAP} (unbounded: {})", fmt_num(alone.after.l)),
        "exact".into(),
        capped.max_in_flight <= u64::from(CAP)
            && over_cap.get() == 0
            && capped.bulkhead_full > 0
            && capped.after.l <= f64::from(CAP),
    ));
    s.checks.push(Check::new(
        "L3",
        "adaptive limiter: in flight ≤ its limit at every admission",
        format!(
            "{} of {} admissions over; max in flight {}, max limit {max_limit:.0}",
            over_limit.get(),
            admissions.get(),
            limited.max_in_flight,
        ),
        "in flight ≤ limit".into(),
        "exact".into(),
        over_limit.get() == 0 && admissions.get() > 0 && limited.max_in_flight as f64 <= max_limit,
    ));
    s.checks.push(Check::new(
        "L3",
        "adaptive limiter: L after W triples ≤ mean limit after",
        fmt_num(limited.after.l),
        format!(
            "≤ {} (unbounded: {})",
            fmt_num(limit_after),
            fmt_num(alone.after.l)
        ),
        "bounded".into(),
        limited.after.l <= limit_after
            && limited.after.l < alone.after.l
            && limited.limiter_full > 0,
    ));

    let half = (secs / 2) as f64;
    let lw = |l: f64| {
        vec![
            (0.0, l),
            (half, l),
            (half, l * FACTOR),
            (secs as f64, l * FACTOR),
        ]
    };
    s.charts.push((
        "in-flight".into(),
        Chart {
            title: "Calls in flight while latency triples at a fixed arrival rate".into(),
            x_label: "time (s)".into(),
            y_label: "calls in flight (1-second average)".into(),
            series: vec![
                Series {
                    name: "rate limiter".into(),
                    points: alone.series.clone(),
                    dashed: false,
                },
                Series {
                    name: format!("+ bulkhead of {CAP}"),
                    points: capped.series.clone(),
                    dashed: false,
                },
                Series {
                    name: "+ adaptive limiter".into(),
                    points: limited.series.clone(),
                    dashed: false,
                },
                Series {
                    name: "adaptive limit".into(),
                    points: limits,
                    dashed: true,
                },
                Series {
                    name: "λW (Little)".into(),
                    points: lw(lambda() * BASE.as_secs_f64()),
                    dashed: true,
                },
            ],
            log_y: false,
        },
    ));
    s.notes.push(
        "The adaptive limiter bounds concurrency by its limit, and the limit follows latency \
         relative to its own long-term average: a degradation that lasts becomes the new \
         normal, and Gradient2 may raise the limit again. It bounds concurrency at every \
         instant; it does not promise the pre-degradation level. The bulkhead's cap is the \
         fixed promise."
            .into(),
    );
    s.seconds = started.elapsed().as_secs_f64();
    s
}
