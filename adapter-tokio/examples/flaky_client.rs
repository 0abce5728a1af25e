//! An HTTP client calling a flaky loopback server through a resilix pipeline in a tower stack.
//!
//! The server (started here, on 127.0.0.1) answers 503 + `Retry-After` to a share of requests
//! and answers others slowly. The client's pipeline retries with full jitter under a token
//! bucket budget, and has a circuit breaker, a bulkhead and a per-attempt timeout; each request
//! has a 600 ms deadline, so a `Retry-After: 1` is beyond it and ends the call at once. A
//! last-known-good answer is served when the pipeline stops a call. Every policy decision is
//! printed as it happens, then a summary. It exits by itself.
//!
//! ```sh
//! cargo run -p resilix-tokio --example flaky_client --features tower,http
//! ```

#[path = "support/http1.rs"]
mod http1;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resilix::breaker::{Breaker, CallRing, Config as BreakerConfig};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::call::CallOptions;
use resilix::observe::{Event, Observer};
use resilix::pipeline::Pipeline;
use resilix::random::{Random, SeededRandom};
use resilix::retry::budget::{TokenBucket, TokenBucketConfig};
use resilix::retry::{Backoff, Retry, RetryConfig, Strategy};
use resilix_tokio::http::HttpResponse;
use resilix_tokio::tower::{BoxError, ResilienceLayer, ServiceError};
use resilix_tokio::{Fallback, LastKnownGood, Resilience, Served};
use tokio::net::TcpListener;
use tower::{ServiceBuilder, ServiceExt, service_fn};

/// Prints what each policy did, and counts it.
#[derive(Default)]
struct Narrator {
    refused: AtomicU32,
    executed: AtomicU32,
    fallbacks: AtomicU32,
}

impl Observer for Narrator {
    fn on_event(&self, event: &Event) {
        match event {
            Event::Rejected { rejection } => {
                self.refused.fetch_add(1, Ordering::Relaxed);
                println!("    refused   {rejection}");
            }
            Event::Executed { verdict, duration } => {
                self.executed.fetch_add(1, Ordering::Relaxed);
                println!(
                    "    attempt   {:<9} in {duration:?}",
                    verdict.kind().as_str()
                );
            }
            Event::CircuitTransition {
                from, to, cause, ..
            } => {
                println!("    breaker   {from:?} -> {to:?} ({cause:?})")
            }
            Event::FallbackServed { cause } => {
                self.fallbacks.fetch_add(1, Ordering::Relaxed);
                println!("    fallback  answered, because {cause:?}");
            }
            Event::RetryScheduled {
                attempt,
                delay,
                after,
            } => println!(
                "    retry     attempt {attempt} in {delay:?} (after {})",
                after.kind().as_str()
            ),
            Event::RetryRefused { reason, .. } => println!("    no retry  {reason}"),
            other => println!("    event     {other:?}"),
        }
    }
}

/// The flaky upstream: 30% 503 with Retry-After, 20% slow (300 ms), the rest fast 200s.
async fn flaky_server() -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let served = Arc::new(AtomicU32::new(0));
    tokio::spawn(async move {
        let mut rng = SeededRandom::new(2024);
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let roll = rng.below(100);
            let n = served.fetch_add(1, Ordering::Relaxed);
            tokio::spawn(async move {
                let _ = http1::read_request(&mut stream).await;
                // A bad patch in the middle: every request fails, so the breaker opens.
                let outage = (12..20).contains(&n);
                if outage || roll < 30 {
                    let _ =
                        http1::respond(&mut stream, 503, &[("Retry-After", "1".into())], "busy")
                            .await;
                } else {
                    if roll < 50 {
                        tokio::time::sleep(Duration::from_millis(300)).await;
                    }
                    let _ =
                        http1::respond(&mut stream, 200, &[], &format!("price={}", 100 + n)).await;
                }
            });
        }
    });
    Ok(addr)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), BoxError> {
    let addr = flaky_server().await?;
    println!("flaky server on http://{addr}");

    static BREAKER: Breaker<CallRing<1>> = match Breaker::count_based(
        BreakerConfig {
            minimum_calls: 8,
            open_wait: Duration::from_millis(250),
            ..BreakerConfig::DEFAULT
        },
        16,
    ) {
        Ok(b) => b,
        Err(_) => panic!("invalid breaker config"),
    };
    static BULKHEAD: Bulkhead = Bulkhead::new(match BulkheadConfig::new(4) {
        Ok(c) => c,
        Err(_) => panic!("invalid bulkhead config"),
    });
    static NARRATOR: std::sync::LazyLock<Narrator> = std::sync::LazyLock::new(Narrator::default);

    static BUDGET: std::sync::LazyLock<TokenBucket> = std::sync::LazyLock::new(|| {
        TokenBucket::new(TokenBucketConfig::AWS_SDK_STANDARD).expect("a valid preset")
    });
    let backoff = Backoff::new(
        Strategy::FullJitter,
        Duration::from_millis(20),
        Duration::from_millis(200),
    )
    .expect("a valid backoff");
    let config = RetryConfig::new(3, backoff).expect("a valid retry config");
    let retry = Retry::new(config, &*BUDGET);
    let pipeline = Pipeline::new()
        .retry(retry)
        .breaker(&BREAKER)
        .bulkhead(&BULKHEAD)
        .attempt_timeout(Duration::from_millis(150));
    let resilience = Arc::new(
        Resilience::new(Box::new(pipeline))
            .classifier(HttpResponse)
            .observer(&*NARRATOR),
    );
    let client = ServiceBuilder::new()
        .layer(
            ResilienceLayer::shared(Arc::clone(&resilience))
                .timeout(Duration::from_millis(600))
                // GETs are safe to repeat after a timeout.
                .idempotent(true),
        )
        .service(service_fn(move |path: &'static str| http1::get(addr, path)));
    let last_price = LastKnownGood::new();

    let mut fresh = 0;
    let mut degraded = 0;
    for i in 1..=30 {
        println!("request {i}");
        // Through tower: the error says exactly what stopped the call.
        match client.clone().oneshot("/price").await {
            Ok(response) if response.status() == 200 => {
                fresh += 1;
                last_price.set(response.body().clone());
                println!("  -> 200 {}", response.body());
            }
            Ok(response) => println!("  -> {} (the upstream's answer)", response.status()),
            Err(e) => match e.downcast_ref::<ServiceError>() {
                Some(stopped) => {
                    // The same degradation a fallback would report.
                    let cause = stopped.degradation();
                    NARRATOR.on_event(&Event::FallbackServed { cause });
                    degraded += 1;
                    let cached = last_price.get().unwrap_or_else(|| "price=unknown".into());
                    println!("  -> stopped ({stopped}); serving last known good: {cached}");
                }
                None => println!("  -> transport error: {e}"),
            },
        }
        tokio::time::sleep(Duration::from_millis(60)).await;
    }

    // The same pipeline without tower: `execute_or` does the fallback itself.
    let cache = LastKnownGood::new();
    let served = resilience
        .execute_or(
            CallOptions::default(),
            Fallback::LastKnownGoodOr(&cache, Ok(http::Response::new("price=unknown".into()))),
            // Outputs are remembered by cloning: share the error.
            || async move { http1::get(addr, "/price").await.map_err(Arc::new) },
        )
        .await?;
    match served {
        Served::Fresh(r) => println!("execute_or: fresh {:?}", r.map(|r| r.into_body())),
        Served::Fallback { value, cause } => {
            println!(
                "execute_or: fallback {:?} because {cause:?}",
                value.map(|r| r.into_body())
            )
        }
    }

    println!(
        "\nsummary: {fresh} fresh 200s, {degraded} degraded answers; {} attempts sent, {} refused by a policy, {} fallbacks",
        NARRATOR.executed.load(Ordering::Relaxed),
        NARRATOR.refused.load(Ordering::Relaxed),
        NARRATOR.fallbacks.load(Ordering::Relaxed),
    );
    Ok(())
}
