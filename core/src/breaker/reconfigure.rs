//! Changing a running breaker's thresholds, waits and probe counts in one step.
//!
//! The whole [`Config`] lives in one settings block (`mechanism/settings.rs`, the words of
//! `live.rs`) that every decision reads once: an admission or a settle racing a
//! reconfiguration decides wholly under the old configuration or wholly under the new one,
//! never on a mix. Nothing stored is touched: the state word, the window's counts, the failure
//! streak, the open-wait growth and the published ends all carry over.
//!
//! The rules, for what cannot change in place and for what is in flight, are on
//! [`Breaker::reconfigure`], where users read them.
//!
//! Design notes: docs/design/breaker.md

use super::config::{Config, ConfigError};
use super::live::Live;
use super::{Breaker, OutcomeWindow};
use crate::control::emit_reconfigured;
use crate::observe::{Observer, PolicyKind};
use crate::permit::Env;
use crate::random::Random;
use crate::time::ticks::TickScale;

impl<W: OutcomeWindow> Breaker<W> {
    /// Puts `config` in force in one step, keeping the state, the window's counts, the
    /// failure streak and every permit in flight, and emits [`Event::PolicyReconfigured`].
    ///
    /// **What cannot change in place** is what the stored state is counted in, and is refused by
    /// name ([`BreakerReconfigureError::Fixed`]): the window (its length, buckets or calls are the
    /// constructor's, not the config's, so a reconfiguration cannot even ask), and each timer's
    /// tick scale, fixed when the breaker was built from the longest run it must measure. A new
    /// longest open wait (`open_wait`, or `open_backoff`'s `max_wait`) may be anything the open
    /// timer's scale still covers, under 2^31 of its ticks: any shorter wait, and a longer one up
    /// to between one and two times the longest the breaker was built with (8.59 s for the
    /// default 5 s wait, at 4 ns a tick); the same for `max_half_open_wait` on its own scale, which
    /// also cannot be turned on or off (a breaker built without one has no end stored for the
    /// half-open period in progress). Past that, build a new breaker.
    ///
    /// **What is in flight** (each rule has its unit test, on a manual clock):
    ///
    /// * *Closed*: the counts already in the window are judged by the new thresholds from the next
    ///   failed or slow outcome on (the circuit opens only when an outcome settles). Permits
    ///   admitted before the change settle under the configuration in force when they settle,
    ///   slow-call duration included.
    /// * *Open*: the wait already computed stands, lowered or raised: the new waits apply from the
    ///   next opening (a re-open after a failed probe included). Cutting a wait in progress
    ///   would make the answer depend on whether a call happened to arrive in between; an
    ///   operator who wants the circuit to probe now has [`reset`](Breaker::reset). So a
    ///   reader must go on believing an end written under a longer wait: the rule that an end
    ///   further ahead than the timer's longest run reads as over (time went backwards) is kept
    ///   against the longest run of any configuration in force so far, not the current one.
    /// * *Half-open*: the probes out keep their places and settle as usual. A lowered
    ///   `half_open_probes` admits no new probe until the taken ones are under it; the period in
    ///   progress keeps the end it had (as an open wait does), a new `max_half_open_wait` bounds
    ///   the next period. If the new
    ///   `probes_to_close` (or the new number of failures it tolerates) is already crossed by the
    ///   outcomes so far, the next call to arrive (or probe to settle) makes the transition the
    ///   counts call for, with the same cause as a probe's outcome would: without that, a breaker
    ///   whose last probe had settled could stay half-open with no probe left to decide it.
    /// * *Forced open, disabled*: unchanged, and the new configuration applies once they end.
    ///
    /// Reconfigurations do not queue: one racing another is [`BreakerReconfigureError::Busy`].
    ///
    /// ```
    /// use core::time::Duration;
    /// use resilix::breaker::{Breaker, BreakerReconfigureError, Config};
    /// use resilix::permit::Env;
    /// use resilix::random::SeededRandom;
    /// use resilix::time::Instant;
    ///
    /// let breaker = Breaker::new(Config::DEFAULT).unwrap();
    /// let mut rng = SeededRandom::new(1);
    /// let mut env = Env::new(Instant::ZERO, &mut rng);
    ///
    /// let stricter = Config { failure_rate_above_percent: Some(20), open_wait: Duration::from_secs(2), ..Config::DEFAULT };
    /// breaker.reconfigure(stricter, &mut env).unwrap();
    /// assert_eq!(breaker.config(), stricter);
    ///
    /// // The open timer was built for 5 s at 4 ns a tick: it covers up to 8.59 s, not a minute.
    /// let longer = Config { open_wait: Duration::from_secs(60), ..Config::DEFAULT };
    /// assert_eq!(
    ///     breaker.reconfigure(longer, &mut env),
    ///     Err(BreakerReconfigureError::Fixed { field: "open_wait" })
    /// );
    /// assert_eq!(breaker.config(), stricter, "a refused change changes nothing");
    /// ```
    ///
    /// [`Event::PolicyReconfigured`]: crate::observe::Event::PolicyReconfigured
    pub fn reconfigure<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        config: Config,
        env: &mut Env<'_, R, O>,
    ) -> Result<(), BreakerReconfigureError> {
        self.check_reconfigure(&config)?;
        let writer = self
            .settings
            .write()
            .map_err(|_| BreakerReconfigureError::Busy)?;
        let before = Live(writer.current());
        writer.publish(
            Live::encode(&config, self.scale, self.half_scale)
                .after(&before)
                .0,
        );
        emit_reconfigured(PolicyKind::Breaker, env);
        Ok(())
    }

    /// Whether [`reconfigure`](Self::reconfigure) would take `config` (every refusal but
    /// [`Busy`](BreakerReconfigureError::Busy)), changing nothing: for a caller that must
    /// know before it commits, such as a config reload that applies its changes only once
    /// every policy has built, and builds a new breaker instead when this refuses.
    ///
    /// ```
    /// use core::time::Duration;
    /// use resilix::breaker::{Breaker, Config};
    ///
    /// let breaker = Breaker::new(Config::DEFAULT).unwrap();
    /// assert!(breaker.check_reconfigure(&Config { minimum_calls: 5, ..Config::DEFAULT }).is_ok());
    /// let minute = Config { open_wait: Duration::from_secs(60), ..Config::DEFAULT };
    /// assert!(breaker.check_reconfigure(&minute).is_err());
    /// ```
    pub fn check_reconfigure(&self, config: &Config) -> Result<(), BreakerReconfigureError> {
        config.validate().map_err(BreakerReconfigureError::Config)?;
        if let Some(calls) = self.window.calls()
            && (config.failure_rate_above_percent.is_some() || config.slow_calls.is_some())
            && calls < config.minimum_calls
        {
            return Err(BreakerReconfigureError::Config(
                ConfigError::WindowBelowMinimumCalls {
                    calls,
                    minimum_calls: config.minimum_calls,
                },
            ));
        }
        if !covers(self.scale, config.longest_open_wait()) {
            let field = match config.open_backoff {
                Some(_) => "open_backoff.max_wait",
                None => "open_wait",
            };
            return Err(BreakerReconfigureError::Fixed { field });
        }
        let half_fits = match (config.max_half_open_wait, self.live().half_ticks()) {
            (Some(w), built) => built != 0 && covers(self.half_scale, w),
            (None, built) => built == 0,
        };
        if !half_fits {
            return Err(BreakerReconfigureError::Fixed {
                field: "max_half_open_wait",
            });
        }
        Ok(())
    }
}

/// Whether a timer on `scale` can measure `longest` (under 2^31 of its ticks, as the scale it
/// was built on was chosen to).
fn covers(scale: TickScale, longest: core::time::Duration) -> bool {
    TickScale::covering(longest).shift() <= scale.shift()
}

/// Why [`Breaker::reconfigure`] changed nothing: the one reconfigure error, over this policy's config error.
pub type BreakerReconfigureError = crate::control::ReconfigureError<ConfigError>;

#[cfg(all(test, not(loom)))]
mod tests;
