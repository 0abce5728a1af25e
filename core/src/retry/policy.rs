//! The retry policy: the verdict rule, a backoff, Retry-After, the deadline and a budget,
//! combined into one decision per settled attempt.
//!
//! After each attempt, [`Retry::decide`](RetryPolicy::decide) asks, in this order, and the
//! first "no" is the give-up reason:
//!
//! 1. May this verdict be retried at all? ([`retryable_with`]: `Answered` and `Rejected`
//!    never, `Timeout` only when the call is idempotent, `Uncertain` as
//!    [`RetryConfig::uncertain_retry`] says.) → [`GiveUpReason::NotRetryable`]
//! 2. Is an attempt left? → [`GiveUpReason::AttemptsExhausted`]
//! 3. Is the upstream's Retry-After within the longest wait we accept
//!    ([`RetryConfig::max_retry_after`], 300 s by default)? → [`GiveUpReason::RetryAfterTooLong`]
//! 4. Does the upstream's Retry-After end before the deadline? →
//!    [`GiveUpReason::RetryAfterBeyondDeadline`]
//! 5. Can the next attempt start strictly before the deadline, after its delay? →
//!    [`GiveUpReason::DeadlineWouldPass`]
//! 6. Does the budget grant the retry? → [`GiveUpReason::BudgetExceeded`]
//!
//! The budget is asked last, only when a retry is otherwise going to happen, so a budget
//! refusal always means "we would have retried" and tokens are never spent on a retry that
//! will not be made. (Failures that stop at 2–5 are still *recorded* with the budget, for
//! gRPC-style buckets that charge every failure.)
//!
//! **Retry-After.** The delay is `max(backoff, retry_after)`: the upstream's floor is always
//! honoured, and when the backoff is already longer the jitter still spreads clients out. The
//! backoff series itself (decorrelated's "previous") continues from the drawn backoff, not the
//! Retry-After, so one long Retry-After does not inflate every later delay.
//!
//! **Retry-After beyond the cap**: a call without a deadline would otherwise sleep as long as
//! the upstream says, and an `Overload` with a 364-day Retry-After would schedule a retry 364
//! days out, holding the caller (and whatever it holds) that long. Beyond the cap the call
//! gives up at once, for the same reason as beyond the deadline below; the cap is checked
//! first, so one upstream answer gives one reason whether or not the call has a deadline. The
//! parser saturates absurd values (a Unix timestamp sent as delay-seconds) rather than
//! dropping them, so they land here too, never in our own much shorter backoff.
//!
//! **Retry-After beyond the deadline** (docs/design/spec.md §9): give up at once with its own reason rather
//! than ignore it and retry sooner. The upstream said it cannot serve us before then;
//! retrying earlier spends its capacity exactly when it asked us not to, and waiting past the
//! deadline produces an answer nobody is waiting for. Failing now also hands the caller its
//! remaining time to fall back. A Retry-After ending exactly at the deadline is beyond it: an
//! attempt cannot start at the instant the deadline passes.
//!
//! **Timeouts.** A timed-out attempt may still be running upstream, so a retry can do the work
//! twice. It is retried only when the caller declares the operation idempotent
//! ([`CallOptions::idempotent`](crate::call::CallOptions::idempotent)); we never assume it.
//!
//! **Uncertain failures** (HTTP 500, 502: the server failed, perhaps after acting). By
//! default they are retried for any call, as docs/design/spec.md §3.2 retries transient failures: a
//! POST answered 500 is sent again and may run twice, which is safe when it carries an
//! idempotency key the server deduplicates on. With
//! [`RetryConfig::with_uncertain_retry`]`(`[`UncertainRetry::IdempotentOnly`](crate::retry::UncertainRetry::IdempotentOnly)`)`
//! they are retried only for idempotent calls, as RFC 9110 §9.2.2 advises, and a POST gives
//! up with `NotRetryable(Uncertain)`.

use core::time::Duration;

use crate::observe::Observer;
use crate::permit::Env;
use crate::random::Random;
use crate::retry::backoff::Backoff;
use crate::retry::budget::{RetryBudget, Unlimited};
use crate::retry::config::RetryConfig;
use crate::retry::{AttemptOutcome, GiveUpReason, RetryDecision, RetryPolicy, retryable_with};
use crate::time::{Instant, duration_as_nanos_saturating};
use crate::verdict::{Verdict, VerdictKind};

/// Retry with backoff, Retry-After, the deadline and a shared budget `B`.
///
/// ```
/// use core::time::Duration;
/// use resilix::call::{CallOptions, Next};
/// use resilix::permit::Env;
/// use resilix::pipeline::Pipeline;
/// use resilix::random::SeededRandom;
/// use resilix::retry::budget::{TokenBucket, TokenBucketConfig};
/// use resilix::retry::{GiveUpReason, Retry, RetryConfig};
/// use resilix::time::{Deadline, Instant};
/// use resilix::Verdict;
///
/// let budget = TokenBucket::new(TokenBucketConfig::AWS_SDK_STANDARD)?;
/// let pipeline = Pipeline::new().retry(Retry::new(RetryConfig::DEFAULT, &budget));
/// let mut rng = SeededRandom::new(7);
/// let mut env = Env::new(Instant::ZERO, &mut rng);
/// let options = CallOptions::default().deadline(Deadline::after(env.now, Duration::from_secs(5)));
/// let mut call = pipeline.call(env.now, options);
/// loop {
///     let attempt = call.admit(&mut env).unwrap();
///     match call.settle(attempt, &Verdict::Transient, &mut env) {
///         Next::RetryAt(at) => env.now = at, // an adapter sleeps until `at`
///         Next::GiveUp(reason) => {
///             assert_eq!(reason, GiveUpReason::AttemptsExhausted { attempts: 3 });
///             break;
///         }
///         Next::Done => unreachable!(),
///     }
/// }
/// # Ok::<(), resilix::retry::budget::BudgetConfigError>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Retry<B = Unlimited> {
    config: RetryConfig,
    budget: B,
}

impl Retry<Unlimited> {
    /// Retry with `config` and no budget: only the per-call attempt cap bounds retries.
    pub const fn unbudgeted(config: RetryConfig) -> Self {
        Retry {
            config,
            budget: Unlimited,
        }
    }
}

impl<B: RetryBudget> Retry<B> {
    /// Retry with `config`, spending from `budget` (pass `&budget` to share one).
    pub const fn new(config: RetryConfig, budget: B) -> Self {
        Retry { config, budget }
    }

    /// The configuration.
    pub const fn config(&self) -> &RetryConfig {
        &self.config
    }

    /// The budget.
    pub const fn budget(&self) -> &B {
        &self.budget
    }
}

/// One call's retry memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RetryState {
    /// Attempts settled so far in this call (the driver's count is authoritative; this one
    /// guards against a driver that reports the same attempt twice).
    attempts: u32,
    /// The last backoff drawn (decorrelated jitter grows from it).
    previous: Duration,
    /// What caused the last retry, for the budget's accounting on success.
    last_retry_after: Option<VerdictKind>,
}

impl RetryState {
    /// Attempts settled so far.
    pub const fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The last backoff drawn.
    pub const fn previous_delay(&self) -> Duration {
        self.previous
    }
}

impl<B: RetryBudget> RetryPolicy for Retry<B> {
    type State = RetryState;

    fn begin(&self, _now: Instant) -> RetryState {
        RetryState {
            attempts: 0,
            previous: self.config.backoff().first_previous(),
            last_retry_after: None,
        }
    }

    #[inline]
    fn decide<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        state: &mut RetryState,
        outcome: &AttemptOutcome,
        env: &mut Env<'_, R, O>,
    ) -> RetryDecision {
        let now = env.now;
        let attempt = outcome.attempt.max(state.attempts.saturating_add(1));
        state.attempts = attempt;
        let verdict = outcome.verdict;
        if attempt == 1 && verdict.is_counted() {
            self.budget.record_first_attempt(now);
        }
        let uncertain = self.config.uncertain_retry();
        if let Err(decision) = retryable_with(&verdict, outcome.idempotent, uncertain) {
            if let Verdict::Success = verdict {
                self.budget.record_success(now, state.last_retry_after);
            }
            return decision;
        }
        let kind = verdict.kind();
        match plan(&self.config, attempt, state, outcome, env) {
            Err(reason) => {
                self.budget.record_unretried_failure(now, kind);
                RetryDecision::GiveUp(reason)
            }
            Ok((at, drawn)) => {
                if !self.budget.try_spend(now, kind) {
                    return RetryDecision::GiveUp(GiveUpReason::BudgetExceeded);
                }
                state.previous = drawn;
                state.last_retry_after = Some(kind);
                RetryDecision::RetryAt(at)
            }
        }
    }
}

/// Steps 2–5 of the module docs for a retryable failure: when the next attempt would start
/// and the backoff drawn for it, or why there is none. Draws from `env.rng` only when the
/// attempt cap and the Retry-After allow a retry.
fn plan<R: Random + ?Sized, O: Observer + ?Sized>(
    config: &RetryConfig,
    attempt: u32,
    state: &RetryState,
    outcome: &AttemptOutcome,
    env: &mut Env<'_, R, O>,
) -> Result<(Instant, Duration), GiveUpReason> {
    if attempt >= config.max_attempts() {
        return Err(GiveUpReason::AttemptsExhausted { attempts: attempt });
    }
    let now = env.now;
    let retry_after = outcome.verdict.retry_after();
    if let Some(wait) = retry_after {
        // On the u64-nanosecond timeline, as every instant is: a wait beyond its 584 years
        // reads as its end, so a cap of `Duration::MAX` waits for any Retry-After.
        if duration_as_nanos_saturating(wait)
            > duration_as_nanos_saturating(config.max_retry_after())
        {
            return Err(GiveUpReason::RetryAfterTooLong);
        }
        if outcome
            .deadline
            .is_some_and(|deadline| deadline.has_passed(now.saturating_add(wait)))
        {
            return Err(GiveUpReason::RetryAfterBeyondDeadline);
        }
    }
    let backoff: Backoff = config.backoff();
    let drawn = backoff.delay(attempt, state.previous, &mut *env.rng);
    let delay = match retry_after {
        Some(wait) if wait > drawn => wait,
        _ => drawn,
    };
    let at = now.saturating_add(delay);
    if outcome
        .deadline
        .is_some_and(|deadline| deadline.has_passed(at))
    {
        return Err(GiveUpReason::DeadlineWouldPass);
    }
    Ok((at, drawn))
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::random::SeededRandom;
    use crate::rejection::RejectReason;
    use crate::retry::backoff::Strategy;
    use crate::retry::budget::{TokenBucket, TokenBucketConfig, Tokens};
    use crate::time::Deadline;

    const MS: Duration = Duration::from_millis(1);

    fn exp(max_attempts: u32) -> RetryConfig {
        // No jitter, so delays are exact: 10, 20, 40 ms after attempts 1, 2, 3.
        RetryConfig::new(
            max_attempts,
            Backoff::new(Strategy::Exponential, 5 * MS, 2_000 * MS).unwrap(),
        )
        .unwrap()
    }

    fn outcome(verdict: Verdict, attempt: u32) -> AttemptOutcome {
        AttemptOutcome {
            verdict,
            attempt,
            idempotent: false,
            deadline: None,
        }
    }

    fn decide_at<B: RetryBudget>(
        retry: &Retry<B>,
        state: &mut RetryState,
        o: AttemptOutcome,
        now: Instant,
    ) -> RetryDecision {
        let mut rng = SeededRandom::new(9);
        let mut env = Env::new(now, &mut rng);
        retry.decide(state, &o, &mut env)
    }

    #[test]
    fn answered_rejected_and_success_are_never_retried() {
        let r = Retry::unbudgeted(exp(10));
        let mut s = r.begin(Instant::ZERO);
        assert_eq!(
            decide_at(&r, &mut s, outcome(Verdict::Success, 1), Instant::ZERO),
            RetryDecision::Done
        );
        assert_eq!(
            decide_at(&r, &mut s, outcome(Verdict::Answered, 1), Instant::ZERO),
            RetryDecision::Done
        );
        for reason in RejectReason::ALL {
            let mut s = r.begin(Instant::ZERO);
            assert_eq!(
                decide_at(
                    &r,
                    &mut s,
                    outcome(Verdict::Rejected(reason), 1),
                    Instant::ZERO
                ),
                RetryDecision::GiveUp(GiveUpReason::NotRetryable(VerdictKind::Rejected))
            );
        }
    }

    #[test]
    fn timeout_is_retried_only_when_idempotent() {
        let r = Retry::unbudgeted(exp(3));
        let mut s = r.begin(Instant::ZERO);
        assert_eq!(
            decide_at(&r, &mut s, outcome(Verdict::Timeout, 1), Instant::ZERO),
            RetryDecision::GiveUp(GiveUpReason::NotRetryable(VerdictKind::Timeout))
        );
        let mut s = r.begin(Instant::ZERO);
        let o = AttemptOutcome {
            idempotent: true,
            ..outcome(Verdict::Timeout, 1)
        };
        assert_eq!(
            decide_at(&r, &mut s, o, Instant::ZERO),
            RetryDecision::RetryAt(Instant::from_millis(10))
        );
    }

    #[test]
    fn uncertain_is_retried_for_a_post_unless_set_idempotent_only() {
        use crate::retry::UncertainRetry;
        let post = outcome(Verdict::Uncertain, 1);
        let put = AttemptOutcome {
            idempotent: true,
            ..post
        };
        // Default (docs/design/spec.md §3.2): a POST answered 500 is retried after its backoff.
        let r = Retry::unbudgeted(exp(3));
        for o in [post, put] {
            let mut s = r.begin(Instant::ZERO);
            assert_eq!(
                decide_at(&r, &mut s, o, Instant::ZERO),
                RetryDecision::RetryAt(Instant::from_millis(10)),
                "{o:?}"
            );
        }
        // IdempotentOnly (RFC 9110 §9.2.2): the POST gives up, the PUT is still retried.
        let r = Retry::unbudgeted(exp(3).with_uncertain_retry(UncertainRetry::IdempotentOnly));
        let mut s = r.begin(Instant::ZERO);
        assert_eq!(
            decide_at(&r, &mut s, post, Instant::ZERO),
            RetryDecision::GiveUp(GiveUpReason::NotRetryable(VerdictKind::Uncertain))
        );
        let mut s = r.begin(Instant::ZERO);
        assert_eq!(
            decide_at(&r, &mut s, put, Instant::ZERO),
            RetryDecision::RetryAt(Instant::from_millis(10))
        );
    }

    #[test]
    fn exponential_schedule_then_attempts_exhausted() {
        let r = Retry::unbudgeted(exp(4));
        let mut s = r.begin(Instant::ZERO);
        let mut now = Instant::ZERO;
        for (attempt, wait) in [(1, 10), (2, 20), (3, 40)] {
            match decide_at(&r, &mut s, outcome(Verdict::Transient, attempt), now) {
                RetryDecision::RetryAt(at) => {
                    assert_eq!(at - now, wait * MS);
                    now = at;
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            decide_at(&r, &mut s, outcome(Verdict::Transient, 4), now),
            RetryDecision::GiveUp(GiveUpReason::AttemptsExhausted { attempts: 4 })
        );
    }

    #[test]
    fn one_attempt_means_no_retry() {
        let r = Retry::unbudgeted(exp(1));
        let mut s = r.begin(Instant::ZERO);
        assert_eq!(
            decide_at(
                &r,
                &mut s,
                outcome(Verdict::Overload { retry_after: None }, 1),
                Instant::ZERO
            ),
            RetryDecision::GiveUp(GiveUpReason::AttemptsExhausted { attempts: 1 })
        );
    }

    #[test]
    fn retry_after_is_a_floor_under_the_backoff() {
        let r = Retry::unbudgeted(exp(5));
        let long = Verdict::Overload {
            retry_after: Some(2 * Duration::from_secs(1)),
        };
        let short = Verdict::Overload {
            retry_after: Some(MS),
        };
        let mut s = r.begin(Instant::ZERO);
        assert_eq!(
            decide_at(&r, &mut s, outcome(long, 1), Instant::ZERO),
            RetryDecision::RetryAt(Instant::from_secs(2))
        );
        assert_eq!(
            s.previous_delay(),
            10 * MS,
            "the series continues from the backoff"
        );
        assert_eq!(
            decide_at(&r, &mut s, outcome(short, 2), Instant::from_secs(2)),
            RetryDecision::RetryAt(Instant::from_secs(2) + 20 * MS)
        );
    }

    #[test]
    fn the_delay_counts_against_the_deadline() {
        let r = Retry::unbudgeted(exp(5));
        let with = |deadline_ms: u64| AttemptOutcome {
            deadline: Some(Deadline::at(Instant::from_millis(deadline_ms))),
            ..outcome(Verdict::Transient, 1)
        };
        // The retry would start at 100 + 10 = 110 ms.
        let mut s = r.begin(Instant::ZERO);
        assert_eq!(
            decide_at(&r, &mut s, with(111), Instant::from_millis(100)),
            RetryDecision::RetryAt(Instant::from_millis(110))
        );
        let mut s = r.begin(Instant::ZERO);
        assert_eq!(
            decide_at(&r, &mut s, with(110), Instant::from_millis(100)),
            RetryDecision::GiveUp(GiveUpReason::DeadlineWouldPass),
            "an attempt cannot start at the instant the deadline passes"
        );
    }

    #[test]
    fn retry_after_beyond_the_deadline_gives_up_at_once() {
        let r = Retry::unbudgeted(exp(5));
        let o = |ra_ms: u32| AttemptOutcome {
            deadline: Some(Deadline::at(Instant::from_millis(500))),
            ..outcome(
                Verdict::Overload {
                    retry_after: Some(ra_ms * MS),
                },
                1,
            )
        };
        let mut s = r.begin(Instant::ZERO);
        assert_eq!(
            decide_at(&r, &mut s, o(500), Instant::ZERO),
            RetryDecision::GiveUp(GiveUpReason::RetryAfterBeyondDeadline)
        );
        let mut s = r.begin(Instant::ZERO);
        assert_eq!(
            decide_at(&r, &mut s, o(499), Instant::ZERO),
            RetryDecision::RetryAt(Instant::from_millis(499))
        );
        // Without a deadline, and with no cap, any Retry-After is honoured, even one to the
        // end of time.
        let uncapped = Retry::unbudgeted(exp(5).with_max_retry_after(Duration::MAX));
        let mut s = uncapped.begin(Instant::ZERO);
        let forever = outcome(
            Verdict::Overload {
                retry_after: Some(Duration::MAX),
            },
            1,
        );
        assert_eq!(
            decide_at(&uncapped, &mut s, forever, Instant::from_secs(1)),
            RetryDecision::RetryAt(Instant::MAX)
        );
    }

    #[test]
    fn retry_after_beyond_the_cap_gives_up_at_once() {
        let cap = Duration::from_secs(300);
        let r = Retry::unbudgeted(exp(5));
        assert_eq!(r.config().max_retry_after(), cap);
        let o = |ra: Duration, deadline: Option<Deadline>| AttemptOutcome {
            deadline,
            ..outcome(
                Verdict::Overload {
                    retry_after: Some(ra),
                },
                1,
            )
        };
        let now = Instant::from_secs(10);
        // At the cap: honoured. One nanosecond more: gives up, deadline or not.
        let mut s = r.begin(Instant::ZERO);
        assert_eq!(
            decide_at(&r, &mut s, o(cap, None), now),
            RetryDecision::RetryAt(now + cap)
        );
        for deadline in [
            None,
            Some(Deadline::at(Instant::from_secs(5))),
            Some(Deadline::at(Instant::MAX)),
        ] {
            let mut s = r.begin(Instant::ZERO);
            assert_eq!(
                decide_at(&r, &mut s, o(cap + Duration::from_nanos(1), deadline), now),
                RetryDecision::GiveUp(GiveUpReason::RetryAfterTooLong),
                "{deadline:?}"
            );
            // Still before the budget and the backoff: nothing drawn, nothing spent.
            assert_eq!(s.previous_delay(), 5 * MS);
        }
        // Issue 13 point 5: a 364-day Retry-After and no deadline.
        let mut s = r.begin(Instant::ZERO);
        assert_eq!(
            decide_at(&r, &mut s, o(Duration::from_secs(364 * 86_400), None), now),
            RetryDecision::GiveUp(GiveUpReason::RetryAfterTooLong)
        );
        // A cap of zero honours only "Retry-After: 0".
        let r0 = Retry::unbudgeted(exp(5).with_max_retry_after(Duration::ZERO));
        let mut s = r0.begin(Instant::ZERO);
        assert_eq!(
            decide_at(&r0, &mut s, o(Duration::ZERO, None), now),
            RetryDecision::RetryAt(now + 10 * MS)
        );
        let mut s = r0.begin(Instant::ZERO);
        assert_eq!(
            decide_at(&r0, &mut s, o(Duration::from_nanos(1), None), now),
            RetryDecision::GiveUp(GiveUpReason::RetryAfterTooLong)
        );
        // Attempts run out first: that is the reason, not the Retry-After.
        let r1 = Retry::unbudgeted(exp(1));
        let mut s = r1.begin(Instant::ZERO);
        assert_eq!(
            decide_at(&r1, &mut s, o(Duration::MAX, None), now),
            RetryDecision::GiveUp(GiveUpReason::AttemptsExhausted { attempts: 1 })
        );
    }

    #[test]
    fn the_budget_is_asked_only_when_a_retry_would_happen() {
        let grpc = TokenBucket::new(TokenBucketConfig::GRPC_A6_EXAMPLE).unwrap();
        let aws = TokenBucket::new(TokenBucketConfig::AWS_SDK_STANDARD).unwrap();
        let r_aws = Retry::new(exp(2), &aws);
        let mut s = r_aws.begin(Instant::ZERO);
        assert!(matches!(
            decide_at(
                &r_aws,
                &mut s,
                outcome(Verdict::Transient, 1),
                Instant::ZERO
            ),
            RetryDecision::RetryAt(_)
        ));
        assert_eq!(aws.balance(), Tokens::whole(495));
        // Attempts exhausted: not a budget matter, nothing spent.
        assert_eq!(
            decide_at(
                &r_aws,
                &mut s,
                outcome(Verdict::Transient, 2),
                Instant::ZERO
            ),
            RetryDecision::GiveUp(GiveUpReason::AttemptsExhausted { attempts: 2 })
        );
        assert_eq!(aws.balance(), Tokens::whole(495));
        // A gRPC bucket is charged for that last failure all the same.
        let r_grpc = Retry::new(exp(1), &grpc);
        let mut s = r_grpc.begin(Instant::ZERO);
        let _ = decide_at(
            &r_grpc,
            &mut s,
            outcome(Verdict::Transient, 1),
            Instant::ZERO,
        );
        assert_eq!(grpc.balance(), Tokens::whole(9));
        // Not retryable: charged nothing.
        let mut s = r_grpc.begin(Instant::ZERO);
        let _ = decide_at(&r_grpc, &mut s, outcome(Verdict::Timeout, 1), Instant::ZERO);
        assert_eq!(grpc.balance(), Tokens::whole(9));
    }

    #[test]
    fn budget_exceeded_is_its_own_reason() {
        let aws = TokenBucket::new(TokenBucketConfig {
            initial: Tokens::whole(5),
            ..TokenBucketConfig::AWS_SDK_STANDARD
        })
        .unwrap();
        let r = Retry::new(exp(3), &aws);
        let mut s = r.begin(Instant::ZERO);
        assert!(matches!(
            decide_at(&r, &mut s, outcome(Verdict::Transient, 1), Instant::ZERO),
            RetryDecision::RetryAt(_)
        ));
        assert_eq!(
            decide_at(&r, &mut s, outcome(Verdict::Transient, 2), Instant::ZERO),
            RetryDecision::GiveUp(GiveUpReason::BudgetExceeded)
        );
    }

    #[test]
    fn success_after_a_retry_refunds_its_cost() {
        let aws = TokenBucket::new(TokenBucketConfig::AWS_SDK_STANDARD).unwrap();
        let r = Retry::new(exp(3), &aws);
        let mut s = r.begin(Instant::ZERO);
        let o = AttemptOutcome {
            idempotent: true,
            ..outcome(Verdict::Timeout, 1)
        };
        let _ = decide_at(&r, &mut s, o, Instant::ZERO);
        assert_eq!(aws.balance(), Tokens::whole(490));
        assert_eq!(
            decide_at(&r, &mut s, outcome(Verdict::Success, 2), Instant::ZERO),
            RetryDecision::Done
        );
        assert_eq!(aws.balance(), Tokens::whole(500));
    }

    #[test]
    fn rejected_first_attempts_are_not_requests() {
        let ratio: crate::retry::budget::RatioBudget =
            crate::retry::budget::RatioBudget::new(Default::default()).unwrap();
        let r = Retry::new(exp(3), &ratio);
        let mut s = r.begin(Instant::ZERO);
        let _ = decide_at(
            &r,
            &mut s,
            outcome(Verdict::Rejected(RejectReason::CircuitOpen), 1),
            Instant::ZERO,
        );
        assert_eq!(ratio.counts(Instant::ZERO), (0, 0));
        let mut s = r.begin(Instant::ZERO);
        let _ = decide_at(&r, &mut s, outcome(Verdict::Answered, 1), Instant::ZERO);
        assert_eq!(ratio.counts(Instant::ZERO), (1, 0));
    }

    #[test]
    fn decorrelated_state_carries_the_previous_draw() {
        let cfg = RetryConfig::new(
            10,
            Backoff::new(Strategy::Decorrelated, 5 * MS, 2_000 * MS).unwrap(),
        )
        .unwrap();
        let r = Retry::unbudgeted(cfg);
        let mut s = r.begin(Instant::ZERO);
        assert_eq!(s.previous_delay(), 5 * MS);
        let mut now = Instant::ZERO;
        for attempt in 1..10 {
            let prev = s.previous_delay();
            match decide_at(&r, &mut s, outcome(Verdict::Transient, attempt), now) {
                RetryDecision::RetryAt(at) => {
                    let d = at - now;
                    assert!(
                        d >= 5 * MS && d <= (3 * prev).min(2_000 * MS),
                        "{d:?} after {prev:?}"
                    );
                    assert_eq!(s.previous_delay(), d);
                    now = at;
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn time_edges_never_panic() {
        let r = Retry::unbudgeted(RetryConfig::DEFAULT);
        for now in [
            Instant::ZERO,
            Instant::MAX,
            Instant::from_secs(365 * 86_400),
        ] {
            let mut s = r.begin(now);
            let o = AttemptOutcome {
                deadline: Some(Deadline::at(Instant::ZERO)),
                ..outcome(Verdict::Transient, 1)
            };
            assert_eq!(
                decide_at(&r, &mut s, o, now),
                RetryDecision::GiveUp(GiveUpReason::DeadlineWouldPass)
            );
            let mut s = r.begin(now);
            let d = decide_at(&r, &mut s, outcome(Verdict::Transient, 1), now);
            assert!(
                matches!(d, RetryDecision::RetryAt(at) if at >= now),
                "{d:?}"
            );
        }
        // A driver repeating attempt numbers cannot stall the count.
        let r = Retry::unbudgeted(exp(3));
        let mut s = r.begin(Instant::ZERO);
        let _ = decide_at(&r, &mut s, outcome(Verdict::Transient, 1), Instant::ZERO);
        let _ = decide_at(&r, &mut s, outcome(Verdict::Transient, 1), Instant::ZERO);
        assert_eq!(
            decide_at(&r, &mut s, outcome(Verdict::Transient, 1), Instant::ZERO),
            RetryDecision::GiveUp(GiveUpReason::AttemptsExhausted { attempts: 3 })
        );
    }
}
