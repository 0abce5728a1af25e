//! The resilix simulator: reproduces the published results the spec rests on with the real
//! core policies, a manual timeline and seeded randomness.
//!
//! ```text
//! sim [EXPERIMENT...] [--check] [--quick] [--out DIR] [--seeds N] [--master SEED]
//! sim run [--model flaky|capacity|occ] [--clients N] [--rate R] [--failure P] ...
//! ```
//! Run `sim --help` for everything.

// Without the experiments only the engine and its tests are built.
#![forbid(unsafe_code)]
#![cfg_attr(not(feature = "experiments"), allow(dead_code))]

mod cli;
#[cfg(feature = "experiments")]
mod custom;
mod engine;
#[cfg(feature = "experiments")]
mod exp;
mod net;
mod observer;
mod occ;
mod queue;
mod report;
mod rng;
mod scenario;
mod stack;
mod svg;
mod upstream;

use std::process::ExitCode;
#[cfg(feature = "experiments")]
use std::time::Instant as WallClock;

#[cfg(feature = "experiments")]
use report::{checks_table, write_all};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match cli::parse(&args) {
        Err(e) => {
            eprintln!("sim: {e}\n\n{}", cli::HELP);
            ExitCode::from(2)
        }
        Ok(cli::Command::Help) => {
            println!("{}", cli::HELP);
            ExitCode::SUCCESS
        }
        Ok(cli::Command::Scenario(opts)) => {
            let command = format!("sim {}", args.join(" "));
            match scenario::main(&opts, &command) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::FAILURE,
                Err(e) => {
                    eprintln!("sim scenario: {e}");
                    ExitCode::from(2)
                }
            }
        }
        #[cfg(not(feature = "experiments"))]
        Ok(_) => {
            eprintln!(
                "sim: built without the `experiments` feature (the bare engine only); build \
                 with the default features"
            );
            ExitCode::from(2)
        }
        #[cfg(feature = "experiments")]
        Ok(cli::Command::Custom(opts)) => match custom::run(&opts) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("sim run: {e}");
                ExitCode::from(2)
            }
        },
        #[cfg(feature = "experiments")]
        Ok(cli::Command::Experiments(opts)) => experiments(&opts, &args),
    }
}

#[cfg(feature = "experiments")]
fn experiments(opts: &cli::ExpOptions, args: &[String]) -> ExitCode {
    let started = WallClock::now();
    let ctx = exp::Ctx {
        quick: opts.quick,
        master: opts.master,
        seeds: opts.seeds,
    };
    let mut sections = Vec::new();
    for (name, f) in exp::ALL {
        if opts.which.iter().any(|w| w == "all" || w == name) {
            eprintln!("running {name} ...");
            let s = f(&ctx);
            eprintln!(
                "  {name}: {:.1} s, {} checks, {} failed",
                s.seconds,
                s.checks.len(),
                s.failed()
            );
            sections.push(s);
        }
    }
    for s in &sections {
        println!("\n== {} — {}", s.id, s.title);
        for t in &s.tables {
            println!("{}", t.text());
        }
    }
    let table = checks_table(&sections);
    println!("\n{}", table.text());
    let failed: usize = sections.iter().map(|s| s.failed()).sum();
    let total: usize = sections.iter().map(|s| s.checks.len()).sum();
    // An experiment that checked nothing proves nothing: under --check it fails the run.
    let empty: Vec<&str> = sections
        .iter()
        .filter(|s| s.checks.is_empty())
        .map(|s| s.id)
        .collect();
    let profile = if opts.quick { "quick" } else { "full" };
    let command = format!("sim {}", args.join(" "));
    if let Err(e) = write_all(&opts.out, &sections, profile, command.trim()) {
        eprintln!("sim: cannot write {}: {e}", opts.out.display());
        return ExitCode::from(2);
    }
    println!(
        "{total} checks, {failed} failed, {} experiment(s) without checks{}; profile {profile}; {:.1} s; report in {}",
        empty.len(),
        if empty.is_empty() {
            String::new()
        } else {
            format!(" ({})", empty.join(", "))
        },
        started.elapsed().as_secs_f64(),
        opts.out.join("REPORT.md").display()
    );
    if opts.check && (failed > 0 || !empty.is_empty()) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
