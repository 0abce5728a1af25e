//! A reqwest client calling a flaky axum server on loopback through a resilix pipeline.
//!
//! The server (started here, on 127.0.0.1) answers 503 + `Retry-After` to a share of requests
//! and answers others slowly, with an outage in the middle. The client's pipeline retries with
//! full jitter under a token-bucket budget and has a circuit breaker, a bulkhead and a
//! per-attempt timeout, all owned by `Arc`s (no `static`, no leak). Each GET has a 600 ms
//! deadline, so a `Retry-After: 1` is beyond it and ends the call at once; a last-known-good
//! price is served when the pipeline stops a call. Then a POST that the server breaks after
//! reading it is retried safely, because it carries an idempotency key: the server sees the
//! same key twice and charges once. Every policy decision is printed as it happens, then a
//! summary. It exits by itself.
//!
//! ```sh
//! cargo run -p resilix-tokio --example flaky_client --features reqwest
//! ```

use std::collections::HashSet;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use reqwest::Method;
use resilix::breaker::{Breaker, CallRing, Config as BreakerConfig};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::classify::ResultClassifier;
use resilix::observe::{Event, Observer};
use resilix::pipeline::Pipeline;
use resilix::random::{Random, SeededRandom};
use resilix::retry::budget::{TokenBucket, TokenBucketConfig};
use resilix::retry::{Backoff, Retry, RetryConfig, Strategy};
use resilix_tokio::http::{HttpResponse, IdempotencyKey, call_options};
use resilix_tokio::reqwest::{RequestBuilderExt, classify_error};
use resilix_tokio::{Error, LastKnownGood, Resilience, deadline_in};
use tokio::net::TcpListener;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Prints what each policy did, and counts it.
#[derive(Default)]
struct Narrator {
    refused: AtomicU32,
    executed: AtomicU32,
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
                let kind = verdict.kind().as_str();
                println!("    attempt   {kind:<9} in {duration:?}");
            }
            Event::CircuitTransition {
                from, to, cause, ..
            } => {
                println!("    breaker   {from:?} -> {to:?} ({cause:?})")
            }
            Event::RetryScheduled {
                attempt,
                delay,
                after,
            } => {
                let after = after.kind().as_str();
                println!("    retry     attempt {attempt} in {delay:?} (after {after})")
            }
            Event::RetryRefused { reason, .. } => println!("    no retry  {reason}"),
            _ => {}
        }
    }
}

/// The flaky upstream's state: how many price requests it has had, its dice, and the
/// idempotency keys of the orders it has charged.
#[derive(Clone)]
struct Upstream {
    prices: Arc<AtomicU32>,
    dice: Arc<Mutex<SeededRandom>>,
    orders: Arc<Mutex<Vec<Option<String>>>>,
}

/// `GET /price`: 15% 503 with Retry-After, 15% slow (300 ms), an outage from the 12th to the
/// 20th request, the rest fast 200s.
async fn price(State(up): State<Upstream>) -> Response {
    let n = up.prices.fetch_add(1, Ordering::Relaxed);
    let roll = up.dice.lock().unwrap().below(100);
    if (12..20).contains(&n) || roll < 15 {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [("retry-after", "1")],
            "busy",
        )
            .into_response();
    }
    if roll < 30 {
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    format!("price={}", 100 + n).into_response()
}

/// A body that fails on its first poll: the server read the order, then the connection broke.
struct Broken;

impl futures_core::Stream for Broken {
    type Item = Result<Bytes, io::Error>;
    fn poll_next(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(Some(Err(io::Error::other("the connection broke"))))
    }
}

/// `POST /order`: the first one breaks after it was read (the client cannot know whether it
/// was charged); an order whose key was seen before is not charged again.
async fn order(State(up): State<Upstream>, headers: HeaderMap) -> Response {
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut orders = up.orders.lock().unwrap();
    let first_time = key.is_none() || !orders.contains(&key);
    orders.push(key);
    if orders.len() == 1 {
        return Response::new(Body::from_stream(Broken));
    }
    if first_time {
        "charged"
    } else {
        "already charged"
    }
    .into_response()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), BoxError> {
    let upstream = Upstream {
        prices: Arc::default(),
        dice: Arc::new(Mutex::new(SeededRandom::new(2024))),
        orders: Arc::default(),
    };
    let app = Router::new()
        .route("/price", get(price))
        .route("/order", post(order))
        .with_state(upstream.clone());
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    println!("flaky server on http://{addr}");

    // One budget and one breaker for the upstream, shared by `Arc`.
    let budget = Arc::new(TokenBucket::new(TokenBucketConfig::AWS_SDK_STANDARD)?);
    let breaker_config = BreakerConfig {
        minimum_calls: 8,
        open_wait: Duration::from_millis(250),
        ..BreakerConfig::DEFAULT
    };
    // The last 16 calls, in one 32-bit word of outcomes.
    let breaker = Breaker::<CallRing<1>>::count_based(breaker_config, 16).expect("a valid breaker");
    let breaker = Arc::new(breaker);
    let backoff = Backoff::new(
        Strategy::FullJitter,
        Duration::from_millis(20),
        Duration::from_millis(200),
    )?;
    let pipeline = Pipeline::new()
        .retry(Retry::new(RetryConfig::new(3, backoff)?, budget.clone()))
        .breaker(breaker.clone())
        .bulkhead(Arc::new(Bulkhead::new(BulkheadConfig::new(4)?)))
        .attempt_timeout(Duration::from_millis(150));
    let narrator = Narrator::default();
    let resilience = Resilience::new(&pipeline)
        .classifier(HttpResponse)
        .observer(&narrator);
    let client = reqwest::Client::new();
    let last_price = LastKnownGood::new();

    let (mut fresh, mut degraded) = (0, 0);
    for i in 1..=30 {
        println!("request {i}");
        let options =
            call_options(&Method::GET, None).deadline(deadline_in(Duration::from_millis(600)));
        let outcome = resilience
            .execute(options, || {
                client.get(format!("http://{addr}/price")).send()
            })
            .await;
        match outcome {
            Ok(response) if response.status() == 200 => {
                fresh += 1;
                let body = response.text().await?;
                println!("  -> 200 {body}");
                last_price.set(body);
            }
            Ok(response) => println!("  -> {} (the upstream's answer)", response.status()),
            Err(Error::Upstream { error, .. }) => println!("  -> transport error: {error}"),
            Err(stopped) => {
                degraded += 1;
                let cached = last_price.get().unwrap_or_else(|| "price=unknown".into());
                println!("  -> stopped ({stopped}); serving last known good: {cached}");
            }
        }
        tokio::time::sleep(Duration::from_millis(60)).await;
    }

    // A POST is not idempotent: a failure after sending is retried only because the key
    // tells the server to charge at most once. One key for the logical call, every attempt.
    println!("order");
    // Another endpoint, another breaker; the same process-wide retry budget.
    let order_pipeline = Pipeline::new()
        .retry(Retry::new(RetryConfig::new(3, backoff)?, budget.clone()))
        .breaker(Arc::new(Breaker::new(BreakerConfig::DEFAULT)?))
        .attempt_timeout(Duration::from_millis(150));
    let orders = Resilience::new(&order_pipeline)
        .classifier(ResultClassifier::with_errors(classify_error))
        .observer(&narrator);
    let key = IdempotencyKey::for_call(&orders);
    let ordered = orders
        .execute(call_options(&Method::POST, Some(&key)), || async {
            let request = client
                .post(format!("http://{addr}/order"))
                .idempotency_key(&key);
            request.send().await?.error_for_status()?.text().await
        })
        .await;
    let seen = upstream.orders.lock().unwrap().clone();
    let distinct: HashSet<_> = seen.iter().collect();
    let answer = match ordered {
        Ok(body) => body,
        Err(Error::Upstream { error, .. }) => format!("error: {error}"),
        Err(stopped) => format!("stopped: {stopped}"),
    };
    println!(
        "order: {answer:?}; the server saw {} attempt(s) carrying {} distinct key(s)",
        seen.len(),
        distinct.len()
    );

    println!(
        "summary: {fresh} fresh 200s, {degraded} degraded answers; {} attempts sent, {} refused by a policy; budget {:?}, breaker {:?}",
        narrator.executed.load(Ordering::Relaxed),
        narrator.refused.load(Ordering::Relaxed),
        budget.balance(),
        breaker.state(),
    );
    Ok(())
}
