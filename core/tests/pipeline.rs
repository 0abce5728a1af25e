//! The pipeline's order, its short-circuit on the first refusal, and that settle and drop reach
//! exactly the policies that admitted.

use core::cell::{Cell, RefCell};
use core::time::Duration;

use resilix::observe::{Event, Observer};
use resilix::permit::{Env, Permit, Policy};
use resilix::pipeline::Pipeline;
use resilix::random::{Random, SeededRandom};
use resilix::time::Instant;
use resilix::{RejectReason, Rejection, Verdict};

type Journal = RefCell<Vec<String>>;

/// A policy that writes what happens to it into a shared journal.
struct Named<'j> {
    name: &'static str,
    refuse: Cell<Option<RejectReason>>,
    journal: &'j Journal,
}

impl<'j> Named<'j> {
    fn new(name: &'static str, journal: &'j Journal) -> Self {
        Named {
            name,
            refuse: Cell::new(None),
            journal,
        }
    }
    fn note(&self, what: &str) {
        self.journal
            .borrow_mut()
            .push(format!("{} {what}", self.name));
    }
}

struct NamedPermit<'a, 'j> {
    policy: &'a Named<'j>,
    done: bool,
}

impl<'j> Policy for Named<'j> {
    type Permit<'a>
        = NamedPermit<'a, 'j>
    where
        Self: 'a;
    fn admit<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        _env: &mut Env<'_, R, O>,
    ) -> Result<NamedPermit<'_, 'j>, Rejection> {
        if let Some(reason) = self.refuse.get() {
            self.note("refuses");
            return Err(Rejection::new(reason));
        }
        self.note("admits");
        Ok(NamedPermit {
            policy: self,
            done: false,
        })
    }
}

impl Permit for NamedPermit<'_, '_> {
    fn settle<R: Random + ?Sized, O: Observer + ?Sized>(
        mut self,
        v: &Verdict,
        _env: &mut Env<'_, R, O>,
    ) {
        self.done = true;
        self.policy.note(&format!("settles {}", v.kind()));
    }
}

impl Drop for NamedPermit<'_, '_> {
    fn drop(&mut self) {
        if !self.done {
            self.policy.note("cancelled");
        }
    }
}

#[derive(Default)]
struct Log(RefCell<Vec<Event>>);
impl Observer for Log {
    fn on_event(&self, event: &Event) {
        self.0.borrow_mut().push(*event);
    }
}

fn lines(j: &Journal) -> Vec<String> {
    j.borrow_mut().drain(..).collect()
}

#[test]
fn admits_in_spec_order_and_settles_innermost_first() {
    let j = Journal::default();
    let (t, b, l, h, r) = (
        Named::new("throttler", &j),
        Named::new("breaker", &j),
        Named::new("limiter", &j),
        Named::new("bulkhead", &j),
        Named::new("rate", &j),
    );
    let p = Pipeline::new()
        .throttler(&t)
        .breaker(&b)
        .limiter(&l)
        .bulkhead(&h)
        .rate_limit(&r);
    let mut rng = SeededRandom::new(1);
    let log = Log::default();
    let mut env = Env::new(Instant::from_millis(10), &mut rng).with_observer(&log);
    let attempt = p.admit(&mut env, None).unwrap();
    assert_eq!(
        lines(&j),
        [
            "throttler admits",
            "breaker admits",
            "limiter admits",
            "bulkhead admits",
            "rate admits"
        ]
    );
    env.now = Instant::from_millis(25);
    let took = attempt.settle(&Verdict::Transient, &mut env);
    assert_eq!(took, Duration::from_millis(15));
    assert_eq!(
        lines(&j),
        [
            "rate settles transient",
            "bulkhead settles transient",
            "limiter settles transient",
            "breaker settles transient",
            "throttler settles transient"
        ]
    );
    assert_eq!(
        *log.0.borrow(),
        [Event::Executed {
            verdict: Verdict::Transient,
            duration: Duration::from_millis(15)
        }]
    );
}

#[test]
fn the_first_refusal_short_circuits_and_cancels_only_those_that_admitted() {
    let j = Journal::default();
    let (t, b, l, h, r) = (
        Named::new("throttler", &j),
        Named::new("breaker", &j),
        Named::new("limiter", &j),
        Named::new("bulkhead", &j),
        Named::new("rate", &j),
    );
    h.refuse.set(Some(RejectReason::BulkheadFull));
    r.refuse.set(Some(RejectReason::RateLimited));
    let p = Pipeline::new()
        .throttler(&t)
        .breaker(&b)
        .limiter(&l)
        .bulkhead(&h)
        .rate_limit(&r);
    let mut rng = SeededRandom::new(1);
    let log = Log::default();
    let mut env = Env::new(Instant::ZERO, &mut rng).with_observer(&log);
    let err = p.admit(&mut env, None).err().unwrap();
    assert_eq!(
        err.reason(),
        RejectReason::BulkheadFull,
        "the outer refusal wins"
    );
    let got = lines(&j);
    assert_eq!(
        &got[..4],
        [
            "throttler admits",
            "breaker admits",
            "limiter admits",
            "bulkhead refuses"
        ]
    );
    let mut cancelled: Vec<_> = got[4..].to_vec();
    cancelled.sort();
    assert_eq!(
        cancelled,
        [
            "breaker cancelled",
            "limiter cancelled",
            "throttler cancelled"
        ],
        "rate limiter never asked"
    );
    assert_eq!(
        *log.0.borrow(),
        [Event::Rejected { rejection: err }],
        "only the rejection hook hears a refusal"
    );
}

#[test]
fn a_dropped_attempt_cancels_every_permit_and_reports_nothing() {
    let j = Journal::default();
    let (t, b) = (Named::new("throttler", &j), Named::new("breaker", &j));
    let p = Pipeline::new().throttler(&t).breaker(&b);
    let mut rng = SeededRandom::new(1);
    let log = Log::default();
    let mut env = Env::new(Instant::ZERO, &mut rng).with_observer(&log);
    let attempt = p.admit(&mut env, None).unwrap();
    lines(&j);
    drop(attempt);
    let mut got = lines(&j);
    got.sort();
    assert_eq!(got, ["breaker cancelled", "throttler cancelled"]);
    assert!(log.0.borrow().is_empty());
}

#[test]
fn a_rejected_verdict_settles_but_never_reaches_the_execution_hook() {
    let j = Journal::default();
    let t = Named::new("throttler", &j);
    let p = Pipeline::new().throttler(&t);
    let mut rng = SeededRandom::new(1);
    let log = Log::default();
    let mut env = Env::new(Instant::ZERO, &mut rng).with_observer(&log);
    let attempt = p.admit(&mut env, None).unwrap();
    attempt.settle(&Verdict::Rejected(RejectReason::LimiterFull), &mut env);
    assert_eq!(
        lines(&j),
        ["throttler admits", "throttler settles rejected"]
    );
    assert!(
        log.0.borrow().is_empty(),
        "a nested refusal is not an execution"
    );
}

#[test]
fn attempt_deadline_is_the_tighter_of_timeout_and_call_deadline() {
    use resilix::time::Deadline;
    let p = Pipeline::new().attempt_timeout(Duration::from_millis(300));
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(Instant::from_secs(1), &mut rng);
    let loose = Deadline::at(Instant::from_secs(5));
    let tight = Deadline::at(Instant::from_millis(1_100));
    assert_eq!(
        p.admit(&mut env, Some(loose)).unwrap().deadline(),
        Some(Deadline::at(Instant::from_millis(1_300)))
    );
    assert_eq!(
        p.admit(&mut env, Some(tight)).unwrap().deadline(),
        Some(tight)
    );
    assert_eq!(
        p.admit(&mut env, None).unwrap().deadline(),
        Some(Deadline::at(Instant::from_millis(1_300)))
    );
    let bare = Pipeline::new();
    assert_eq!(bare.admit(&mut env, None).unwrap().deadline(), None);
    assert_eq!(
        bare.admit(&mut env, Some(tight)).unwrap().deadline(),
        Some(tight)
    );
    // At the end of time the timeout saturates instead of wrapping.
    env.now = Instant::MAX;
    assert_eq!(
        p.admit(&mut env, None).unwrap().deadline(),
        Some(Deadline::at(Instant::MAX))
    );
}

#[test]
fn every_config_error_is_an_error_with_a_message() {
    fn is_error<E: core::error::Error>(e: E) -> String {
        e.to_string()
    }
    use resilix::retry::{
        RetryConfig,
        budget::{TokenBucket, TokenBucketConfig},
    };
    let retry = RetryConfig::new(0, RetryConfig::DEFAULT.backoff());
    assert!(!is_error(retry.unwrap_err()).is_empty());
    let zero = TokenBucketConfig {
        capacity: resilix::retry::budget::Tokens::whole(0),
        ..TokenBucketConfig::AWS_SDK_STANDARD
    };
    let bucket = TokenBucket::new(zero);
    assert!(!is_error(bucket.err().unwrap()).is_empty());
}
