//! Reloading a config file while traffic flows, and flipping a breaker by hand.
//!
//! ```sh
//! cargo run -p resilix-config --example reload            # two seconds a phase
//! cargo run -p resilix-config --example reload -- --quick # 200 ms a phase (CI)
//! ```
//!
//! Clients call through the `payments` pipeline of a [`Live`](resilix_config::Live) config
//! the whole time; the file is rewritten under them: a good change (applied, the breaker and
//! the budget kept), an invalid one (rejected, traffic goes on), the breaker forced open by
//! hand (calls refused), and a change to the breaker's table (a fresh, closed breaker).
//! `config/tests/reload_example.rs` runs the same scenario on paused time and asserts it.

mod scenario;

#[tokio::main]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let dir = std::env::temp_dir().join(format!("resilix-reload-example-{}", std::process::id()));
    let options = if quick {
        scenario::Options::quick(dir.clone())
    } else {
        scenario::Options::full(dir.clone())
    };
    println!("config file: {}", dir.join("resilience.toml").display());
    let steps = scenario::run(options, |step| println!("{step}")).await;
    std::fs::remove_dir_all(&dir).ok();
    let problems = scenario::check(&steps);
    if problems.is_empty() {
        println!("ok: every step went as the scenario says");
    } else {
        for p in &problems {
            eprintln!("unexpected: {p}");
        }
        std::process::exit(1);
    }
}
