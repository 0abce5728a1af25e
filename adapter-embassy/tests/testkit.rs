//! The public test kit's scripted upstream and recorder on embassy's timer (the host `std`
//! driver, real time, a few milliseconds): the same script as on the synchronous and tokio
//! drivers, the same events.

use core::time::Duration;

use embassy_futures::block_on;
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
    let out = block_on(execute(
        &pipeline,
        &timer,
        &mut SeededRandom::new(1),
        &recorder,
        CallOptions::default(),
        &ResultClassifier::new(),
        || upstream.call(&timer),
    ));
    assert_eq!(out.unwrap(), Ok("body"));
    assert!(
        timer.now().saturating_duration_since(start) >= ms(5),
        "both latencies slept"
    );
    recorder.assert_sequence(&[
        Kind::Executed(VerdictKind::Transient),
        Kind::RetryScheduled(2),
        Kind::Executed(VerdictKind::Success),
    ]);
}
