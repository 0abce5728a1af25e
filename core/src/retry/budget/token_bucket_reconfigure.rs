//! Changing a running token bucket's settings.
//!
//! Every setting may change in place: none changes what the balance means (thousandths of a
//! token). The balance carries over at the change instant, in the same compare-and-swap that
//! makes the new slot the one in force:
//!
//! * **A lowered capacity clamps the balance to it** (ours, the rate limiter's rule for its
//!   burst): the operator asked for at most that many retries' worth in reserve, and keeping
//!   a larger balance until it is spent would grant retries the new setting forbids. What is
//!   clamped away is gone; a later raise does not bring it back.
//! * **A raised capacity keeps the balance**: nothing is refilled, the room above fills from
//!   deposits at the new rates.
//! * `initial` is what a bucket holds when built or [reset](TokenBucket::reset): it changes
//!   where a later reset lands, never the balance now.
//!
//! **In flight.** A retry granted before the change was paid for at the old cost; whatever
//! settles after the change settles under the new settings: a success deposits the new
//! amount (a `RefundCost` success refunds the cost *now* in force for its verdict, capped at
//! the new capacity like every deposit), a failure is charged the new cost. The bucket keeps
//! no per-retry record (the budget's interface carries none), so this is the only rule it can
//! keep exactly: a retry that straddles a change of cost is refunded the new cost, which may
//! differ from what it paid by the difference of the two costs.

use super::{BALANCE, TokenBucket, TokenBucketConfig};
use crate::control::emit_reconfigured;
use crate::observe::{Observer, PolicyKind};
use crate::permit::Env;
use crate::random::Random;
use crate::retry::budget::BudgetConfigError;
use crate::sync::Ordering;

impl TokenBucket {
    /// Puts `config` in force at `env.now` and emits [`Event::PolicyReconfigured`] with
    /// `PolicyKind::RetryBudget`. Every setting may change. The balance carries over in the
    /// same compare-and-swap that switches the settings, so a spend or deposit racing the
    /// change runs wholly under the old settings and balance or wholly under the new ones:
    ///
    /// * a lowered capacity clamps the balance to it (a larger reserve would grant retries
    ///   the new setting forbids); a later raise does not bring the clamped tokens back;
    /// * a raised capacity keeps the balance (nothing is refilled);
    /// * `initial` only moves where a later [reset](TokenBucket::reset) lands.
    ///
    /// **In flight.** Whatever settles after the change settles under the new settings: a
    /// retry granted before it (paid at the old cost) that succeeds is refunded the cost now
    /// in force under [`RetrySuccess::RefundCost`](super::RetrySuccess::RefundCost), capped at the new capacity like every
    /// deposit; the bucket keeps no record per retry. Reconfigurations do not queue: one
    /// racing another is [`TokenBucketReconfigureError::Busy`] (nothing waits).
    ///
    /// ```
    /// use resilix::permit::Env;
    /// use resilix::random::SeededRandom;
    /// use resilix::retry::budget::{RetryBudget, TokenBucket, TokenBucketConfig, Tokens};
    /// use resilix::time::Instant;
    /// use resilix::VerdictKind;
    ///
    /// let bucket = TokenBucket::aws_sdk_standard(); // 500 tokens, a retry costs 5
    /// let mut rng = SeededRandom::new(1);
    /// let mut env = Env::new(Instant::ZERO, &mut rng);
    /// let smaller = TokenBucketConfig {
    ///     capacity: Tokens::whole(20),
    ///     initial: Tokens::whole(20),
    ///     ..TokenBucketConfig::AWS_SDK_STANDARD
    /// };
    /// bucket.reconfigure(smaller, &mut env).unwrap();
    /// assert_eq!(bucket.balance(), Tokens::whole(20), "clamped to the new capacity");
    /// let granted = (0..10).filter(|_| bucket.try_spend(env.now, VerdictKind::Transient)).count();
    /// assert_eq!(granted, 4);
    /// ```
    ///
    /// [`Event::PolicyReconfigured`]: crate::observe::Event::PolicyReconfigured
    pub fn reconfigure<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        config: TokenBucketConfig,
        env: &mut Env<'_, R, O>,
    ) -> Result<(), TokenBucketReconfigureError> {
        config
            .validate()
            .map_err(TokenBucketReconfigureError::Config)?;
        if self
            .reconfiguring
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return Err(TokenBucketReconfigureError::Busy);
        }
        let mut word = self.balance.load(Ordering::Acquire);
        let spare = (word >> 31) ^ 1;
        // Only spends holding a word from before the last switch read the spare slot; their
        // compare-and-swap fails, the slot bit having moved since.
        self.slots[spare as usize].store(&config);
        let capacity = config.capacity.as_milli();
        loop {
            let carried = (word & BALANCE).min(capacity);
            // AcqRel: the slot's stores happen before every load of the word that names it.
            match self.balance.compare_exchange_weak(
                word,
                (spare << 31) | carried,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break,
                // Only the holder of `reconfiguring` flips the slot bit: still the old slot.
                Err(actual) => word = actual,
            }
        }
        self.reconfiguring.store(false, Ordering::Release);
        emit_reconfigured(PolicyKind::RetryBudget, env);
        Ok(())
    }
}

/// Why [`TokenBucket::reconfigure`] changed nothing: the one reconfigure error, over this policy's config error.
pub type TokenBucketReconfigureError = crate::control::ReconfigureError<BudgetConfigError>;

#[cfg(all(test, not(loom)))]
mod tests {
    extern crate std;
    use super::*;
    use crate::observe::Event;
    use crate::random::SeededRandom;
    use crate::retry::budget::{Charge, RetryBudget, RetrySuccess, Tokens};
    use crate::time::Instant;
    use crate::verdict::VerdictKind;
    use core::cell::RefCell;
    use std::vec::Vec;

    const T: VerdictKind = VerdictKind::Transient;
    const NOW: Instant = Instant::from_secs(3);
    const AWS: TokenBucketConfig = TokenBucketConfig::AWS_SDK_STANDARD;

    struct Log(RefCell<Vec<Event>>);
    impl Observer for Log {
        fn on_event(&self, e: &Event) {
            self.0.borrow_mut().push(*e);
        }
    }

    fn apply(
        b: &TokenBucket,
        c: TokenBucketConfig,
    ) -> (Result<(), TokenBucketReconfigureError>, Vec<Event>) {
        let log = Log(RefCell::new(Vec::new()));
        let mut rng = SeededRandom::new(1);
        let mut env = Env::new(NOW, &mut rng).with_observer(&log);
        let r = b.reconfigure(c, &mut env);
        (r, log.0.into_inner())
    }

    fn with_capacity(whole: u32) -> TokenBucketConfig {
        TokenBucketConfig {
            capacity: Tokens::whole(whole),
            initial: Tokens::whole(whole.min(500)),
            ..AWS
        }
    }

    #[test]
    fn a_lowered_capacity_clamps_the_balance_and_a_raise_does_not_bring_it_back() {
        let b = TokenBucket::new(AWS).unwrap();
        assert!(b.try_spend(NOW, T));
        assert_eq!(b.balance(), Tokens::whole(495));
        let (r, events) = apply(&b, with_capacity(100));
        assert_eq!(r, Ok(()));
        assert_eq!(
            events,
            [Event::PolicyReconfigured {
                policy: PolicyKind::RetryBudget,
                at: NOW
            }]
        );
        assert_eq!(b.balance(), Tokens::whole(100));
        assert_eq!(b.config(), with_capacity(100));
        assert_eq!(apply(&b, AWS).0, Ok(()));
        assert_eq!(b.balance(), Tokens::whole(100), "a raise refills nothing");
        for _ in 0..1_000 {
            b.record_success(NOW, None);
        }
        assert_eq!(
            b.balance(),
            Tokens::whole(500),
            "deposits fill to the new capacity"
        );
    }

    #[test]
    fn each_change_is_written_to_the_slot_not_in_force() {
        // A spend may still be reading the slot in force when a change begins; only the spare
        // slot may be written, and the switch names it. So the slot bit alternates, and the
        // slot left behind keeps the config it had.
        let b = TokenBucket::new(AWS).unwrap();
        let in_force = |b: &TokenBucket| b.balance.load(Ordering::Acquire) >> 31;
        assert_eq!(in_force(&b), 0);
        assert_eq!(apply(&b, with_capacity(100)).0, Ok(()));
        assert_eq!(in_force(&b), 1);
        assert_eq!(b.slots[0].load(), AWS, "the old slot untouched");
        assert_eq!(apply(&b, with_capacity(200)).0, Ok(()));
        assert_eq!(in_force(&b), 0);
        assert_eq!(
            b.slots[1].load(),
            with_capacity(100),
            "the old slot untouched"
        );
        assert_eq!(b.config(), with_capacity(200));
    }

    #[test]
    fn a_balance_under_the_new_capacity_carries_over_exactly() {
        let b = TokenBucket::new(AWS).unwrap();
        for _ in 0..90 {
            assert!(b.try_spend(NOW, T));
        }
        assert_eq!(b.balance(), Tokens::whole(50));
        assert_eq!(apply(&b, with_capacity(60)).0, Ok(()));
        assert_eq!(b.balance(), Tokens::whole(50));
        assert_eq!(apply(&b, with_capacity(50)).0, Ok(()));
        assert_eq!(b.balance(), Tokens::whole(50), "at the capacity: kept");
    }

    #[test]
    fn new_costs_and_deposits_apply_from_the_next_operation() {
        let b = TokenBucket::new(with_capacity(20)).unwrap();
        let dearer = TokenBucketConfig {
            retry_cost: Tokens::whole(10),
            first_try_success: Tokens::whole(3),
            ..with_capacity(20)
        };
        assert_eq!(apply(&b, dearer).0, Ok(()));
        assert!(b.try_spend(NOW, T));
        assert!(b.try_spend(NOW, T));
        assert!(!b.try_spend(NOW, T), "20 tokens pay for two retries at 10");
        b.record_success(NOW, None);
        assert_eq!(b.balance(), Tokens::whole(3));
        let floored = TokenBucketConfig {
            floor: Tokens::whole(2),
            retry_cost: Tokens::whole(1),
            ..dearer
        };
        assert_eq!(apply(&b, floored).0, Ok(()));
        assert!(b.try_spend(NOW, T), "3 − 1 ≥ the new floor of 2");
        assert!(!b.try_spend(NOW, T));
    }

    #[test]
    fn a_retry_granted_before_the_change_is_refunded_at_the_cost_in_force() {
        // The AWS SDK refunds a successful retry's cost: the cost when it settles.
        let b = TokenBucket::new(with_capacity(20)).unwrap();
        assert!(b.try_spend(NOW, T), "paid 5");
        assert_eq!(b.balance(), Tokens::whole(15));
        let cheaper = TokenBucketConfig {
            retry_cost: Tokens::whole(2),
            ..with_capacity(20)
        };
        assert_eq!(apply(&b, cheaper).0, Ok(()));
        b.record_success(NOW, Some(T));
        assert_eq!(
            b.balance(),
            Tokens::whole(17),
            "refunded 2, the cost in force"
        );
        // A refund never lifts the balance above the capacity in force.
        let dear = TokenBucketConfig {
            retry_cost: Tokens::whole(10),
            ..with_capacity(20)
        };
        assert_eq!(apply(&b, dear).0, Ok(()));
        b.record_success(NOW, Some(T));
        assert_eq!(b.balance(), Tokens::whole(20));
    }

    #[test]
    fn the_charge_and_the_retry_success_rule_change_too() {
        let b = TokenBucket::new(with_capacity(20)).unwrap();
        b.record_unretried_failure(NOW, T);
        assert_eq!(b.balance(), Tokens::whole(20), "GrantedRetry: free");
        let grpc_like = TokenBucketConfig {
            charge: Charge::EveryFailure,
            retry_success: RetrySuccess::Deposit(Tokens::milli(100)),
            ..with_capacity(20)
        };
        assert_eq!(apply(&b, grpc_like).0, Ok(()));
        b.record_unretried_failure(NOW, T);
        assert_eq!(b.balance(), Tokens::whole(15), "EveryFailure: charged");
        b.record_success(NOW, Some(T));
        assert_eq!(b.balance(), Tokens::milli(15_100));
        assert_eq!(b.config(), grpc_like);
    }

    #[test]
    fn a_reset_after_a_change_lands_on_the_new_initial() {
        let b = TokenBucket::new(AWS).unwrap();
        let c = TokenBucketConfig {
            initial: Tokens::whole(7),
            ..with_capacity(50)
        };
        assert_eq!(apply(&b, c).0, Ok(()));
        assert_eq!(b.balance(), Tokens::whole(50));
        let mut rng = SeededRandom::new(1);
        b.reset(&mut Env::new(NOW, &mut rng));
        assert_eq!(b.balance(), Tokens::whole(7));
        assert_eq!(b.config(), c, "the reset kept the slot");
    }

    #[test]
    fn an_invalid_config_and_a_racing_writer_change_nothing() {
        let b = TokenBucket::new(AWS).unwrap();
        assert!(b.try_spend(NOW, T));
        let cases = [
            (
                TokenBucketConfig {
                    capacity: Tokens::ZERO,
                    initial: Tokens::ZERO,
                    ..AWS
                },
                BudgetConfigError::ZeroCapacity,
            ),
            (
                TokenBucketConfig {
                    capacity: Tokens::milli(u32::MAX),
                    ..AWS
                },
                BudgetConfigError::CapacityAboveMax,
            ),
            (
                TokenBucketConfig {
                    floor: Tokens::whole(499),
                    ..AWS
                },
                BudgetConfigError::FloorUnreachable,
            ),
        ];
        for (c, e) in cases {
            assert_eq!(
                apply(&b, c),
                (Err(TokenBucketReconfigureError::Config(e)), Vec::new())
            );
        }
        b.reconfiguring.store(true, Ordering::Release);
        assert_eq!(
            apply(&b, with_capacity(10)),
            (Err(TokenBucketReconfigureError::Busy), Vec::new())
        );
        b.reconfiguring.store(false, Ordering::Release);
        assert_eq!((b.balance(), b.config()), (Tokens::whole(495), AWS));
    }

    /// Spenders and depositors on two threads while a third switches between two configs
    /// (capacities both above any balance the run reaches, floors differing): every change of
    /// the balance lands in exactly one of them, so the final balance is the books' to the
    /// thousandth: nothing created, nothing lost across the switches.
    #[test]
    fn many_threads_keep_the_books_across_changes() {
        use std::sync::atomic::{AtomicU32 as StdU32, Ordering as O};
        let a = TokenBucketConfig {
            retry_cost: Tokens::milli(1),
            first_try_success: Tokens::milli(1),
            initial: Tokens::whole(500),
            ..with_capacity(2_000)
        };
        let b_config = TokenBucketConfig {
            capacity: Tokens::whole(1_500),
            floor: Tokens::milli(1),
            ..a
        };
        let b = TokenBucket::new(a).unwrap();
        let (granted, deposited) = (StdU32::new(0), StdU32::new(0));
        std::thread::scope(|scope| {
            for t in 0..2 {
                let (b, granted, deposited) = (&b, &granted, &deposited);
                scope.spawn(move || {
                    for i in 0..20_000 {
                        if (i + t) % 3 != 0 {
                            if b.try_spend(NOW, T) {
                                granted.fetch_add(1, O::Relaxed);
                            }
                        } else {
                            b.record_success(NOW, None);
                            deposited.fetch_add(1, O::Relaxed);
                        }
                    }
                });
            }
            let b = &b;
            scope.spawn(move || {
                let mut rng = SeededRandom::new(1);
                let mut env = Env::new(NOW, &mut rng);
                for i in 0..2_001 {
                    b.reconfigure(if i % 2 == 0 { b_config } else { a }, &mut env)
                        .unwrap();
                }
            });
        });
        assert_eq!(b.config(), b_config);
        let books = 500_000 - granted.load(O::Relaxed) + deposited.load(O::Relaxed);
        assert_eq!(b.balance(), Tokens::milli(books));
    }
}
