//! An axum server that sheds load with 503 + `Retry-After` instead of queueing it, through
//! resilix's tower Layer, and a reqwest load generator (in the same program) that shows the
//! effect. It starts its own server on 127.0.0.1, sends three waves of requests, prints a
//! summary and exits by itself.
//!
//! The `/work` route runs through a pipeline with a bulkhead (at most 3 handlers at once) and
//! a per-attempt timeout. A request the bulkhead refuses is answered at once with 503 and a
//! `Retry-After`, so the latency of the requests the server admits stays flat however many
//! arrive (the essay: shedding early is what keeps the work you accept fast). The bulkhead is
//! owned by an `Arc` (no `static`), so it can be inspected after the run.
//!
//! ```sh
//! cargo run -p resilix-tokio --example shedding_server --features tower,http
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant as StdInstant};

use axum::Router;
use axum::body::Body;
use axum::error_handling::HandleErrorLayer;
use axum::http::{Request, StatusCode};
use axum::response::{IntoResponse, Response};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::pipeline::Pipeline;
use resilix_tokio::Resilience;
use resilix_tokio::http::retry_after_value;
use resilix_tokio::tower::{BoxError, ResilienceLayer, ServiceError};
use tokio::net::TcpListener;
use tower::{ServiceBuilder, service_fn};

/// The real work: 100 ms of it.
async fn work(_: Request<()>) -> Result<Response, BoxError> {
    tokio::time::sleep(Duration::from_millis(100)).await;
    Ok("done".into_response())
}

/// Turns what stopped a request into its answer: a refusal is a 503 saying when to come back.
async fn shed(error: BoxError) -> Response {
    match error
        .downcast_ref::<ServiceError>()
        .and_then(|e| e.rejection())
    {
        Some(rejection) => {
            let wait = retry_after_value(&rejection, resilix_tokio::now(), Duration::from_secs(1));
            let reason = rejection.reason().code();
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [("retry-after", wait)],
                reason,
            )
                .into_response()
        }
        None => (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response(),
    }
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let handlers = Arc::new(Bulkhead::new(BulkheadConfig::new(3)?));
    let pipeline = Pipeline::new()
        .bulkhead(handlers.clone())
        .attempt_timeout(Duration::from_millis(500));
    let work = ServiceBuilder::new()
        .layer(HandleErrorLayer::new(shed))
        // The handler needs no body, and the Layer retries by cloning the request.
        .map_request(|request: Request<Body>| request.map(|_| ()))
        .layer(ResilienceLayer::new(Resilience::new(Box::new(pipeline))))
        .service(service_fn(work));
    let app = Router::new().route_service("/work", work);

    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    println!("shedding server on http://{addr} (3 handlers at once)");

    // Load: three waves of 10 concurrent clients, 250 ms apart.
    let client = reqwest::Client::new();
    let (mut served, mut refused) = (0, 0);
    for wave in 1..=3 {
        let started = StdInstant::now();
        let mut clients = Vec::new();
        for _ in 0..10 {
            let client = client.clone();
            clients.push(tokio::spawn(async move {
                let t = StdInstant::now();
                let response = client.get(format!("http://{addr}/work")).send().await;
                (response, t.elapsed())
            }));
        }
        let (mut ok, mut shed) = (0, 0);
        let (mut ok_latency, mut shed_latency) = (Duration::ZERO, Duration::ZERO);
        for c in clients {
            let (response, took) = c.await?;
            let response = response?;
            match response.status().as_u16() {
                200 => {
                    ok += 1;
                    ok_latency = ok_latency.max(took);
                }
                503 => {
                    shed += 1;
                    shed_latency = shed_latency.max(took);
                    if wave == 1 && shed == 1 {
                        let after = response.headers()["retry-after"].to_str()?.to_owned();
                        let body = response.text().await?;
                        println!("  shed example: 503 {body:?}, Retry-After: {after}");
                    }
                }
                other => println!("  unexpected {other}"),
            }
        }
        println!(
            "wave {wave}: {ok} served (slowest {ok_latency:?}), {shed} shed with 503 (slowest {shed_latency:?}), wave took {:?}",
            started.elapsed()
        );
        served += ok;
        refused += shed;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    println!(
        "summary: {served} served, {refused} shed; the bulkhead holds {} slot(s) at the end",
        handlers.held()
    );
    Ok(())
}
