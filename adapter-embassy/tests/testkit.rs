//! The public test kit's scripted upstream and recorder on embassy's timer (the mock driver,
//! simulated time: `common::run`): the same script as on the synchronous and tokio drivers, the
//! same events, and the exact elapsed time.

use core::time::Duration;

mod common;

use resilix::VerdictKind;
use resilix::call::CallOptions;
use resilix::classify::ResultClassifier;
use resilix::execute::{Timer, execute};
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::retry::{Backoff, Retry, RetryConfig};
use resilix_embassy::EmbassyTimer;
use resilix_testkit::recorder::{Kind, Recorder};
use resilix_testkit::upstream::ScriptedUpstream;

#[test]
fn a_scripted_upstream_on_embassys_timer() {
    let ms = Duration::from_millis;
    let upstream = ScriptedUpstream::new()
        .then(ms(2), Err("reset"))
        .then(ms(3), Ok("body"));
    let pipeline = Pipeline::new().retry(Retry::unbudgeted(
        RetryConfig::new(2, Backoff::NONE).unwrap(),
    ));
    let recorder = Recorder::new();
    let timer = EmbassyTimer;
    let start = timer.now();
    let out = common::run(execute(
        &pipeline,
        &timer,
        &mut SeededRandom::new(1),
        &recorder,
        CallOptions::default(),
        &ResultClassifier::new(),
        || upstream.call(&timer),
    ));
    assert_eq!(out.unwrap(), Ok("body"));
    assert_eq!(
        timer.now().saturating_duration_since(start),
        ms(5),
        "both latencies slept, no more"
    );
    recorder.assert_sequence(&[
        Kind::Executed(VerdictKind::Transient),
        Kind::RetryScheduled(2),
        Kind::Executed(VerdictKind::Success),
    ]);
}
