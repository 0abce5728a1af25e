//! The script in a real Redis against a plain wide-time GCRA in Rust: the same calls at the
//! same instants (passed to the script explicitly, since Redis's clock cannot be moved), over
//! random timelines of log-uniform gaps from 1 ns to ten years. Decisions, waits and remaining
//! cells must be identical.

mod common;

use std::time::Duration;

use proptest::prelude::*;
use redis::aio::ConnectionManager;
use resilix::random::{Random, SeededRandom};
use resilix::rate_limit::{Rate, RateLimitConfig};
use resilix::time::Instant;
use resilix_redis::script::{GcraParams, GcraScript, Reply, ServerClock};
use resilix_reference::timeline::{Gaps, Timeline};

/// GCRA as `resilix::rate_limit` documents it, in u128 nanoseconds: no seconds split, no
/// doubles, no TTL.
struct Model {
    t: u128,
    burst: u128,
    early: u128,
    tat: Option<u128>,
}

#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    admitted: bool,
    wait: u128,
    remaining: u128,
}

impl Model {
    fn new(p: &GcraParams) -> Model {
        Model {
            t: u128::from(p.emission_ns()),
            burst: u128::from(p.burst()),
            early: u128::from(p.early_ns()),
            tat: None,
        }
    }

    fn decide(&mut self, now: u128, cells: u128) -> Outcome {
        let span = self.t * self.burst;
        // Ahead by up to span + early: debt. Behind, or further ahead (a clock that stepped
        // back): an idle bucket.
        let debt = match self.tat {
            Some(tat) if tat > now && tat - now <= span + self.early => tat - now,
            _ => 0,
        };
        let after = debt + cells * self.t;
        if after <= span {
            self.tat = Some(now + after);
            Outcome {
                admitted: true,
                wait: 0,
                remaining: (span - after) / self.t,
            }
        } else {
            Outcome {
                admitted: false,
                wait: after - span,
                remaining: span.saturating_sub(debt) / self.t,
            }
        }
    }
}

fn outcome(r: &Reply) -> Outcome {
    Outcome {
        admitted: r.admitted,
        wait: r.wait.as_nanos(),
        remaining: u128::from(r.remaining),
    }
}

async fn script_at(
    conn: &mut ConnectionManager,
    key: &str,
    p: &GcraParams,
    cells: u32,
    now: Instant,
) -> Reply {
    let mut loaded = false;
    GcraScript::new()
        .eval(
            conn,
            key,
            p,
            cells,
            ServerClock::At(now.since_origin()),
            &mut loaded,
        )
        .await
        .expect("the script runs")
}

/// Drives one config over one timeline; answers the number of admissions and refusals.
async fn run(
    conn: &mut ConnectionManager,
    key: &str,
    config: RateLimitConfig,
    gaps: Gaps,
    seed: u64,
    steps: usize,
) -> (u32, u32) {
    let p = GcraParams::new(&config).unwrap();
    let mut model = Model::new(&p);
    let mut rng = SeededRandom::new(seed);
    // Somewhere in the 2020s on the Unix timeline, as Redis's TIME would be.
    let start = Instant::from_secs(1_600_000_000 + rng.below(400_000_000));
    let mut timeline = Timeline::new(start, gaps);
    let (mut admitted, mut refused) = (0, 0);
    for step in 0..steps {
        let now = if step == 0 {
            timeline.now()
        } else {
            timeline.advance(&mut rng)
        };
        let cells = 1 + rng.below(u64::from(p.burst().min(3))) as u32;
        let got = outcome(&script_at(conn, key, &p, cells, now).await);
        let want = model.decide(u128::from(now.as_nanos()), u128::from(cells));
        assert_eq!(
            got,
            want,
            "step {step} at {now:?}, {cells} cells, {config:?} (T = {} ns, seed {seed})",
            p.emission_ns()
        );
        if want.admitted {
            admitted += 1;
        } else {
            refused += 1;
        }
    }
    (admitted, refused)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Periods from 1 µs to a day, log-uniform; counts and bursts that keep the span legal.
fn configs() -> impl Strategy<Value = RateLimitConfig> {
    (0u32..37, 0u64..1_000, 1u32..=10_000, 1u32..=2_000).prop_filter_map(
        "span within MAX_SPAN",
        |(octave, frac, count, burst)| {
            let base = 1_000u64 << octave; // 1 µs .. 2^36 µs (19 hours)
            let period = Duration::from_nanos(base + base * frac / 1_000);
            let c = RateLimitConfig::new(Rate::new(count, period)).with_burst(burst);
            GcraParams::new(&c).ok().map(|_| c)
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn script_decides_as_wide_time_gcra(config in configs(), seed in any::<u64>(), regime in 0u8..3) {
        let Some(url) = common::redis_url("script_decides_as_wide_time_gcra") else { return Ok(()); };
        let p = GcraParams::new(&config).unwrap();
        let gaps = match regime {
            // 1 ns .. 10 years.
            0 => Gaps::LONG,
            // Up to 2 T: arrivals faster than the rate, so the bucket empties and refuses.
            1 => Gaps::between(Duration::from_nanos(1), Duration::from_nanos(2 * p.emission_ns())),
            // Up to four spans: debt, refills and idles mixed.
            _ => Gaps::between(Duration::from_nanos(1), Duration::from_nanos(4 * p.span_ns())),
        };
        runtime().block_on(async {
            let mut conn = common::connect(&url).await;
            let key = format!("{}{{bucket}}", common::prefix("differential"));
            run(&mut conn, &key, config, gaps, seed, 250).await;
        });
    }
}

/// Fixed configs on both kinds of timeline, with a check that each run saw both outcomes, so
/// the comparison is never vacuous.
#[test]
fn both_outcomes_on_every_scale() {
    let Some(url) = common::redis_url("both_outcomes_on_every_scale") else {
        return;
    };
    let configs = [
        RateLimitConfig::new(Rate::per_second(3)).with_burst(2),
        RateLimitConfig::new(Rate::per_second(100_000)).with_burst(50),
        RateLimitConfig::new(Rate::new(7, Duration::from_nanos(10_007))).with_burst(1),
        RateLimitConfig::new(Rate::per_hour(1_000)).with_burst(1_000),
        // The longest span the script takes: 2^51 ns.
        RateLimitConfig::new(Rate::one_every(Duration::from_nanos(1 << 41))).with_burst(1 << 10),
    ];
    runtime().block_on(async {
        let mut conn = common::connect(&url).await;
        for (i, config) in configs.into_iter().enumerate() {
            let p = GcraParams::new(&config).unwrap();
            let (mut admitted, mut refused) = (0, 0);
            for (j, gaps) in [
                Gaps::between(
                    Duration::from_nanos(1),
                    Duration::from_nanos(2 * p.emission_ns()),
                ),
                Gaps::between(
                    Duration::from_nanos(1),
                    Duration::from_nanos(3 * p.span_ns()),
                ),
                Gaps::LONG,
            ]
            .into_iter()
            .enumerate()
            {
                let key = format!("{}{{b{i}:{j}}}", common::prefix("both_outcomes"));
                let (a, r) = run(&mut conn, &key, config, gaps, 1_000 + i as u64, 600).await;
                admitted += a;
                refused += r;
            }
            assert!(
                admitted > 50 && refused > 20,
                "{config:?}: {admitted} admitted, {refused} refused"
            );
        }
    });
}

/// The first decision after an idle gap, swept around the edges the split arithmetic has:
/// whole seconds, the span, the span + early boundary, and TATs 2^52 ns and years away.
#[test]
fn first_decision_after_an_idle_gap() {
    let Some(url) = common::redis_url("first_decision_after_an_idle_gap") else {
        return;
    };
    let configs = [
        RateLimitConfig::new(Rate::per_second(3)).with_burst(2),
        RateLimitConfig::new(Rate::one_every(Duration::from_nanos(999_999_999))).with_burst(5),
        RateLimitConfig::new(Rate::one_every(Duration::from_nanos(1 << 41))).with_burst(1 << 10),
    ];
    runtime().block_on(async {
        let mut conn = common::connect(&url).await;
        let mut cases = 0;
        for (i, config) in configs.into_iter().enumerate() {
            let p = GcraParams::new(&config).unwrap();
            let span = p.span_ns();
            let early = p.early_ns();
            let mut gaps: Vec<i128> = Vec::new();
            for edge in [
                0u64,
                1_000_000_000,
                span,
                span + early,
                1 << 52,
                10 * 31_557_600_000_000_000,
            ] {
                for d in [-2i128, -1, 0, 1, 2, 999_999_999, 1_000_000_000] {
                    gaps.push(i128::from(edge) + d);
                }
            }
            for (k, &gap) in gaps.iter().enumerate() {
                let Ok(gap) = u64::try_from(gap) else {
                    continue;
                };
                let start = Instant::from_nanos(1_700_000_000_999_999_999);
                // Forward (an idle gap) and back (a failover to a server whose clock is
                // behind), each on a fresh bucket emptied at `start`.
                let later = start.saturating_add(Duration::from_nanos(gap));
                let earlier = start.saturating_sub(Duration::from_nanos(gap));
                for (dir, now) in [later, earlier].into_iter().enumerate() {
                    let key = format!("{}{{s{i}:{k}:{dir}}}", common::prefix("idle"));
                    let mut model = Model::new(&p);
                    for _ in 0..p.burst().min(8) {
                        let got = outcome(&script_at(&mut conn, &key, &p, 1, start).await);
                        assert_eq!(got, model.decide(u128::from(start.as_nanos()), 1));
                    }
                    let got = outcome(&script_at(&mut conn, &key, &p, 1, now).await);
                    let want = model.decide(u128::from(now.as_nanos()), 1);
                    assert_eq!(got, want, "{config:?}: idle {gap} ns to {now:?}");
                    cases += 1;
                }
            }
        }
        assert!(cases > 200, "{cases}");
    });
}

/// In production mode (Redis's clock) the key's TTL covers the time until its TAT.
#[test]
fn ttl_covers_the_time_until_the_tat() {
    let Some(url) = common::redis_url("ttl_covers_the_time_until_the_tat") else {
        return;
    };
    runtime().block_on(async {
        let mut conn = common::connect(&url).await;
        let config = RateLimitConfig::new(Rate::per_second(2)).with_burst(4);
        let p = GcraParams::new(&config).unwrap();
        let key = format!("{}{{ttl}}", common::prefix("ttl"));
        let script = GcraScript::new();
        let mut last = None;
        for _ in 0..4 {
            let mut loaded = false;
            let r = script
                .eval(&mut conn, &key, &p, 1, ServerClock::Redis, &mut loaded)
                .await
                .unwrap();
            assert!(r.admitted);
            last = Some(r);
        }
        let r = last.unwrap();
        // Four cells within a few milliseconds of Redis's clock: the TAT is about 4 T ahead.
        assert!(r.reset_after <= Duration::from_nanos(4 * p.emission_ns()));
        assert!(r.reset_after > Duration::from_nanos(3 * p.emission_ns()));
        let (pttl, t): (i64, (u64, u64)) = redis::pipe()
            .cmd("PTTL")
            .arg(&key)
            .cmd("TIME")
            .query_async(&mut conn)
            .await
            .unwrap();
        let now = Duration::from_secs(t.0) + Duration::from_micros(t.1);
        let until_tat = (r.server_now + r.reset_after).saturating_sub(now);
        assert!(pttl > 0, "the key expires");
        assert!(
            Duration::from_millis(pttl as u64) >= until_tat,
            "TTL {pttl} ms < {until_tat:?} until the TAT"
        );
        assert!(
            Duration::from_millis(pttl as u64) <= r.reset_after + Duration::from_millis(2),
            "and no longer than needed: {pttl} ms"
        );
        // Refused calls do not write.
        let mut loaded = false;
        let refused = script
            .eval(&mut conn, &key, &p, 1, ServerClock::Redis, &mut loaded)
            .await
            .unwrap();
        assert!(!refused.admitted);
        assert!(
            refused.wait > Duration::ZERO && refused.wait <= Duration::from_nanos(p.emission_ns())
        );
    });
}
