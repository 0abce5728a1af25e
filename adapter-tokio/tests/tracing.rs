//! The `tracing` observer, checked with a minimal in-memory subscriber: which events come out,
//! at which level, with which fields, and nested under the call's span.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::call::CallOptions;
use resilix::pipeline::Pipeline;
use resilix_tokio::tracing::{TracingObserver, call_span};
use resilix_tokio::{Fallback, Resilience, Served};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Instrument, Level, Metadata, Subscriber};

/// One recorded event: its level, its fields (the message under "message") and the name of
/// the span it happened in.
#[derive(Clone, Debug)]
struct Recorded {
    level: Level,
    fields: BTreeMap<String, String>,
    span: Option<String>,
}

/// A span's name and fields.
type SpanInfo = (String, BTreeMap<String, String>);

#[derive(Default)]
struct Memory {
    events: Mutex<Vec<Recorded>>,
    spans: Mutex<BTreeMap<u64, SpanInfo>>,
    current: Mutex<Vec<u64>>,
    next: AtomicU64,
    metadata: Mutex<BTreeMap<u64, &'static Metadata<'static>>>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
}

#[derive(Clone, Default)]
struct Recorder(Arc<Memory>);

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let id = self.0.next.fetch_add(1, Ordering::Relaxed) + 1;
        let mut fields = BTreeMap::new();
        span.record(&mut Fields(&mut fields));
        let name = span.metadata().name().to_owned();
        self.0.metadata.lock().unwrap().insert(id, span.metadata());
        self.0.spans.lock().unwrap().insert(id, (name, fields));
        Id::from_u64(id)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        if let Some((_, fields)) = self.0.spans.lock().unwrap().get_mut(&span.into_u64()) {
            values.record(&mut Fields(fields));
        }
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let span = self.0.current.lock().unwrap().last().map(|id| {
            let spans = self.0.spans.lock().unwrap();
            let (name, span_fields) = &spans[id];
            format!("{name}{{upstream={}}}", span_fields["upstream"])
        });
        self.0.events.lock().unwrap().push(Recorded {
            level: *event.metadata().level(),
            fields,
            span,
        });
    }
    fn current_span(&self) -> tracing_core::span::Current {
        let current = self.0.current.lock().unwrap().last().copied();
        match current {
            Some(id) => {
                let metadata = self.0.metadata.lock().unwrap()[&id];
                tracing_core::span::Current::new(Id::from_u64(id), metadata)
            }
            None => tracing_core::span::Current::none(),
        }
    }
    fn enter(&self, span: &Id) {
        self.0.current.lock().unwrap().push(span.into_u64());
    }
    fn exit(&self, _: &Id) {
        self.0.current.lock().unwrap().pop();
    }
}

fn run<F: std::future::Future>(recorder: &Recorder, f: F) -> F::Output {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    tracing::subscriber::with_default(recorder.clone(), || runtime.block_on(f))
}

#[test]
fn each_attempt_is_a_debug_event_inside_the_call_span() {
    let recorder = Recorder::default();
    let pipeline = Pipeline::new();
    let resilience = Resilience::new(&pipeline).observer(TracingObserver::new("inventory"));
    let out = run(&recorder, async {
        resilience
            .execute(CallOptions::default(), || async { Ok::<u32, ()>(1) })
            .instrument(call_span("inventory"))
            .await
    });
    assert_eq!(out, Ok(1));
    let events = recorder.0.events.lock().unwrap().clone();
    let settled: Vec<_> = events
        .iter()
        .filter(|e| e.fields.get("message").map(String::as_str) == Some("attempt settled"))
        .collect();
    assert_eq!(settled.len(), 1, "one attempt, one event: {events:?}");
    let e = settled[0];
    assert_eq!(e.level, Level::DEBUG);
    assert_eq!(e.fields["upstream"], "inventory");
    assert_eq!(e.fields["verdict"], "success");
    assert_eq!(
        e.span.as_deref(),
        Some("resilix.call{upstream=inventory}"),
        "nested under the call's span"
    );
}

#[test]
fn a_refusal_and_the_fallback_that_answers_it_are_warnings() {
    let recorder = Recorder::default();
    let bulkhead = Bulkhead::new(BulkheadConfig::new(1).unwrap());
    let pipeline = Pipeline::new().bulkhead(&bulkhead);
    let resilience = Resilience::new(&pipeline).observer(TracingObserver::new("pricing"));
    let _held = bulkhead.try_admit().unwrap();
    let out = run(&recorder, async {
        resilience
            .call(CallOptions::default())
            .run_or(Fallback::Value(Ok(5)), || async { Ok::<u32, ()>(1) })
            .await
    });
    assert!(matches!(out, Ok(Served::Fallback { value: Ok(5), .. })));
    let events = recorder.0.events.lock().unwrap().clone();
    let warnings: Vec<_> = events.iter().filter(|e| e.level == Level::WARN).collect();
    assert_eq!(warnings.len(), 2, "{events:?}");
    assert_eq!(warnings[0].fields["reason"], "bulkhead-full");
    assert_eq!(warnings[0].fields["upstream"], "pricing");
    assert!(warnings[0].fields["message"].starts_with("refused: "));
    assert_eq!(
        warnings[1].fields["message"],
        "degraded: the fallback answered"
    );
    assert!(
        warnings[1].fields["cause"].contains("BulkheadFull"),
        "the cause names the refusal: {:?}",
        warnings[1].fields
    );
    assert!(
        !events.iter().any(|e| e.level == Level::DEBUG
            && e.fields.get("message").map(String::as_str) == Some("attempt settled")),
        "a refused call made no attempt"
    );
}

#[test]
fn a_sample_is_one_info_event_per_gauge_and_a_reset_is_reported() {
    use resilix::breaker::Breaker;
    use resilix::observe::Observer;
    use resilix::permit::Env;
    use resilix::random::SeededRandom;
    use resilix::throttler::Throttler;
    use resilix::time::Instant;

    let recorder = Recorder::default();
    let pipeline = Pipeline::new()
        .breaker(Breaker::default())
        .bulkhead(Bulkhead::default());
    let observer = TracingObserver::new("inventory");
    let throttler = Throttler::with_defaults();
    tracing::subscriber::with_default(recorder.clone(), || {
        observer.sample(&pipeline, Instant::ZERO);
        let mut rng = SeededRandom::new(1);
        let o: &dyn Observer = &observer;
        throttler.reset(&mut Env::new(Instant::ZERO, &mut rng).with_observer(o));
    });
    let events = recorder.0.events.lock().unwrap().clone();
    let gauges: Vec<(String, String)> = events
        .iter()
        .filter(|e| e.fields.get("message").map(String::as_str) == Some("gauge"))
        .map(|e| {
            assert_eq!(e.level, Level::INFO);
            assert_eq!(e.fields["upstream"], "inventory");
            (e.fields["gauge"].clone(), e.fields["value"].clone())
        })
        .collect();
    assert_eq!(
        gauges,
        [
            ("resilix_circuit_state".to_owned(), "0.0".to_owned()),
            ("resilix_bulkhead_in_use".to_owned(), "0.0".to_owned()),
        ]
    );
    let reset = events
        .iter()
        .find(|e| e.fields.get("policy").map(String::as_str) == Some("throttler"))
        .expect("the reset is an event");
    assert_eq!(reset.level, Level::INFO);
}

/// One burst of 10,000 refusals in a second is two lines: the first refusal in full (its wait
/// as a duration from now), then, once the interval has passed, one line with the count.
#[test]
fn a_burst_of_refusals_is_summarised_with_its_count() {
    use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
    use std::time::Duration;

    let recorder = Recorder::default();
    let limiter = RateLimiter::new(RateLimitConfig::new(Rate::per_hour(1)).with_burst(1)).unwrap();
    let pipeline = Pipeline::new().rate_limit(&limiter);
    let resilience = Resilience::new(&pipeline).observer(TracingObserver::new("search"));
    run(&recorder, async {
        let call = || resilience.execute(CallOptions::default(), || async { Ok::<u32, ()>(1) });
        assert!(call().await.is_ok(), "the one cell");
        for _ in 0..10_000 {
            assert!(call().await.is_err());
            tokio::time::advance(Duration::from_micros(100)).await;
        }
        tokio::time::advance(Duration::from_secs(10)).await;
        assert!(
            call().await.is_err(),
            "the first refusal after the interval"
        );
    });
    let events = recorder.0.events.lock().unwrap().clone();
    let warnings: Vec<_> = events.iter().filter(|e| e.level == Level::WARN).collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].fields["message"].starts_with("refused: "));
    let retry_in = &warnings[0].fields["retry_in"];
    assert!(
        retry_in.starts_with("Some(") && retry_in.ends_with("s)") && !retry_in.contains("Instant"),
        "a wait from now, not an instant: {retry_in}"
    );
    assert_eq!(warnings[1].fields["refused"], "10000");
    assert_eq!(warnings[1].fields["reason"], "rate-limited");
    assert!(warnings[1].fields["message"].contains("10000 calls"));
}

/// What was counted and not yet written comes out on flush, and a quiet burst is not repeated.
#[test]
fn flush_writes_the_pending_count() {
    use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
    use resilix_tokio::tracing::RefusalLog;
    use std::time::Duration;

    let recorder = Recorder::default();
    let limiter = RateLimiter::new(RateLimitConfig::new(Rate::per_hour(1)).with_burst(1)).unwrap();
    let pipeline = Pipeline::new().rate_limit(&limiter);
    let log = RefusalLog {
        level: Level::INFO,
        interval: Duration::from_secs(60),
    };
    let observer = TracingObserver::with_refusal_log("search", log);
    let resilience = Resilience::new(&pipeline).observer(&observer);
    run(&recorder, async {
        let _ = resilience
            .execute(CallOptions::default(), || async { Ok::<u32, ()>(1) })
            .await;
        for _ in 0..5 {
            let _ = resilience
                .execute(CallOptions::default(), || async { Ok::<u32, ()>(1) })
                .await;
        }
        observer.flush();
        observer.flush();
    });
    let events = recorder.0.events.lock().unwrap().clone();
    let lines: Vec<_> = events
        .iter()
        .filter(|e| e.level == Level::INFO && e.fields.contains_key("reason"))
        .collect();
    assert_eq!(
        lines.len(),
        2,
        "the first, then the flushed count once: {lines:?}"
    );
    assert_eq!(lines[1].fields["refused"], "4");
}

/// A breaker in shadow mode, forced open: the call is made, and the log says what the breaker
/// would have done, marked as shadow.
#[test]
fn a_shadow_refusal_is_logged_as_shadow_and_the_call_is_made() {
    use resilix::breaker::Breaker;
    use resilix::permit::Env;
    use resilix::random::SeededRandom;
    use resilix::shadow::Shadow;

    let recorder = Recorder::default();
    let breaker = Shadow::new(Breaker::default());
    let mut rng = SeededRandom::new(1);
    breaker
        .policy()
        .force_open(&mut Env::new(resilix::time::Instant::ZERO, &mut rng));
    let pipeline = Pipeline::new().breaker(&breaker);
    let resilience = Resilience::new(&pipeline).observer(TracingObserver::new("search"));
    let out = run(&recorder, async {
        resilience
            .execute(CallOptions::default(), || async { Ok::<u32, ()>(7) })
            .await
    });
    assert_eq!(out, Ok(7), "the call went through");
    let events = recorder.0.events.lock().unwrap().clone();
    let warnings: Vec<_> = events.iter().filter(|e| e.level == Level::WARN).collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].fields["shadow"], "true");
    assert_eq!(warnings[0].fields["reason"], "circuit-open");
    assert!(warnings[0].fields["message"].starts_with("would refuse"));
}

/// The call's span carries OpenTelemetry's `http.request.resend_count`: the retries made.
#[test]
fn the_call_span_counts_resends() {
    use resilix::retry::{Backoff, Retry, RetryConfig};

    let recorder = Recorder::default();
    let pipeline = Pipeline::new().retry(Retry::unbudgeted(
        RetryConfig::new(3, Backoff::NONE).unwrap(),
    ));
    let resilience = Resilience::new(&pipeline).observer(TracingObserver::new("inventory"));
    let calls = std::sync::atomic::AtomicU32::new(0);
    let out = run(&recorder, async {
        resilience
            .execute(CallOptions::default(), || async {
                let n = calls.fetch_add(1, Ordering::Relaxed);
                if n < 2 { Err(()) } else { Ok(n) }
            })
            .instrument(call_span("inventory"))
            .await
    });
    assert_eq!(out, Ok(2));
    let spans = recorder.0.spans.lock().unwrap();
    let (_, fields) = spans.values().next().expect("the call's span");
    assert_eq!(
        fields.get("http.request.resend_count").map(String::as_str),
        Some("2")
    );
}
