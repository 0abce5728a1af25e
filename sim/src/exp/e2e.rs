//! Experiment 6: docs/design/spec.md §10 and §9 end to end, through whole pipelines.
//!
//! * E1: one shared retry budget caps three pipelines.
//! * E2: the inner-shedding regression of docs/design/spec.md §9: a throttler outside a bulkhead of 5, 20
//!   calls offered per tick, must not read the bulkhead's shedding as upstream distress; a
//!   failing upstream behind the same bulkhead must still be throttled. The published bug is
//!   re-created outside the core ([`CountAtAdmit`]) to show the setup catches it.
//! * E3: shed calls never reach the duration histogram.
//! * E4: the six rejection reasons, each produced by a real pipeline built to produce it, and
//!   told apart by the caller from what `Call` returns (and by the observer, which must agree).

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant as WallClock};

use resilix::breaker::{Breaker, Config as BreakerConfig};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::limiter::{Limiter, LimiterConfig};
use resilix::observe::Observer;
use resilix::permit::{Env, Permit, Policy};
use resilix::pipeline::Pipeline;
use resilix::random::{Random, SeededRandom};
use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
use resilix::retry::budget::{RatioBudget, RatioBudgetConfig};
use resilix::retry::{Backoff, GiveUpReason, Retry, RetryConfig};
use resilix::throttler::{Throttler, ThrottlerConfig, ThrottlerPermit};
use resilix::time::Instant;
use resilix::{RejectReason, Rejection, Verdict};

use super::Ctx;
use crate::engine::{ClientKind, Engine, Outcome, Workload};
use crate::net::Delay;
use crate::observer::{Tally, give_up_key};
use crate::report::{Check, Section, Table, fmt_num};
use crate::stack::Stack;
use crate::svg::{Chart, Series};
use crate::upstream::{Flaky, Upstream};

fn workload(clients: usize, secs: u64, warmup: u64) -> Workload {
    Workload {
        clients,
        rate: 10.0,
        kind: ClientKind::Open,
        duration: Duration::from_secs(secs),
        warmup: Duration::from_secs(warmup),
        net: Delay::Exponential {
            mean: Duration::from_millis(5),
        },
        idempotent: false,
        bucket: Duration::ZERO,
    }
}

pub fn run(ctx: &Ctx) -> Section {
    let started = WallClock::now();
    let secs = if ctx.quick { 40 } else { 120 };
    let mut s = Section::new(
        "e2e",
        "Spec §10 and §9 end to end",
        "Whole pipelines of real policies in the engine. E1: three independent pipelines (each \
         `Retry`, 3 attempts) sharing one `RatioBudget` (10% of first attempts per 10 s) \
         against an upstream that fails everything. E2 (docs/design/spec.md §9): one `Throttler` (defaults) \
         outside one `Bulkhead` of 5, 20 periodic clients offering one call each per 40 ms tick \
         for 3,000 ticks (60,000 calls, one 2-minute throttler window), an upstream that takes \
         200 ms (5 ticks) and answers every call it receives; then the same with an upstream \
         failing everything; then the published bug re-created (requests counted at admit). \
         E3: a `Throttler` shedding in front of a failing upstream, the observer's duration \
         histogram inspected. E4: six pipelines, each built so that one policy refuses, the \
         caller's answers (`Stop::Refused(rejection)`, `Next::GiveUp(reason)`) counted beside \
         the observer's rejection and retry-refusal hooks.",
    );

    // One shared budget caps retries across three pipelines.
    let budget: RatioBudget = RatioBudget::new(RatioBudgetConfig::DEFAULT).expect("default");
    let config = RetryConfig::new(3, Backoff::NONE).expect("valid");
    let stacks: Vec<_> = (0..3)
        .map(|_| Pipeline::new().retry(Retry::new(config, &budget)))
        .collect();
    let up = Flaky {
        p: 1.0,
        service: Duration::from_millis(1),
        failure: Verdict::Transient,
    };
    let w = workload(30, secs, 20);
    let tally = Tally::default();
    let shared = Engine::new(&stacks, up, w, &tally).run(ctx.master ^ 0xe2e, 0);
    let unbudgeted: Vec<_> = (0..3)
        .map(|_| Pipeline::new().retry(Retry::unbudgeted(config)))
        .collect();
    let tally2 = Tally::default();
    let free = Engine::new(&unbudgeted, up, w, &tally2).run(ctx.master ^ 0xe2e, 0);
    let ratio = |o: &crate::engine::Outcome| {
        (o.steady.sent - o.steady.calls) as f64 / o.steady.calls as f64
    };
    let mut t = Table::new(
        "shared-budget",
        "Three pipelines, upstream failing everything: retries ÷ first attempts (steady state)",
        &[
            "setup",
            "first attempts",
            "retries",
            "retries ÷ first attempts",
            "budget refusals",
        ],
    );
    for (name, o, tl) in [
        ("one shared 10% budget", &shared, &tally),
        ("no budget", &free, &tally2),
    ] {
        t.row(vec![
            name.into(),
            o.steady.calls.to_string(),
            (o.steady.sent - o.steady.calls).to_string(),
            fmt_num(ratio(o)),
            tl.gave_up("budget-exceeded").to_string(),
        ]);
    }
    s.tables.push(t);
    // Floor: 3 retries per 10 s window over all three pipelines together (the budget is one).
    let windows = (w.duration - w.warmup).as_secs_f64() / 10.0;
    let bound = 0.10 + 3.0 * windows / shared.steady.calls as f64 + 0.002;
    s.checks.push(Check::new(
        "E1",
        "shared budget: retries ÷ first attempts over 3 pipelines",
        fmt_num(ratio(&shared)),
        "≤ 10% (+ floor)".into(),
        format!("≤ {}", fmt_num(bound)),
        ratio(&shared) <= bound && ratio(&shared) >= 0.09,
    ));
    s.checks.push(Check::abs(
        "E1",
        "without a budget: retries ÷ first attempts",
        ratio(&free),
        2.0,
        0.01,
    ));

    inner_shedding(ctx, &mut s);

    // Shed requests never reach the duration histogram (§8).
    let stacks: Vec<_> = (0..10)
        .map(|_| {
            Pipeline::new().throttler(Throttler::new(ThrottlerConfig::DEFAULT).expect("default"))
        })
        .collect();
    let up = Flaky {
        p: 0.8,
        service: Duration::from_millis(2),
        failure: Verdict::Transient,
    };
    let tally = Tally::keeping_durations();
    let o = Engine::new(&stacks, up, workload(10, 60, 0), &tally).run(ctx.master ^ 0x8a, 0);
    let shed = tally.rejected(RejectReason::Throttled);
    let recorded = tally.durations.borrow().len() as u64;
    s.checks.push(Check::new(
        "E3",
        "throttled calls never in the duration histogram",
        format!("{shed} shed, {recorded} durations for {} sent", o.all.sent),
        "durations = settled calls only".into(),
        "exact".into(),
        shed > 0 && shed == o.all.refused && recorded == o.all.sent,
    ));
    six_reasons(ctx, &mut s);
    s.seconds = started.elapsed().as_secs_f64();
    s
}

/// Spec §9's measurement: a bulkhead of 5, 20 offered per tick, 60,000 requests.
const TICK: Duration = Duration::from_millis(40);
const PER_TICK: usize = 20;
const TICKS: u32 = 3_000;
const BULKHEAD: u32 = 5;
/// Not published. Five ticks: the bulkhead then frees one slot per tick on average, which is
/// what the published run's 2,802 accepts over 3,000 ticks imply.
const SERVICE: Duration = Duration::from_millis(200);
/// The published figure: calls shed by the throttler with the bug.
const PUBLISHED_BUG_SHED: f64 = 54_103.0;
/// The published figure: calls the upstream accepted with the bug.
const PUBLISHED_BUG_ACCEPTS: f64 = 2_802.0;

fn tick_workload() -> Workload {
    Workload {
        clients: PER_TICK,
        rate: 1.0 / TICK.as_secs_f64(),
        kind: ClientKind::Periodic,
        duration: TICK * TICKS,
        warmup: Duration::ZERO,
        net: Delay::Fixed(Duration::ZERO),
        idempotent: false,
        bucket: Duration::from_secs(1),
    }
}

/// The published bug, re-created outside the core for comparison: the throttler's request
/// was counted at admit, so a call that an inner policy then refused stayed in the window as
/// a request the upstream had not accepted. Here the wrapper's permit, dropped unsettled when
/// the bulkhead refuses, settles the real throttler permit as a failure at the admit instant.
/// (The fixed core drops the permit and counts nothing.)
struct CountAtAdmit<'t>(&'t Throttler);

struct CountAtAdmitPermit<'t> {
    inner: Option<ThrottlerPermit<'t, 20>>,
    at: Instant,
}

impl<'t> Policy for CountAtAdmit<'t> {
    type Permit<'a>
        = CountAtAdmitPermit<'a>
    where
        Self: 'a;

    fn admit<'a, R: Random + ?Sized, O: Observer + ?Sized>(
        &'a self,
        env: &mut Env<'_, R, O>,
    ) -> Result<CountAtAdmitPermit<'a>, Rejection> {
        let inner = self.0.admit(env)?;
        Ok(CountAtAdmitPermit {
            inner: Some(inner),
            at: env.now,
        })
    }
}

impl Permit for CountAtAdmitPermit<'_> {
    fn settle<R: Random + ?Sized, O: Observer + ?Sized>(
        mut self,
        verdict: &Verdict,
        env: &mut Env<'_, R, O>,
    ) {
        if let Some(p) = self.inner.take() {
            p.settle(verdict, env);
        }
    }
}

impl Drop for CountAtAdmitPermit<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.inner.take() {
            // The throttler draws nothing at settle; the generator only fills the slot.
            let mut rng = SeededRandom::new(0);
            let mut env = Env::new(self.at, &mut rng);
            p.settle(&Verdict::Transient, &mut env);
        }
    }
}

struct Shedding {
    outcome: Outcome,
    throttled: u64,
    bulkhead_full: u64,
    /// (seconds, the throttler's rejection probability), sampled once a second at admission.
    probability: Vec<(f64, f64)>,
}

fn shedding_run<T: Policy>(
    ctx: &Ctx,
    throttler_slot: T,
    throttler: &Throttler,
    up: Flaky,
    seed: u64,
) -> Shedding {
    let bulkhead = Bulkhead::new(BulkheadConfig::new(BULKHEAD).expect("valid"));
    let stacks = [Pipeline::new()
        .throttler(throttler_slot)
        .bulkhead(&bulkhead)];
    let tally = Tally::default();
    let samples = RefCell::new(Vec::new());
    let next = Cell::new(0.0f64);
    let watch = |now: Instant, _in_flight: u64| {
        let t = now.since_origin().as_secs_f64();
        if t >= next.get() {
            let p = throttler.rejection_probability(now).as_f64();
            samples.borrow_mut().push((t, p));
            next.set(t.floor() + 1.0);
        }
    };
    let outcome = Engine::new(&stacks, up, tick_workload(), &tally)
        .watch(&watch)
        .run(ctx.master ^ 0x5_9, seed);
    Shedding {
        throttled: tally.rejected(RejectReason::Throttled),
        bulkhead_full: tally.rejected(RejectReason::BulkheadFull),
        outcome,
        probability: samples.into_inner(),
    }
}

/// E2: the inner-shedding regression, both directions, and the bug it guards against.
fn inner_shedding(ctx: &Ctx, s: &mut Section) {
    let healthy = Flaky {
        p: 0.0,
        service: SERVICE,
        failure: Verdict::Transient,
    };
    let failing = Flaky { p: 1.0, ..healthy };
    let new = || Throttler::new(ThrottlerConfig::DEFAULT).expect("default");
    let (t1, t2, t3) = (new(), new(), new());
    let fixed = shedding_run(ctx, &t1, &t1, healthy, 0);
    let bug = shedding_run(ctx, CountAtAdmit(&t2), &t2, healthy, 0);
    let down = shedding_run(ctx, &t3, &t3, failing, 0);
    let offered = (PER_TICK as u64) * u64::from(TICKS);

    let mut t = Table::new(
        "inner-shedding",
        "Throttler outside a bulkhead of 5, 20 offered per tick, 3,000 ticks",
        &[
            "throttler",
            "upstream",
            "offered",
            "throttled",
            "bulkhead-full",
            "sent upstream",
            "accepted",
            "published",
        ],
    );
    for (name, upstream, r, published) in [
        (
            "resilix (counts at settle)",
            "answers all",
            &fixed,
            "0 (the fix)",
        ),
        (
            "bug re-created (counts at admit)",
            "answers all",
            &bug,
            "54,103 throttled, 2,802 accepted",
        ),
        (
            "resilix (counts at settle)",
            "fails all",
            &down,
            "still throttled",
        ),
    ] {
        let o = &r.outcome.all;
        t.row(vec![
            name.into(),
            upstream.into(),
            o.calls.to_string(),
            r.throttled.to_string(),
            r.bulkhead_full.to_string(),
            o.sent.to_string(),
            o.accepted.to_string(),
            published.into(),
        ]);
    }
    s.tables.push(t);

    // With an upstream that accepts every call it receives, each settled request is also an
    // accept, so requests − 2 × accepts < 0 and the probability is exactly zero: "near 0"
    // would hide a regression, so the tolerance is none.
    s.checks.push(Check::new(
        "E2",
        "inner shedding: throttled, bulkhead of 5, upstream answering all",
        format!(
            "{} of {} ({} bulkhead-full)",
            fixed.throttled, fixed.outcome.all.calls, fixed.bulkhead_full
        ),
        "0 (54,103 with the bug)".into(),
        "exactly 0".into(),
        fixed.throttled == 0 && fixed.outcome.all.calls == offered && fixed.bulkhead_full > 0,
    ));
    // The bug re-created in the same setup must reproduce the published failure: this is what
    // shows the setup would catch a regression.
    s.checks.push(Check::rel(
        "E2",
        "same setup, bug re-created (requests counted at admit): throttled",
        bug.throttled as f64,
        PUBLISHED_BUG_SHED,
        0.05,
    ));
    s.checks.push(Check::rel(
        "E2",
        "same setup, bug re-created: accepted by the upstream",
        bug.outcome.all.accepted as f64,
        PUBLISHED_BUG_ACCEPTS,
        0.05,
    ));
    // A failing upstream behind the same bulkhead: requests without accepts, so P goes to the
    // 0.9 cap within the first ten calls (the low-traffic floor) and stays there.
    let down_shed = down.throttled as f64 / offered as f64;
    s.checks.push(Check::abs(
        "E2",
        "failing upstream behind the same bulkhead: throttled ÷ offered",
        down_shed,
        0.9,
        0.01,
    ));

    let series = |name: &str, r: &Shedding, dashed| Series {
        name: name.into(),
        points: r.probability.clone(),
        dashed,
    };
    s.charts.push((
        "inner-shedding".into(),
        Chart {
            title: "Throttler outside a bulkhead of 5: rejection probability".into(),
            x_label: "time (s); 25 ticks of 20 calls a second".into(),
            y_label: "throttler rejection probability".into(),
            series: vec![
                series("resilix, upstream answers all", &fixed, false),
                series("bug re-created, upstream answers all", &bug, true),
                series("resilix, upstream fails all", &down, false),
            ],
            log_y: false,
        },
    ));
    s.notes.push(format!(
        "Inner shedding (E2): the published run's service time is not given. We chose {} ms \
         (5 ticks) because the published 2,802 accepts in 3,000 ticks imply a bulkhead of 5 \
         freeing about one slot per tick; with it the re-created bug lands within a few tenths \
         of a percent of both published figures, which is a fit of one free parameter, not an \
         independent prediction. The bug is re-created in the simulator (`CountAtAdmit` in \
         exp/e2e.rs), not in the core: it settles the real throttler's permit as a failure when \
         an inner policy refuses the call. The fixed throttler's tolerance is exactly zero: \
         with an upstream that accepts whatever it receives every request in the window is an \
         accept, so P = max(0, (n − 2n)/(n + 1)) = 0 and no draw is even made.",
        SERVICE.as_millis(),
    ));
}

/// One scenario of E4: what the caller was told, and what the observer heard.
struct Reasons {
    reason: RejectReason,
    scenario: &'static str,
    /// Caller's view: refusal codes and give-up keys, with counts.
    caller: Vec<(String, u64)>,
    /// The count of the intended reason as the caller saw it, and as the observer heard it.
    intended_caller: u64,
    intended_hook: u64,
    /// Refusals of any other reason (the caller's view).
    others: u64,
    /// The Display text the caller can show for the intended reason.
    text: String,
}

fn reasons_run<S: Stack, U: Upstream>(
    ctx: &Ctx,
    scenario: &'static str,
    intended: RejectReason,
    stacks: &[S],
    up: U,
    w: Workload,
) -> Reasons {
    let tally = Tally::default();
    let o = Engine::new(stacks, up, w, &tally).run(ctx.master ^ 0x6e, 0);
    let mut caller: Vec<(String, u64)> = o
        .refused_by
        .iter()
        .map(|(k, v)| (format!("Refused({k})"), *v))
        .collect();
    caller.extend(o.gave_up.iter().map(|(k, v)| (format!("GiveUp({k})"), *v)));
    let (intended_caller, intended_hook, others, text) = if intended == RejectReason::BudgetExceeded
    {
        let key = give_up_key(&GiveUpReason::BudgetExceeded);
        (
            o.gave_up.get(key.as_str()).copied().unwrap_or(0),
            tally.gave_up(&key),
            o.refused_by.values().sum(),
            GiveUpReason::BudgetExceeded.to_string(),
        )
    } else {
        let code = intended.code();
        (
            o.refused_by.get(code).copied().unwrap_or(0),
            tally.rejected(intended),
            o.refused_by
                .iter()
                .filter(|(k, _)| **k != code)
                .map(|(_, v)| v)
                .sum(),
            intended.to_string(),
        )
    };
    Reasons {
        reason: intended,
        scenario,
        caller,
        intended_caller,
        intended_hook,
        others,
        text,
    }
}

fn open_workload(rate: f64, secs: u64) -> Workload {
    Workload {
        clients: 10,
        rate: rate / 10.0,
        kind: ClientKind::Open,
        duration: Duration::from_secs(secs),
        warmup: Duration::ZERO,
        net: Delay::Fixed(Duration::from_millis(1)),
        idempotent: false,
        bucket: Duration::ZERO,
    }
}

/// E4: each of the six reasons from a pipeline of real policies, as the caller sees it.
fn six_reasons(ctx: &Ctx, s: &mut Section) {
    let secs = if ctx.quick { 30 } else { 60 };
    let up = |p: f64, ms: u64| Flaky {
        p,
        service: Duration::from_millis(ms),
        failure: Verdict::Transient,
    };
    let w = open_workload(100.0, secs);
    let mut rows = Vec::new();

    let breaker: Breaker = Breaker::new(BreakerConfig::DEFAULT).expect("default");
    rows.push(reasons_run(
        ctx,
        "breaker, upstream failing everything",
        RejectReason::CircuitOpen,
        &[Pipeline::new().breaker(&breaker)],
        up(1.0, 5),
        w,
    ));
    let limiter = Limiter::new(LimiterConfig::gradient2()).expect("default");
    rows.push(reasons_run(
        ctx,
        "adaptive limiter (Gradient2, limit ≥ 20), 100/s × 500 ms",
        RejectReason::LimiterFull,
        &[Pipeline::new().limiter(&limiter)],
        up(0.0, 500),
        w,
    ));
    let throttler: Throttler = Throttler::new(ThrottlerConfig::DEFAULT).expect("default");
    rows.push(reasons_run(
        ctx,
        "throttler, upstream failing everything",
        RejectReason::Throttled,
        &[Pipeline::new().throttler(&throttler)],
        up(1.0, 5),
        w,
    ));
    let bulkhead = Bulkhead::new(BulkheadConfig::new(5).expect("valid"));
    rows.push(reasons_run(
        ctx,
        "bulkhead of 5, 100/s × 200 ms",
        RejectReason::BulkheadFull,
        &[Pipeline::new().bulkhead(&bulkhead)],
        up(0.0, 200),
        w,
    ));
    let rate =
        RateLimiter::new(RateLimitConfig::new(Rate::per_second(50)).with_burst(5)).expect("valid");
    rows.push(reasons_run(
        ctx,
        "rate limiter 50/s, offered 100/s",
        RejectReason::RateLimited,
        &[Pipeline::new().rate_limit(&rate)],
        up(0.0, 5),
        w,
    ));
    let budget: RatioBudget = RatioBudget::new(RatioBudgetConfig::DEFAULT).expect("default");
    let retry = Retry::new(RetryConfig::new(3, Backoff::NONE).expect("valid"), &budget);
    rows.push(reasons_run(
        ctx,
        "retry (3 attempts) + 10% budget, upstream failing everything",
        RejectReason::BudgetExceeded,
        &[Pipeline::new().retry(retry)],
        up(1.0, 5),
        w,
    ));

    let mut t = Table::new(
        "six-reasons",
        "Six pipelines, one refusing policy each: what the caller was told",
        &[
            "reason",
            "scenario",
            "caller: returned values",
            "hook count",
            "other refusals",
        ],
    );
    for r in &rows {
        let told: Vec<String> = r.caller.iter().map(|(k, v)| format!("{k} ×{v}")).collect();
        t.row(vec![
            r.reason.code().into(),
            r.scenario.into(),
            told.join(", "),
            r.intended_hook.to_string(),
            r.others.to_string(),
        ]);
    }
    s.tables.push(t);
    for r in &rows {
        s.checks.push(Check::new(
            "E4",
            &format!("{}: produced; caller's count = the hook's", r.reason.code()),
            format!("caller {} / hook {}", r.intended_caller, r.intended_hook),
            "produced, distinguishable".into(),
            "> 0, equal, no other refusal".into(),
            r.intended_caller > 0 && r.intended_caller == r.intended_hook && r.others == 0,
        ));
    }
    let mut texts: Vec<&str> = rows.iter().map(|r| r.text.as_str()).collect();
    texts.sort_unstable();
    texts.dedup();
    let mut reasons: Vec<RejectReason> = rows.iter().map(|r| r.reason).collect();
    reasons.sort_unstable();
    reasons.dedup();
    let budget_row = &rows[5];
    let exhausted = budget_row
        .caller
        .iter()
        .find(|(k, _)| k.starts_with("GiveUp(attempts-exhausted"))
        .map_or(0, |(_, v)| *v);
    s.checks.push(Check::new(
        "E4",
        "six reasons: distinct texts; budget refusal ≠ attempts exhausted",
        format!(
            "{} reasons, {} texts; {} budget-exceeded beside {exhausted} attempts-exhausted",
            reasons.len(),
            texts.len(),
            budget_row.intended_caller
        ),
        "six distinguishable (docs/design/spec.md §7, §10)".into(),
        "6, both > 0".into(),
        reasons.len() == 6 && texts.len() == 6 && budget_row.intended_caller > 0 && exhausted > 0,
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Behind a full bulkhead, the re-created bug counts the refused call as a request and the
    /// core's throttler does not: the difference the E2 check rests on.
    #[test]
    fn only_the_re_created_bug_counts_an_inner_refusal() {
        let fixed: Throttler = Throttler::new(ThrottlerConfig::DEFAULT).unwrap();
        let buggy: Throttler = Throttler::new(ThrottlerConfig::DEFAULT).unwrap();
        let bulkhead = Bulkhead::new(BulkheadConfig::new(1).unwrap());
        let a = Pipeline::new().throttler(&fixed).bulkhead(&bulkhead);
        let b = Pipeline::new()
            .throttler(CountAtAdmit(&buggy))
            .bulkhead(&bulkhead);
        let mut rng = SeededRandom::new(1);
        let mut env = Env::new(Instant::from_secs(1), &mut rng);
        let held = a.admit(&mut env, None).unwrap();
        assert!(a.admit(&mut env, None).is_err());
        assert!(b.admit(&mut env, None).is_err());
        assert_eq!(fixed.counts(env.now), (0, 0));
        assert_eq!(buggy.counts(env.now), (1, 0));
        held.settle(&Verdict::Success, &mut env);
        assert_eq!(fixed.counts(env.now), (1, 1));
        // Admitted and settled through the wrapper: counted once, like the real throttler.
        let through = b.admit(&mut env, None).unwrap();
        through.settle(&Verdict::Success, &mut env);
        assert_eq!(buggy.counts(env.now), (2, 1));
    }
}
