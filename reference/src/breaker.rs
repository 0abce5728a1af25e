//! The circuit breaker, plainly: states, a count or time window, consecutive failures, slow
//! calls, an open wait that grows and is jittered, a bounded half-open period, in `u64`
//! nanoseconds with ordinary fields.
//!
//! What it means (the same as `resilix::breaker`, single-threaded):
//!
//! * **Closed** admits every call. A call's outcome counts if it settles while the circuit is
//!   still in the closed period that admitted it: `Success`/`Answered` are successes,
//!   `Overload`/`Transient`/`Timeout` failures, `Rejected` and cancelled calls nothing. A call
//!   is slow when it settles at least `slower_than` after admission. After each failed or slow
//!   outcome the circuit opens if, with at least `minimum_calls` in the window, the failure
//!   (or slow) share is strictly above its threshold, or if the failures in a row reach
//!   `consecutive_failures` (a success, slow or not, ends the run).
//! * The **window** is the last `calls` outcomes, or the outcomes of the last `buckets` time
//!   periods of `ceil(length / buckets)` (at least 4 ns) each, the current one included.
//! * **Open** refuses with `circuit-open` until its end; the first call at or after the end
//!   enters half-open and is its first probe. The wait is `open_wait`, grown by
//!   `multiplier_percent` per consecutive re-open up to the cap, then shortened by a jitter
//!   drawn uniformly in `0..=wait × jitter%` from the caller's randomness
//!   (`rng.below(spread + 1)`, the same draw as the real breaker's).
//! * **Half-open** admits up to `half_open_probes` probes in the period; a cancelled (or
//!   `Rejected`) probe frees its place. A call refused while every probe is out has no
//!   retry-at. It closes once `probes_to_close` succeeded (a slow
//!   success is a failure), re-opens once that is impossible; and a call arriving at or after
//!   the period's end (`max_half_open_wait` after it began) re-opens it, refused until the new
//!   wait ends. A re-open counts one more consecutive re-open; closing forgets them, the window
//!   and the run of failures. An outcome from an earlier period is ignored.
//! * **Ticks**: the breaker measures each timer on its own tick, `2^s` ns, the finest (at least
//!   4 ns) on which the timer's longest run is under 2^31 ticks. A timer started at `now` for
//!   `d` ends at the start of the tick `floor(now / tick) + ceil(d / tick)` (never past the
//!   timeline's last tick), and the refusal's retry-at is that instant. This is a resolution,
//!   not a wrap: nothing here is modulo anything.
//! * **Backwards time**: a timer whose end lies further ahead than its longest run reads as
//!   over. (The differential runs only move forwards; this is what the rule would be.)
//! * **Reconfiguration** ([`Model::reconfigure`]) replaces the configuration and keeps
//!   everything else: the state, its ends, the window, the run of failures, the re-opens,
//!   the tickets. Each timer keeps its tick; a new longest run must stay under 2^31 of them
//!   (else `Fixed`, named after the field that sets it), and a half-open bound can be neither
//!   added nor removed. An end already set stands: the rule above compares with the longest
//!   run of any configuration so far, and new runs start at the next opening (or half-open
//!   period). A half-open period
//!   whose outcomes so far already reach the new `probes_to_close` closes at the next call
//!   (which is then a closed call), or re-opens there if its failures exceed the new
//!   `half_open_probes - probes_to_close`, before any other rule of that call.
//!
//! Operator states (forced open, disabled) are not modelled: the differential runs do not use
//! them.

use std::collections::VecDeque;
use std::time::Duration;

use resilix::Verdict;
use resilix::breaker::{
    Breaker, BreakerPermit, BreakerReconfigureError, CircuitState, Config, ConfigError,
    OutcomeWindow,
};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::{Random, SeededRandom};
use resilix::rejection::RejectReason;
use resilix::time::Instant;

use crate::twin::{Decision, Twin, same};

fn nanos(d: Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX)) as u64
}

/// The tick, in nanoseconds, of a timer whose longest run is `longest`.
fn tick_for(longest: Duration) -> u64 {
    let n = nanos(longest);
    let mut shift = 2;
    while shift < 63 && (n >> shift) >= 1 << 31 {
        shift += 1;
    }
    1 << shift
}

/// One timer's resolution.
#[derive(Clone, Copy, Debug)]
struct Timer {
    tick: u64,
    /// The longest run, in ticks.
    longest: u64,
    /// The longest run of any configuration so far, in ticks: how far ahead an end is
    /// believed.
    bound: u64,
}

impl Timer {
    fn new(longest: Duration) -> Timer {
        let tick = tick_for(longest);
        let longest = nanos(longest).div_ceil(tick);
        Timer {
            tick,
            longest,
            bound: longest,
        }
    }

    /// This timer's tick with a new longest run, if it stays under 2^31 ticks.
    fn with_longest(self, longest: Duration) -> Option<Timer> {
        // Under 2^31 whole ticks, as the real breaker's scale was chosen (rounded down).
        let fits = nanos(longest) / self.tick < 1 << 31;
        let longest = nanos(longest).div_ceil(self.tick);
        fits.then(|| Timer {
            tick: self.tick,
            longest,
            bound: self.bound.max(longest),
        })
    }

    /// Where a run of `d` started at `now` ends, in nanoseconds.
    fn end(&self, now: u64, d: u64) -> u64 {
        let last = u64::MAX / self.tick;
        let ticks = d.div_ceil(self.tick).clamp(1, self.longest.max(1));
        (now / self.tick + ticks).min(last) * self.tick
    }

    /// Whether the run ending at `end` is over at `now` (or reads too long: time went back).
    fn over(&self, now: u64, end: u64) -> bool {
        let (now, end) = (now / self.tick, end / self.tick);
        end <= now || end - now > self.bound
    }
}

/// The window of closed-state outcomes.
#[derive(Clone, Debug)]
enum Window {
    /// The last `calls` outcomes, (failed, slow).
    Calls {
        calls: usize,
        last: VecDeque<(bool, bool)>,
    },
    /// Per period of `bucket` ns: (period, [calls, failures, slow]), the last `buckets`.
    Time {
        bucket: u64,
        buckets: u64,
        periods: VecDeque<(u64, [u32; 3])>,
    },
}

impl Window {
    fn record(&mut self, now: u64, failed: bool, slow: bool) {
        match self {
            Window::Calls { calls, last } => {
                last.push_back((failed, slow));
                while last.len() > *calls {
                    last.pop_front();
                }
            }
            Window::Time {
                bucket,
                buckets,
                periods,
            } => {
                let p = now / *bucket;
                if periods.back().map(|(q, _)| *q) != Some(p) {
                    periods.push_back((p, [0; 3]));
                }
                let c = &mut periods.back_mut().expect("pushed").1;
                for (c, add) in c.iter_mut().zip([true, failed, slow]) {
                    *c = c.saturating_add(u32::from(add));
                }
                while periods.front().is_some_and(|(q, _)| p - q >= *buckets) {
                    periods.pop_front();
                }
            }
        }
    }

    /// (calls, failures, slow) in the window at `now`.
    fn totals(&self, now: u64) -> (u32, u32, u32) {
        match self {
            Window::Calls { last, .. } => {
                let f = last.iter().filter(|o| o.0).count() as u32;
                let s = last.iter().filter(|o| o.1).count() as u32;
                (last.len() as u32, f, s)
            }
            Window::Time {
                bucket,
                buckets,
                periods,
            } => {
                let p = now / *bucket;
                let mut t = [0u32; 3];
                for (q, c) in periods {
                    if *q <= p && p - q < *buckets {
                        for (t, c) in t.iter_mut().zip(c) {
                            *t = t.saturating_add(*c);
                        }
                    }
                }
                (t[0], t[1], t[2])
            }
        }
    }

    fn clear(&mut self) {
        match self {
            Window::Calls { last, .. } => last.clear(),
            Window::Time { periods, .. } => periods.clear(),
        }
    }
}

/// The state of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Closed,
    /// Refusing until `end` (ns).
    Open {
        end: u64,
    },
    /// Probing; the period ends at `end` (ns), if it is bounded.
    HalfOpen {
        end: Option<u64>,
        in_flight: u8,
        successes: u8,
        failures: u8,
    },
}

/// A call the model admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket {
    /// The period (a count of transitions) that admitted it.
    period: u64,
    probe: bool,
    admitted_at: u64,
}

impl Ticket {
    /// Whether the call is a half-open probe.
    pub fn is_probe(&self) -> bool {
        self.probe
    }
}

/// The reference breaker.
#[derive(Clone, Debug)]
pub struct Model {
    config: Config,
    open_timer: Timer,
    half_timer: Option<Timer>,
    state: State,
    /// Transitions so far: a ticket of an earlier period is late.
    period: u64,
    reopens: u32,
    run_of_failures: u32,
    window: Window,
}

impl Model {
    /// A breaker counting the last `calls` calls (`config` valid).
    pub fn count_based(config: Config, calls: u32) -> Model {
        Model::new(
            config,
            Window::Calls {
                calls: calls as usize,
                last: VecDeque::new(),
            },
        )
    }

    /// A breaker counting the last `length` in `buckets` buckets (`config` valid).
    pub fn time_based(config: Config, length: Duration, buckets: u64) -> Model {
        Model::new(
            config,
            Window::Time {
                bucket: nanos(length).div_ceil(buckets).max(8),
                buckets,
                periods: VecDeque::new(),
            },
        )
    }

    fn new(config: Config, window: Window) -> Model {
        let longest = match config.open_backoff {
            Some(b) => b.max_wait,
            None => config.open_wait,
        };
        Model {
            config,
            open_timer: Timer::new(longest),
            half_timer: config.max_half_open_wait.map(Timer::new),
            state: State::Closed,
            period: 0,
            reopens: 0,
            run_of_failures: 0,
            window,
        }
    }

    /// Puts `config` in force (see the module docs), or says why not, changing nothing.
    pub fn reconfigure(&mut self, config: Config) -> Result<(), BreakerReconfigureError> {
        config.validate().map_err(BreakerReconfigureError::Config)?;
        if let Window::Calls { calls, .. } = self.window {
            let calls = calls as u32;
            let rates = config.failure_rate_above_percent.is_some() || config.slow_calls.is_some();
            if rates && calls < config.minimum_calls {
                return Err(BreakerReconfigureError::Config(
                    ConfigError::WindowBelowMinimumCalls {
                        calls,
                        minimum_calls: config.minimum_calls,
                    },
                ));
            }
        }
        let (longest, field) = match config.open_backoff {
            Some(b) => (b.max_wait, "open_backoff.max_wait"),
            None => (config.open_wait, "open_wait"),
        };
        let open_timer = self
            .open_timer
            .with_longest(longest)
            .ok_or(BreakerReconfigureError::Fixed { field })?;
        let fixed = BreakerReconfigureError::Fixed {
            field: "max_half_open_wait",
        };
        let half_timer = match (self.half_timer, config.max_half_open_wait) {
            (Some(t), Some(w)) => Some(t.with_longest(w).ok_or(fixed)?),
            (None, None) => None,
            _ => return Err(fixed),
        };
        self.config = config;
        self.open_timer = open_timer;
        self.half_timer = half_timer;
        Ok(())
    }

    /// The state, as the real breaker names it.
    pub fn state(&self) -> CircuitState {
        match self.state {
            State::Closed => CircuitState::Closed,
            State::Open { .. } => CircuitState::Open,
            State::HalfOpen { .. } => CircuitState::HalfOpen,
        }
    }

    /// Probes admitted in this half-open period and not yet ended.
    pub fn probes_in_flight(&self) -> u32 {
        match self.state {
            State::HalfOpen { in_flight, .. } => u32::from(in_flight),
            _ => 0,
        }
    }

    /// Whether forgetting this breaker at `now` loses nothing a keyed table must keep:
    /// closed, no failure or slow call in the window, and no failure streak where a streak
    /// opens the circuit.
    pub fn is_idle(&self, now: Instant) -> bool {
        let (_, failures, slow) = self.window.totals(now.as_nanos());
        matches!(self.state, State::Closed)
            && failures == 0
            && slow == 0
            && (self.config.consecutive_failures.is_none() || self.run_of_failures == 0)
    }

    /// The open wait after `reopens` consecutive re-opens, jitter drawn from `rng`.
    fn wait(&self, reopens: u32, rng: &mut dyn Random) -> u64 {
        let c = &self.config;
        let mut wait = nanos(c.open_wait);
        if let Some(b) = c.open_backoff {
            let cap = nanos(b.max_wait);
            for _ in 0..reopens {
                if wait >= cap || b.multiplier_percent <= 100 {
                    break;
                }
                wait = (u128::from(wait) * u128::from(b.multiplier_percent) / 100)
                    .min(u128::from(cap)) as u64;
            }
            wait = wait.min(cap);
        }
        let spread = (u128::from(wait) * u128::from(c.open_jitter_percent) / 100) as u64;
        if spread == 0 {
            wait
        } else {
            wait - rng.below(spread.saturating_add(1)).min(spread)
        }
    }

    /// Opens at `now` after `reopens` consecutive re-opens; answers the end of the wait.
    fn open(&mut self, now: u64, reopens: u32, rng: &mut dyn Random) -> u64 {
        let wait = self.wait(reopens, rng);
        let end = self.open_timer.end(now, wait);
        self.state = State::Open { end };
        self.period += 1;
        self.reopens = reopens;
        end
    }

    fn close(&mut self) {
        self.state = State::Closed;
        self.period += 1;
        self.reopens = 0;
        self.window.clear();
        self.run_of_failures = 0;
    }

    /// A call arrives at `now`: admitted (with its ticket) or refused.
    pub fn admit(&mut self, now: Instant, rng: &mut dyn Random) -> Result<Ticket, Decision> {
        let now = now.as_nanos();
        let ticket = |period, probe| Ticket {
            period,
            probe,
            admitted_at: now,
        };
        let refused = |at: Option<u64>| Decision::Refused {
            reason: RejectReason::CircuitOpen,
            retry_at: at.map(Instant::from_nanos),
        };
        match self.state {
            State::Closed => Ok(ticket(self.period, false)),
            State::Open { end } => {
                if !self.open_timer.over(now, end) {
                    return Err(refused(Some(end)));
                }
                self.period += 1;
                self.state = State::HalfOpen {
                    end: self
                        .half_timer
                        .map(|t| t.end(now, nanos(self.config.max_half_open_wait.unwrap()))),
                    in_flight: 1,
                    successes: 0,
                    failures: 0,
                };
                Ok(ticket(self.period, true))
            }
            State::HalfOpen {
                end,
                in_flight,
                successes,
                failures,
            } => {
                let c = &self.config;
                if successes >= c.probes_to_close {
                    self.close();
                    return Ok(ticket(self.period, false));
                }
                if failures > c.half_open_probes - c.probes_to_close {
                    let end = self.open(now, self.reopens.saturating_add(1), rng);
                    return Err(refused(Some(end)));
                }
                if let (Some(t), Some(end)) = (self.half_timer, end)
                    && t.over(now, end)
                {
                    let end = self.open(now, self.reopens.saturating_add(1), rng);
                    return Err(refused(Some(end)));
                }
                if in_flight + successes + failures < self.config.half_open_probes {
                    self.state = State::HalfOpen {
                        end,
                        in_flight: in_flight + 1,
                        successes,
                        failures,
                    };
                    Ok(ticket(self.period, true))
                } else {
                    // Every probe is out: no retry-at (they may answer at any moment).
                    Err(refused(None))
                }
            }
        }
    }

    /// The call of `ticket` ends at `now` with `verdict`, or is cancelled (`None`).
    pub fn end(
        &mut self,
        ticket: Ticket,
        now: Instant,
        verdict: Option<Verdict>,
        rng: &mut dyn Random,
    ) {
        let now = now.as_nanos();
        if ticket.period != self.period {
            return; // late
        }
        // `None` for an outcome that counts for nothing.
        let failed = match verdict {
            Some(Verdict::Success | Verdict::Answered) => Some(false),
            // An uncertain failure (a 500) counts like a transient one.
            Some(
                Verdict::Overload { .. }
                | Verdict::Transient
                | Verdict::Uncertain
                | Verdict::Timeout,
            ) => Some(true),
            Some(Verdict::Rejected(_)) | None => None,
        };
        let slow = self
            .config
            .slow_calls
            .is_some_and(|s| now.saturating_sub(ticket.admitted_at) >= nanos(s.slower_than));
        match self.state {
            State::Closed if !ticket.probe => {
                let Some(failed) = failed else { return };
                self.window.record(now, failed, slow);
                if failed {
                    self.run_of_failures = self.run_of_failures.saturating_add(1);
                } else {
                    self.run_of_failures = 0;
                }
                if (failed || slow) && self.trips(now) {
                    self.open(now, 0, rng);
                }
            }
            State::HalfOpen {
                end,
                in_flight,
                successes,
                failures,
            } if ticket.probe && in_flight > 0 => {
                let Some(failed) = failed else {
                    // Cancelled or rejected: the place is free again.
                    self.state = State::HalfOpen {
                        end,
                        in_flight: in_flight - 1,
                        successes,
                        failures,
                    };
                    return;
                };
                let succeeded = !failed && !slow;
                let (successes, failures) = if succeeded {
                    (successes + 1, failures)
                } else {
                    (successes, failures + 1)
                };
                let c = &self.config;
                if successes >= c.probes_to_close {
                    self.close();
                } else if failures > c.half_open_probes - c.probes_to_close {
                    self.open(now, self.reopens.saturating_add(1), rng);
                } else {
                    self.state = State::HalfOpen {
                        end,
                        in_flight: in_flight - 1,
                        successes,
                        failures,
                    };
                }
            }
            _ => {}
        }
    }

    fn trips(&self, now: u64) -> bool {
        let c = &self.config;
        let (calls, failures, slow) = self.window.totals(now);
        let above = |part: u32, p: u8| u64::from(part) * 100 > u64::from(p) * u64::from(calls);
        if calls >= c.minimum_calls {
            if c.failure_rate_above_percent
                .is_some_and(|p| above(failures, p))
            {
                return true;
            }
            if c.slow_calls.is_some_and(|s| above(slow, s.above_percent)) {
                return true;
            }
        }
        c.consecutive_failures
            .is_some_and(|n| self.run_of_failures >= n)
    }
}

/// A real breaker beside its model, driven alike. Every step's randomness is one seed drawn
/// from the driver's generator, from which the real breaker and the model each get their own
/// identical [`SeededRandom`]: both draw the same jitter.
pub struct BreakerTwin<'a, W: OutcomeWindow> {
    real: &'a Breaker<W>,
    model: Model,
    calls: Vec<(BreakerPermit<'a, W>, Ticket)>,
}

impl<'a, W: OutcomeWindow> BreakerTwin<'a, W> {
    /// `real` (fresh) and `model`, built from the same configuration and window.
    pub fn new(real: &'a Breaker<W>, model: Model) -> Self {
        BreakerTwin {
            real,
            model,
            calls: Vec::new(),
        }
    }

    /// The model.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// Reconfigures both at `now` with `config`: their answers must be the same (the
    /// answer), and a real breaker that accepted must report the new config.
    pub fn reconfigure(
        &mut self,
        config: Config,
        now: Instant,
    ) -> Result<Result<(), BreakerReconfigureError>, String> {
        let mut rng = SeededRandom::new(0);
        let real = self.real.reconfigure(config, &mut Env::new(now, &mut rng));
        let model = self.model.reconfigure(config);
        if real != model {
            return Err(format!("reconfigure: real {real:?}, model {model:?}"));
        }
        let expected = self.model.config;
        if self.real.config() != expected {
            return Err(format!(
                "config in force: real {:?}, model {expected:?}",
                self.real.config()
            ));
        }
        Ok(real)
    }
}

fn pair(rng: &mut dyn Random) -> (SeededRandom, SeededRandom) {
    let seed = rng.next_u64();
    (SeededRandom::new(seed), SeededRandom::new(seed))
}

impl<W: OutcomeWindow> Twin for BreakerTwin<'_, W> {
    fn open(&self) -> usize {
        self.calls.len()
    }

    fn arrive(&mut self, now: Instant, rng: &mut dyn Random) -> Result<Decision, String> {
        let (mut a, mut b) = pair(rng);
        let mut env = Env::new(now, &mut a);
        let real = self.real.admit(&mut env);
        let model = self.model.admit(now, &mut b);
        let decision = same(
            Decision::of(&real),
            match model {
                Ok(_) => Decision::Admitted,
                Err(d) => d,
            },
        )?;
        if let (Ok(permit), Ok(ticket)) = (real, model) {
            if permit.is_probe() != ticket.probe {
                return Err(format!(
                    "real probe {}, model probe {}",
                    permit.is_probe(),
                    ticket.probe
                ));
            }
            self.calls.push((permit, ticket));
        }
        Ok(decision)
    }

    fn end(
        &mut self,
        now: Instant,
        index: usize,
        verdict: Option<Verdict>,
        rng: &mut dyn Random,
    ) -> Result<(), String> {
        let (permit, ticket) = self.calls.remove(index);
        let (mut a, mut b) = pair(rng);
        match verdict {
            Some(v) => permit.settle(&v, &mut Env::new(now, &mut a)),
            None => drop(permit),
        }
        self.model.end(ticket, now, verdict, &mut b);
        Ok(())
    }

    fn check(&mut self, _now: Instant) -> Result<(), String> {
        let real = (self.real.state(), self.real.probes_in_flight());
        let model = (self.model.state(), self.model.probes_in_flight());
        if real == model {
            Ok(())
        } else {
            Err(format!("real (state, probes) {real:?}, model {model:?}"))
        }
    }
}
