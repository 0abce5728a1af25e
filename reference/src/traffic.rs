//! The long-timeline experiment's traffic: a seeded, simulated week (or day) of the calls a real
//! service makes to one upstream.
//!
//! The differential runs of [`crate::timeline`] draw every gap log-uniformly, which finds
//! aliasing anywhere but looks like no real service. This is the other half: the timeline a
//! service actually lives on, where the gaps that matter come from the calendar.
//!
//! * **Quiet nights.** From 00:00 to 05:00 there is no traffic at all but a few stray calls (a
//!   cron job, one user awake), so the upstream goes minutes to hours without a call; dawn
//!   (05:00–07:00) and late evening (22:00–24:00) thin out to a call every minute or so. An
//!   idle day (the week's Saturday) has no call at all, so the week holds a gap of more than a
//!   day: longer than the 19.55 h circle of a 10/s rate limiter's tick word (issue 13), and
//!   than every circle of 4 ns to 1 µs ticks (17.2 s to 71.6 min).
//! * **Daytime load** follows a diurnal curve ([`DIURNAL`]: a morning ramp, a lunchtime dip,
//!   the afternoon peak), as a Poisson process whose rate is constant over each second.
//! * **Bursts**: a few per day between 08:00 and 20:00, 20 s to 2 min at 10–40× the current
//!   rate (a flash crowd, a batch job); the upstream is slower during them. Some arrivals are
//!   fan-outs: 2–8 calls at the very same instant.
//! * **An outage**: a stretch where the upstream is down — each call fails fast
//!   (`Transient`), hangs until the client's timeout (`Timeout`) or is answered 503 with a
//!   `Retry-After` of 1 s to 2 min (`Overload`) — then a recovery where the share of failures
//!   falls linearly to none.
//! * **Healthy hours** are not spotless: 1 call in 10,000 times out (issue 13's rare timeout),
//!   0.1% fail transiently, 0.05% are shed by the upstream, 1% are answered 4xx, 0.2% are
//!   cancelled by their caller, and 1% of successes are slow.
//!
//! Everything is drawn from the scenario's seed alone: the same seed gives the same calls, to
//! the nanosecond, on a given platform (the exponential draws use `f64::ln`, whose last bit
//! may differ between platforms' math libraries, moving a rare arrival by a nanosecond). [`Scenario::calls`] generates them lazily, in arrival order, so a week (about
//! a million calls) never sits in memory; [`crate::twin::drive_scenario`] runs any
//! [`crate::Twin`] on them.
//!
//! ```
//! use resilix_reference::traffic::{Phase, Scenario};
//!
//! let day = Scenario::day(7);
//! let hours = day.hourly();
//! assert_eq!(hours.len(), 24);
//! assert!(hours[2].calls < 10, "the night is idle but for a few strays");
//! assert!(hours[14].calls > 10_000, "the afternoon is busy");
//! assert!(day.calls().any(|c| c.phase == Phase::Outage));
//! ```

use core::time::Duration;

use resilix::random::{Random, SeededRandom};
use resilix::time::Instant;
use resilix::verdict::Verdict;

const SECOND: u64 = 1_000_000_000;
const HOUR: u64 = 3_600 * SECOND;
const DAY: u64 = 24 * HOUR;

/// The diurnal curve: the arrival rate at the start of each hour, as a share of the peak; the
/// rate moves linearly to the next hour's value (hour 24 is 0). Zero from 00:00 to 05:00: the
/// night has only its stray calls.
pub const DIURNAL: [f64; 24] = [
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, // night
    0.005, 0.05, 0.3, 0.7, 0.9, 1.0, // morning
    0.8, 0.9, 1.0, 0.95, 0.85, 0.6, // lunch, afternoon
    0.4, 0.25, 0.15, 0.08, 0.02, 0.003, // evening
];

/// What kind of day a day of the week is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DayKind {
    /// The diurnal curve at full height, with every burst.
    Workday,
    /// The curve at [`Profile::quiet_share`] of its height, one burst (a weekend day).
    Quiet,
    /// No call at all, not even a stray (a business-only service on a Saturday).
    Idle,
}

/// Where and how long the upstream is down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outage {
    /// The day (0-based) it happens on.
    pub day: u32,
    /// Its start is drawn (in whole seconds) between these offsets into the day.
    pub earliest: Duration,
    /// See `earliest`.
    pub latest: Duration,
    /// How long every call fails.
    pub down: Duration,
    /// Then how long the share of failing calls takes to fall linearly from all to none.
    pub recovery: Duration,
}

/// The shape of a scenario. [`Profile::WEEK`] and [`Profile::DAY`] are the two the experiment
/// uses; every field is public so an experiment can scale them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Profile {
    /// How many days.
    pub days: u32,
    /// The kind of day `d` is `week[d % 7]`.
    pub week: [DayKind; 7],
    /// A workday's peak arrival rate, calls per second.
    pub peak_per_sec: f64,
    /// A quiet day's rate, as a share of a workday's.
    pub quiet_share: f64,
    /// How many stray calls a night (00:00–05:00) has, at least and at most (not on idle days).
    pub night_strays: (u32, u32),
    /// Bursts on a workday (a quiet day has one, an idle day none).
    pub bursts_per_day: u32,
    /// Out of 256 arrivals, how many are fan-outs of 2–8 calls at the same instant.
    pub fan_out_in_256: u8,
    /// The outage, if any.
    pub outage: Option<Outage>,
    /// The client's attempt timeout: how long a call that times out is held before its
    /// `Timeout` (and the longest any call lasts).
    pub timeout: Duration,
}

impl Profile {
    /// A week from Monday 00:00: five workdays (the outage on Wednesday afternoon), an idle
    /// Saturday, a quiet Sunday. About a million calls.
    pub const WEEK: Profile = Profile {
        days: 7,
        week: [
            DayKind::Workday,
            DayKind::Workday,
            DayKind::Workday,
            DayKind::Workday,
            DayKind::Workday,
            DayKind::Idle,
            DayKind::Quiet,
        ],
        peak_per_sec: 5.0,
        quiet_share: 0.3,
        night_strays: (3, 8),
        bursts_per_day: 3,
        fan_out_in_256: 4,
        outage: Some(Outage {
            day: 2,
            earliest: Duration::from_secs(10 * 3_600),
            latest: Duration::from_secs(16 * 3_600),
            down: Duration::from_secs(20 * 60),
            recovery: Duration::from_secs(5 * 60),
        }),
        timeout: Duration::from_secs(2),
    };

    /// The quick profile: one workday, with its night, bursts and an afternoon outage. About
    /// 200,000 calls.
    pub const DAY: Profile = Profile {
        days: 1,
        outage: Some(Outage {
            day: 0,
            earliest: Duration::from_secs(13 * 3_600),
            latest: Duration::from_secs(15 * 3_600),
            down: Duration::from_secs(15 * 60),
            recovery: Duration::from_secs(5 * 60),
        }),
        ..Profile::WEEK
    };
}

/// Which part of the scenario a call arrived in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    /// 00:00–05:00: a stray call.
    Night,
    /// Ordinary traffic on the diurnal curve.
    Day,
    /// During a burst.
    Burst,
    /// While the upstream is down: the call fails.
    Outage,
    /// While it recovers.
    Recovery,
}

/// One call: when it arrives, how long it lasts if admitted, and how it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Call {
    /// When it arrives.
    pub at: Instant,
    /// From arrival to its end, if it is admitted.
    pub duration: Duration,
    /// How it ends: the upstream's verdict, or `None` when its caller cancels it.
    pub verdict: Option<Verdict>,
    /// Where in the scenario it arrived.
    pub phase: Phase,
}

/// One hour's calls, from [`Scenario::hourly`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HourCount {
    /// Calls that arrived in the hour.
    pub calls: u64,
    /// Of them, those that end in a failure (`Transient`, `Timeout`, `Overload`).
    pub failing: u64,
    /// The longest stretch of the hour without an arrival (from the hour's start, between
    /// arrivals, to its end).
    pub longest_gap: Duration,
}

#[derive(Clone, Debug)]
struct Burst {
    start: u64,
    end: u64,
    factor: f64,
}

#[derive(Clone, Debug)]
struct DayPlan {
    kind: DayKind,
    /// Absolute offsets from the scenario's start, sorted.
    strays: Vec<u64>,
    bursts: Vec<Burst>,
}

/// A seeded scenario: a profile, its day plans (strays, bursts, the outage's place) drawn from
/// the seed, and a start instant.
#[derive(Clone, Debug)]
pub struct Scenario {
    profile: Profile,
    seed: u64,
    start: Instant,
    plans: Vec<DayPlan>,
    /// Offsets of the outage's start, the end of its down stretch, and the end of recovery.
    outage: Option<(u64, u64, u64)>,
}

/// Independent streams from one seed: the day plans, and the calls.
fn stream(seed: u64, purpose: u64) -> SeededRandom {
    SeededRandom::new(seed ^ purpose.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

fn uniform(rng: &mut SeededRandom, lo: u64, hi: u64) -> u64 {
    lo + rng.below(hi.saturating_sub(lo) + 1)
}

fn nanos(d: Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX)) as u64
}

/// An exponential draw with the given mean, in nanoseconds.
fn exponential(rng: &mut SeededRandom, mean_ns: f64) -> u64 {
    // 1 - unit() lies in (0, 1], so the logarithm is finite.
    (-(1.0 - rng.unit()).ln() * mean_ns) as u64
}

impl Scenario {
    /// The week ([`Profile::WEEK`]) drawn from `seed`, from instant zero.
    pub fn week(seed: u64) -> Scenario {
        Scenario::new(Profile::WEEK, seed)
    }

    /// The quick day ([`Profile::DAY`]) drawn from `seed`, from instant zero.
    pub fn day(seed: u64) -> Scenario {
        Scenario::new(Profile::DAY, seed)
    }

    /// `profile` drawn from `seed`, from instant zero (midnight of day 0).
    pub fn new(profile: Profile, seed: u64) -> Scenario {
        let mut rng = stream(seed, 1);
        let mut plans = Vec::with_capacity(profile.days as usize);
        for d in 0..u64::from(profile.days) {
            let kind = profile.week[(d % 7) as usize];
            let midnight = d * DAY;
            let mut strays = Vec::new();
            if kind != DayKind::Idle {
                let (lo, hi) = profile.night_strays;
                for _ in 0..uniform(&mut rng, u64::from(lo), u64::from(hi.max(lo))) {
                    strays.push(midnight + rng.below(5 * HOUR));
                }
                strays.sort_unstable();
            }
            let bursts_today = match kind {
                DayKind::Workday => profile.bursts_per_day,
                DayKind::Quiet => profile.bursts_per_day.min(1),
                DayKind::Idle => 0,
            };
            let mut bursts = Vec::new();
            for _ in 0..bursts_today {
                let start = midnight + uniform(&mut rng, 8 * 3_600, 20 * 3_600 - 120) * SECOND;
                let len = uniform(&mut rng, 20, 120) * SECOND;
                let factor = 10.0 + 30.0 * rng.unit();
                bursts.push(Burst {
                    start,
                    end: start + len,
                    factor,
                });
            }
            bursts.sort_by_key(|b| b.start);
            plans.push(DayPlan {
                kind,
                strays,
                bursts,
            });
        }
        let outage = profile.outage.filter(|o| o.day < profile.days).map(|o| {
            let (lo, hi) = (
                o.earliest.as_secs(),
                o.latest.as_secs().max(o.earliest.as_secs()),
            );
            let start = u64::from(o.day) * DAY + uniform(&mut rng, lo, hi) * SECOND;
            let down = start + nanos(o.down);
            (start, down, down + nanos(o.recovery))
        });
        Scenario {
            profile,
            seed,
            start: Instant::ZERO,
            plans,
            outage,
        }
    }

    /// The same scenario, shifted to begin at `start` (midnight of day 0 is then `start`): a
    /// service whose uptime is already long when the week begins.
    pub fn starting_at(mut self, start: Instant) -> Scenario {
        self.start = start;
        self
    }

    /// The profile.
    pub const fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The seed.
    pub const fn seed(&self) -> u64 {
        self.seed
    }

    /// Midnight of day 0.
    pub const fn start(&self) -> Instant {
        self.start
    }

    /// Midnight after the last day (calls admitted late may end a little after it).
    pub fn end(&self) -> Instant {
        self.at(u64::from(self.profile.days) * DAY)
    }

    /// The outage: when the upstream goes down, when it starts to recover, and when it has.
    pub fn outage(&self) -> Option<(Instant, Instant, Instant)> {
        self.outage
            .map(|(a, b, c)| (self.at(a), self.at(b), self.at(c)))
    }

    /// Every call, in arrival order (ties in generation order), drawn lazily.
    pub fn calls(&self) -> Calls<'_> {
        Calls {
            scenario: self,
            rng: stream(self.seed, 2),
            second: 0,
            buffer: Vec::new(),
            next: 0,
        }
    }

    /// Calls per hour (24 per day), with their failures and the hour's longest idle stretch.
    pub fn hourly(&self) -> Vec<HourCount> {
        let hours = self.profile.days as usize * 24;
        let mut out = vec![HourCount::default(); hours];
        let mut last = vec![0u64; hours];
        for c in self.calls() {
            let t = c.at.as_nanos() - self.start.as_nanos();
            let h = (t / HOUR) as usize;
            let Some(hour) = out.get_mut(h) else { continue };
            let since = if hour.calls == 0 {
                t - h as u64 * HOUR
            } else {
                t - last[h]
            };
            hour.longest_gap = hour.longest_gap.max(Duration::from_nanos(since));
            hour.calls += 1;
            if matches!(
                c.verdict,
                Some(Verdict::Transient | Verdict::Timeout | Verdict::Overload { .. })
            ) {
                hour.failing += 1;
            }
            last[h] = t;
        }
        for (h, hour) in out.iter_mut().enumerate() {
            let end = (h as u64 + 1) * HOUR;
            let from = if hour.calls == 0 {
                h as u64 * HOUR
            } else {
                last[h]
            };
            hour.longest_gap = hour.longest_gap.max(Duration::from_nanos(end - from));
        }
        out
    }

    fn at(&self, offset: u64) -> Instant {
        self.start.saturating_add(Duration::from_nanos(offset))
    }

    /// The rate (calls/s) at offset `t`, bursts included, and whether a burst is on.
    fn rate(&self, t: u64) -> (f64, bool) {
        let plan = &self.plans[(t / DAY) as usize];
        let share = match plan.kind {
            DayKind::Workday => 1.0,
            DayKind::Quiet => self.profile.quiet_share,
            DayKind::Idle => return (0.0, false),
        };
        let in_day = t % DAY;
        let h = (in_day / HOUR) as usize;
        let next = DIURNAL.get(h + 1).copied().unwrap_or(0.0);
        let f = (in_day % HOUR) as f64 / HOUR as f64;
        let base = self.profile.peak_per_sec * share * (DIURNAL[h] + (next - DIURNAL[h]) * f);
        match plan.bursts.iter().find(|b| b.start <= t && t < b.end) {
            Some(b) => (base * b.factor, true),
            None => (base, false),
        }
    }

    /// Where the outage stands at offset `t`: the share of calls that fail (1 while down).
    fn failing_share(&self, t: u64) -> Option<(f64, Phase)> {
        let (start, down, up) = self.outage?;
        if t < start || t >= up {
            None
        } else if t < down {
            Some((1.0, Phase::Outage))
        } else {
            Some((
                1.0 - (t - down) as f64 / (up - down).max(1) as f64,
                Phase::Recovery,
            ))
        }
    }

    /// The call arriving at offset `t` in `phase`: its duration and verdict.
    fn call(&self, rng: &mut SeededRandom, t: u64, phase: Phase) -> Call {
        let timeout = nanos(self.profile.timeout).max(1);
        let (phase, failing) = match self.failing_share(t) {
            Some((share, p)) => (p, rng.unit() < share),
            None => (phase, false),
        };
        let (duration, verdict) = if failing {
            match rng.below(10) {
                // Connection refused, reset: fails fast.
                0..=3 => (
                    uniform(rng, SECOND / 1_000, 5 * SECOND / 1_000),
                    Some(Verdict::Transient),
                ),
                // Hangs until the client gives up.
                4..=6 => (timeout, Some(Verdict::Timeout)),
                // 503 with Retry-After.
                _ => {
                    let secs = [1, 5, 30, 120][rng.below(4) as usize];
                    (
                        uniform(rng, SECOND / 1_000, 10 * SECOND / 1_000),
                        Some(Verdict::Overload {
                            retry_after: Some(Duration::from_secs(secs)),
                        }),
                    )
                }
            }
        } else {
            // Per million healthy calls.
            let x = rng.below(1_000_000);
            let fast = |rng: &mut SeededRandom| uniform(rng, SECOND / 1_000, 5 * SECOND / 1_000);
            if x < 100 {
                (timeout, Some(Verdict::Timeout))
            } else if x < 1_100 {
                (fast(rng), Some(Verdict::Transient))
            } else if x < 1_600 {
                let retry_after = (x < 1_350).then_some(Duration::from_secs(1));
                (fast(rng), Some(Verdict::Overload { retry_after }))
            } else if x < 11_600 {
                (fast(rng), Some(Verdict::Answered))
            } else if x < 13_600 {
                (1 + rng.below(timeout), None)
            } else {
                // 2 ms + Exp(18 ms), four times slower in a burst; 1% slow (Exp(300 ms)).
                let slow = if phase == Phase::Burst { 4.0 } else { 1.0 };
                let mean = if rng.below(100) == 0 {
                    300e6
                } else {
                    18e6 * slow
                };
                let d = 2 * SECOND / 1_000 + exponential(rng, mean);
                if d >= timeout {
                    (timeout, Some(Verdict::Timeout))
                } else {
                    (d, Some(Verdict::Success))
                }
            }
        };
        Call {
            at: self.at(t),
            duration: Duration::from_nanos(duration.max(1)),
            verdict,
            phase,
        }
    }

    /// Fills `buffer` with the calls arriving in second `s` (offsets), sorted.
    fn second(&self, rng: &mut SeededRandom, s: u64, buffer: &mut Vec<Call>) {
        let from = s * SECOND;
        let plan = &self.plans[(from / DAY) as usize];
        // Arrival offsets and phases first, then one call per arrival (fan-outs: several).
        let mut arrivals: Vec<(u64, Phase)> = Vec::new();
        let first = plan.strays.partition_point(|&x| x < from);
        for &x in plan.strays[first..]
            .iter()
            .take_while(|&&x| x < from + SECOND)
        {
            arrivals.push((x, Phase::Night));
        }
        let (rate, burst) = self.rate(from);
        if rate > 0.0 {
            let phase = if burst { Phase::Burst } else { Phase::Day };
            let mean = SECOND as f64 / rate;
            // Poisson within the second: the rate is constant over it, and the process is
            // memoryless, so restarting at each second's start is exact.
            let mut t = from + exponential(rng, mean);
            while t < from + SECOND {
                arrivals.push((t, phase));
                t += exponential(rng, mean).max(1);
            }
        }
        arrivals.sort_unstable_by_key(|a| a.0);
        for (t, phase) in arrivals {
            let n = if rng.below(256) < u64::from(self.profile.fan_out_in_256) {
                uniform(rng, 2, 8)
            } else {
                1
            };
            for _ in 0..n {
                buffer.push(self.call(rng, t, phase));
            }
        }
    }
}

/// The calls of a [`Scenario`], in arrival order.
#[derive(Clone, Debug)]
pub struct Calls<'s> {
    scenario: &'s Scenario,
    rng: SeededRandom,
    /// The next second to generate.
    second: u64,
    buffer: Vec<Call>,
    next: usize,
}

impl Iterator for Calls<'_> {
    type Item = Call;

    fn next(&mut self) -> Option<Call> {
        let seconds = u64::from(self.scenario.profile.days) * (DAY / SECOND);
        while self.next == self.buffer.len() {
            if self.second >= seconds {
                return None;
            }
            self.buffer.clear();
            self.next = 0;
            let plan = &self.scenario.plans[(self.second * SECOND / DAY) as usize];
            if plan.kind == DayKind::Idle {
                // Nothing all day: skip it whole.
                self.second = (self.second / (DAY / SECOND) + 1) * (DAY / SECOND);
                continue;
            }
            self.scenario
                .second(&mut self.rng, self.second, &mut self.buffer);
            self.second += 1;
        }
        let c = self.buffer[self.next];
        self.next += 1;
        Some(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offset(s: &Scenario, c: &Call) -> u64 {
        c.at.as_nanos() - s.start().as_nanos()
    }

    #[test]
    fn the_same_seed_gives_the_same_calls_and_another_seed_others() {
        let a: Vec<Call> = Scenario::day(11).calls().collect();
        let b: Vec<Call> = Scenario::day(11).calls().collect();
        let c: Vec<Call> = Scenario::day(12).calls().collect();
        assert_eq!(a, b);
        assert_ne!(a.len(), 0);
        assert_ne!(a, c);
        assert_ne!(Scenario::day(11).outage(), Scenario::day(12).outage());
    }

    #[test]
    fn calls_arrive_in_order_within_the_scenario() {
        let s = Scenario::day(3).starting_at(Instant::from_secs(40 * 86_400));
        let mut last = s.start();
        let mut n = 0u64;
        for c in s.calls() {
            assert!(c.at >= last && c.at < s.end(), "{c:?}");
            assert!(c.duration > Duration::ZERO && c.duration <= s.profile().timeout);
            last = c.at;
            n += 1;
        }
        assert!((150_000..300_000).contains(&n), "{n} calls in a day");
    }

    #[test]
    fn nights_are_idle_but_for_a_few_strays() {
        let s = Scenario::week(5);
        let hours = s.hourly();
        for d in 0..7 {
            let night: u64 = hours[d * 24..d * 24 + 5].iter().map(|h| h.calls).sum();
            let longest = hours[d * 24..d * 24 + 5]
                .iter()
                .map(|h| h.longest_gap)
                .max()
                .unwrap();
            if d == 5 {
                assert_eq!(night, 0, "the idle Saturday");
                assert!(hours[d * 24..(d + 1) * 24].iter().all(|h| h.calls == 0));
            } else {
                // Strays, some of them fan-outs.
                assert!(
                    (1..=8 * 8).contains(&night),
                    "day {d}: {night} calls at night"
                );
                assert!(
                    longest >= Duration::from_secs(20 * 60),
                    "day {d}: {longest:?}"
                );
            }
        }
        // Friday's last call to Sunday's first: over a day with no call at all.
        let calls: Vec<Call> = s.calls().collect();
        let gap = calls
            .windows(2)
            .map(|w| w[1].at.saturating_duration_since(w[0].at))
            .max()
            .unwrap();
        assert!(gap > Duration::from_secs(24 * 3_600), "{gap:?}");
        // Every night call is a stray; daytime is busy.
        assert!(
            calls
                .iter()
                .filter(|c| offset(&s, c) % DAY < 5 * HOUR)
                .all(|c| c.phase == Phase::Night)
        );
        assert!(hours[14].calls > 10_000 && hours[14 + 6 * 24].calls > 3_000);
    }

    #[test]
    fn the_outage_fails_every_call_then_recovers() {
        let s = Scenario::day(9);
        let (down, recovering, up) = s.outage().unwrap();
        assert_eq!(
            recovering.saturating_duration_since(down),
            Duration::from_secs(900)
        );
        assert!(down >= Instant::from_secs(13 * 3_600) && down <= Instant::from_secs(15 * 3_600));
        let mut kinds = [0u64; 3];
        let (mut recovery_ok, mut recovery_failed, mut healthy_failed, mut healthy) = (0, 0, 0, 0);
        for c in s.calls() {
            let failing = matches!(
                c.verdict,
                Some(Verdict::Transient | Verdict::Timeout | Verdict::Overload { .. })
            );
            if c.at >= down && c.at < recovering {
                assert_eq!(c.phase, Phase::Outage);
                match c.verdict {
                    Some(Verdict::Transient) => kinds[0] += 1,
                    Some(Verdict::Timeout) => {
                        assert_eq!(c.duration, s.profile().timeout);
                        kinds[1] += 1
                    }
                    Some(Verdict::Overload {
                        retry_after: Some(ra),
                    }) => {
                        assert!(ra >= Duration::from_secs(1) && ra <= Duration::from_secs(120));
                        kinds[2] += 1
                    }
                    v => panic!("a call in the outage ends {v:?}"),
                }
            } else if c.at >= recovering && c.at < up {
                assert_eq!(c.phase, Phase::Recovery);
                if failing {
                    recovery_failed += 1
                } else {
                    recovery_ok += 1
                }
            } else {
                assert!(!matches!(c.phase, Phase::Outage | Phase::Recovery));
                healthy += 1;
                healthy_failed += u64::from(failing);
            }
        }
        // Every failure kind is well represented (40/30/30).
        assert!(kinds.iter().all(|&k| k > 1_000), "{kinds:?}");
        // Recovery: about half fail on average (a linear fall from all to none).
        let share = recovery_failed as f64 / (recovery_ok + recovery_failed) as f64;
        assert!((0.4..0.6).contains(&share), "{share}");
        // Healthy hours: about 0.16% fail (timeouts, transient, overload, slow successes).
        let share = healthy_failed as f64 / healthy as f64;
        assert!((0.001..0.003).contains(&share), "{share}");
    }

    #[test]
    fn bursts_and_fan_outs_happen_by_day() {
        let s = Scenario::day(21);
        let calls: Vec<Call> = s.calls().collect();
        let burst = calls.iter().filter(|c| c.phase == Phase::Burst).count();
        assert!(burst > 1_000, "{burst} calls in bursts");
        assert!(
            calls
                .iter()
                .filter(|c| c.phase == Phase::Burst)
                .all(|c| (8 * HOUR..20 * HOUR).contains(&offset(&s, c)))
        );
        let same_instant = calls.windows(2).filter(|w| w[0].at == w[1].at).count();
        assert!(
            same_instant > 1_000,
            "{same_instant} calls at the instant of the previous"
        );
    }

    /// A twin with no policy, refusing every third call, that checks `drive_scenario` ends
    /// each admitted call at its own arrival plus duration, with its own verdict, whatever
    /// else is open: the driver's indices follow the twin's.
    struct Recorder {
        calls: Vec<Call>,
        arrived: usize,
        open: Vec<usize>,
    }

    impl crate::Twin for Recorder {
        fn open(&self) -> usize {
            self.open.len()
        }
        fn arrive(
            &mut self,
            now: Instant,
            _: &mut dyn Random,
        ) -> Result<crate::twin::Decision, String> {
            let k = self.arrived;
            self.arrived += 1;
            if now != self.calls[k].at {
                return Err(format!(
                    "call {k} arrives at {now:?}, not {:?}",
                    self.calls[k].at
                ));
            }
            if k % 3 == 2 {
                return Ok(crate::twin::Decision::Refused {
                    reason: resilix::RejectReason::BulkheadFull,
                    retry_at: None,
                });
            }
            self.open.push(k);
            Ok(crate::twin::Decision::Admitted)
        }
        fn end(
            &mut self,
            now: Instant,
            index: usize,
            verdict: Option<Verdict>,
            _: &mut dyn Random,
        ) -> Result<(), String> {
            let k = self.open.remove(index);
            let c = self.calls[k];
            if now != c.at.saturating_add(c.duration) || verdict != c.verdict {
                return Err(format!("call {k} {c:?} ended at {now:?} with {verdict:?}"));
            }
            Ok(())
        }
    }

    #[test]
    fn drive_scenario_ends_each_call_as_scheduled() {
        let s = Scenario::day(4);
        let calls: Vec<Call> = s.calls().collect();
        let mut twin = Recorder {
            calls: calls.clone(),
            arrived: 0,
            open: Vec::new(),
        };
        let r = crate::drive_scenario(&mut twin, &s, &mut SeededRandom::new(0)).unwrap();
        let n = calls.len() as u64;
        assert_eq!(r.admitted + r.refused, n);
        assert_eq!(r.refused, n / 3);
        assert_eq!((r.ended, r.steps), (r.admitted, n + r.admitted));
        assert!(twin.open.is_empty());
    }
}
