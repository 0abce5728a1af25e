//! The keyed throttler, plainly: [`crate::keyed::Table`] of [`ThrottlerModel`]s, each with the
//! one configuration. A throttler is idle when its window is empty (no request and no accept
//! in it) and, as for every keyed table, no call is in flight; the overflow throttler is
//! shared by every key without an entry. Shed draws are recorded from the real table and
//! replayed to the model, as in [`crate::throttler`].
//!
//! ```
//! use resilix::random::SeededRandom;
//! use resilix::throttler::{KeyedThrottler, ThrottlerConfig};
//! use resilix::time::Instant;
//! use resilix_reference::keyed_throttler::KeyedThrottlerTwin;
//! use resilix_reference::twin::Mix;
//! use resilix_reference::{Gaps, Timeline, drive};
//!
//! let config = ThrottlerConfig { min_requests: 0, ..ThrottlerConfig::DEFAULT };
//! let real: KeyedThrottler<4, 4> = KeyedThrottler::with_buckets(config).unwrap();
//! let mut twin = KeyedThrottlerTwin::new(&real, &config, 12, 8);
//! let mut timeline = Timeline::new(Instant::from_secs(1), Gaps::LONG);
//! let mut rng = SeededRandom::new(1);
//! drive(&mut twin, &mut timeline, &mut rng, 2_000, Mix::MOSTLY_HEALTHY, 6).unwrap();
//! ```

use resilix::permit::{Env, Permit};
use resilix::random::Random;
use resilix::rejection::RejectReason;
use resilix::throttler::{KeyedPermit, KeyedThrottler, ThrottlerConfig};
use resilix::time::Instant;
use resilix::verdict::Verdict;

use crate::draws::Recorder;
use crate::keyed::{Arrivals, Home, Idle, Table, agree, agree_home};
use crate::throttler::ThrottlerModel;
use crate::twin::{Decision, Twin, same};

impl Idle for ThrottlerModel {
    fn is_idle(&self, now: Instant) -> bool {
        self.counts(now) == (0, 0)
    }
}

/// A [`KeyedThrottler`] beside its model: arrivals for keys `0..keys` (spread so their homes
/// collide), one in `evict_one_in` preceded by `evict_idle`; [`check`](Twin::check) compares
/// `len`, every key's counts and the overflow's.
pub struct KeyedThrottlerTwin<'a, const N: usize, const B: usize> {
    real: &'a KeyedThrottler<N, B>,
    model: Table<ThrottlerModel>,
    arrivals: Arrivals,
    calls: Vec<(KeyedPermit<'a, B>, Home)>,
}

impl<'a, const N: usize, const B: usize> KeyedThrottlerTwin<'a, N, B> {
    /// Twins `real`, built with `config` and holding no entry yet.
    pub fn new(
        real: &'a KeyedThrottler<N, B>,
        config: &ThrottlerConfig,
        keys: u64,
        evict_one_in: u64,
    ) -> Self {
        assert!(real.is_empty(), "a twin starts from an empty table");
        KeyedThrottlerTwin {
            real,
            model: Table::new(ThrottlerModel::new(config, B), N),
            arrivals: Arrivals::new(keys, evict_one_in),
            calls: Vec::new(),
        }
    }

    /// The model.
    pub fn model(&self) -> &Table<ThrottlerModel> {
        &self.model
    }

    /// Both evict idle entries at `now`.
    pub fn evict_idle(&mut self, now: Instant) -> Result<usize, String> {
        agree(
            "evict_idle",
            self.real.evict_idle(now),
            self.model.evict_idle(now),
        )
    }
}

fn wide((r, a): (u32, u32)) -> (u64, u64) {
    (u64::from(r), u64::from(a))
}

impl<const N: usize, const B: usize> Twin for KeyedThrottlerTwin<'_, N, B> {
    fn open(&self) -> usize {
        self.calls.len()
    }

    fn arrive(&mut self, now: Instant, rng: &mut dyn Random) -> Result<Decision, String> {
        let (evict, key) = self.arrivals.draw(rng);
        if evict {
            self.evict_idle(now)?;
        }
        let mut recorder = Recorder::new(rng);
        let real = self.real.admit(key, &mut Env::new(now, &mut recorder));
        let home = self.model.place(key, now);
        let model = self.model.model(home);
        let admits = recorder.replay("keyed throttler", |r| model.admit(now, r))?;
        let model_decision = if admits {
            Decision::Admitted
        } else {
            Decision::Refused {
                reason: RejectReason::Throttled,
                retry_at: None,
            }
        };
        let decision =
            same(Decision::of(&real), model_decision).map_err(|e| format!("key {key}: {e}"))?;
        if let Ok(permit) = real {
            agree_home(key, permit.is_overflow(), home)?;
            self.model.begin(home);
            self.calls.push((permit, home));
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
        let (permit, home) = self.calls.remove(index);
        match verdict {
            Some(v) => {
                permit.settle(&v, &mut Env::new(now, rng));
                self.model.model(home).settle(now, &v);
            }
            None => drop(permit),
        }
        self.model.end(home);
        Ok(())
    }

    fn check(&mut self, now: Instant) -> Result<(), String> {
        self.arrivals.agree_table(
            "counts",
            (self.real.len(), self.model.len()),
            |key| {
                let real = self.real.counts(key, now).map(wide);
                (real, self.model.get(key).map(|m| m.counts(now)))
            },
            (
                wide(self.real.overflow().counts(now)),
                self.model.overflow().counts(now),
            ),
        )
    }
}
