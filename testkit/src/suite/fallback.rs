//! Fallback: a static value, then the last known good.

use resilix::call::CallOptions;
use resilix::execute::Timer;
use resilix::fallback::{Fallback, KnownGood};
use resilix::observe::{Degradation, Event};
use resilix::pipeline::Pipeline;
use resilix::resilience::{FixedSeeds, Resilience};
use resilix::retry::{GiveUpReason, NoRetry};
use resilix::{RejectReason, Rejection};

use super::{Counting, Log};

/// The pipeline the fallback scenario hands to an adapter: no retry, a gate that can refuse.
pub type GatePipeline<'a> = Pipeline<NoRetry, (), (), (), &'a Counting, ()>;

/// The store every adapter's last-known-good keeps for the [`fallback`] scenario.
pub type Store<'a> = &'a dyn KnownGood<Result<u32, &'static str>>;

/// One call through `pipeline` (reporting to `log`) whose operation returns `result`, through
/// the core's front end on the adapter's `timer`, answered by the adapter's `store`, else
/// `default`. Returns the answer and, if the fallback gave it, why.
async fn serve<Tm: Timer + Clone>(
    timer: &Tm,
    store: Store<'_>,
    pipeline: &GatePipeline<'_>,
    log: &Log,
    result: Result<u32, &'static str>,
    default: u32,
) -> (u32, Option<Degradation>) {
    let resilience =
        Resilience::with_parts(pipeline, timer.clone(), FixedSeeds::new(5)).observer(log);
    let served = resilience
        .call(CallOptions::default())
        .run_or(
            Fallback::LastKnownGoodOr(store, Ok(default)),
            || async move { result },
        )
        .await
        .expect("a default is always there");
    let cause = served.degradation();
    (served.into_inner().expect("fallbacks are successes"), cause)
}

/// Fallback: a static value until a good answer was seen, then the last known good; used on
/// refusal and on give-up, never on success, and always visible as an event.
pub async fn fallback<Tm: Timer + Clone>(timer: &Tm, store: Store<'_>) {
    let gate = Counting::default();
    let pipeline: GatePipeline<'_> = Pipeline::new().bulkhead(&gate);
    let log = Log::default();
    let fallbacks = |log: &Log| {
        log.events()
            .iter()
            .filter_map(|e| match e {
                Event::FallbackServed { cause } => Some(*cause),
                _ => None,
            })
            .collect::<Vec<_>>()
    };

    // Nothing good seen yet: a failure is answered by the static default.
    let out = serve(timer, store, &pipeline, &log, Err("down"), 7).await;
    let gave_up = Degradation::GaveUp(GiveUpReason::AttemptsExhausted { attempts: 1 });
    assert_eq!(out, (7, Some(gave_up)));
    assert_eq!(fallbacks(&log), [gave_up]);

    // A fresh answer is served as is and remembered.
    let out = serve(timer, store, &pipeline, &log, Ok(42), 7).await;
    assert_eq!(out, (42, None));
    assert_eq!(fallbacks(&log).len(), 1, "a fresh answer is not a fallback");

    // Refused: the last known good answers, and says why.
    gate.refuse(true);
    let out = serve(timer, store, &pipeline, &log, Ok(99), 7).await;
    let refused = Degradation::Refused(Rejection::new(RejectReason::BulkheadFull));
    assert_eq!(out, (42, Some(refused)));
    gate.refuse(false);

    // Gave up: the last known good again.
    let out = serve(timer, store, &pipeline, &log, Err("down"), 7).await;
    assert_eq!(out, (42, Some(gave_up)));
    assert_eq!(fallbacks(&log), [gave_up, refused, gave_up]);
    assert_eq!(gate.counts().held, 0);
}
