//! Command-line parsing with std only.

use std::path::PathBuf;
use std::time::Duration;

use resilix::retry::Strategy;

use crate::engine::ClientKind;
use crate::net::{Delay, parse_duration};

pub const HELP: &str = "\
resilix simulator: reproduces published retry, jitter, budget and throttling results with the
real resilix policies on a simulated timeline.

USAGE
  sim [EXPERIMENT...] [--check] [--quick] [--out DIR] [--seeds N] [--master SEED]
  sim run [OPTIONS]          one custom run, printed and written as CSV/JSON
  sim scenario FILE.toml [--quick] [--check] [--out DIR] [--pipeline P.toml]
               [--compare P.toml] [--seed N] [--quiet]
                             your pipeline against your upstream (see sim/scenarios/)

EXPERIMENTS (default: all)
  aws       AWS backoff and jitter, OCC model, N = 10..190, five strategies
  sre       SRE retry amplification (3 attempts vs the 10% budget) and layering
  throttle  SRE client-side throttling: K x capacity at 10x overload, sweeps
  brooker   Brooker 2022 strategies across failure rates
  brooker-clients
            Brooker 2022: the same traffic over 10, 100, 1,000 clients (bucket, breaker)
  quota     gRPC A6 and AWS SDK retry token counts
  e2e       docs/design/spec.md §10/§9 end to end (shared budget, histogram hygiene, ...)
  little    Little's Law with a rate limiter vs a bulkhead
  long-timeline
            a week of diurnal traffic (quiet nights, bursts, an outage) through every
            policy beside its reference model; --quick: one day
  rare-drops  Gradient2 under rare timeouts: drop rules before/after/Netflix
  inbound     a server's own shedding: CoDel's schedule; FIFO vs load shed vs resilix, 0.5×–4×
  inbound-capacity
            issue 36: early shed answers at 1×/3×/10×; adaptive() against capacities 2–1,000
  hedge     the tail at scale: hedged fan-out requests on the shared budget

OPTIONS
  --check          exit non-zero if any check is outside its tolerance
  --quick          the CI profile: fewer seeds and shorter runs, every check still made
  --out DIR        where CSV, JSON, SVG and REPORT.md go (default sim-out)
  --seeds N        seeds (runs) per point, overriding each experiment's own
  --master SEED    master seed every random stream is derived from (default 2015)

sim run OPTIONS (defaults in brackets). Every seed runs on freshly built policies. An unknown
value, or a flag the chosen model or setting does not use, is refused (--model occ takes only
--clients, --net, --strategy, --base, --cap, --attempts and the run flags; --capacity is for
--model capacity, --failure for --model flaky; --ratio needs --budget ratio; --k needs
--throttler sre or failsafe; --base and --cap need a --strategy other than none).
  --model M        flaky | capacity | occ [flaky]
  --clients N      [100]            --rate R       calls/s per client [10]
  --client K       open | serial | periodic [open]
  --failure P      failure probability of the flaky upstream [0.1]
  --capacity W:S:Q capacity upstream: workers, service time, queue [10:100ms:10]
  --duration D     arrivals stop after D, then drain [10s]   --warmup D [0s]
  --net SPEC       fixed:D | normal:MEAN:SD | exp:MEAN [exp:10ms]
  --strategy S     none | exponential | full | equal | decorrelated [full]
  --base D --cap D backoff base and cap [5ms, 2s]
  --attempts N     max attempts per call, first included; 0 = unlimited [3]
  --budget B       none | ratio | brooker | grpc | aws [none]
  --ratio PERMILLE ratio budget's retries per 1000 first attempts [100]
  --throttler T    off | sre | failsafe [off]    --k K  accepts multiplier [2]
  --seeds N        [1]              --master SEED  [2015]
  --out DIR        [sim-out]

sim scenario FILE.toml: clients, an upstream with episodes over time, the pipeline and
assertions, all in the file (sim/scenarios/*.toml are examples). Writes report.md, SVG plots
and CSV series; prints a summary and each assertion's measured value.
  --quick          apply the file's [quick] overlay (a shorter or lighter run for CI)
  --check          exit 1 if an assertion fails for the (first) pipeline
  --out DIR        the report directory [sim-out/<file name>]
  --pipeline P     run this pipeline instead of the file's [pipeline] (a file holding the
                   pipeline table, or a scenario whose [pipeline] is used)
  --compare P      also run pipeline P on the same scenario and seed, side by side
  --seed N         the master seed [the file's run.seed, or 1]
  --quiet          no progress on stderr (shown only on a terminal, for runs over 2 s)
";

/// The experiments, in the order of the issue (the same names as `exp::ALL`).
pub const EXPERIMENTS: [&str; 13] = [
    "aws",
    "sre",
    "throttle",
    "brooker",
    "brooker-clients",
    "quota",
    "e2e",
    "little",
    "long-timeline",
    "rare-drops",
    "inbound",
    "inbound-capacity",
    "hedge",
];

pub enum Command {
    Help,
    Experiments(ExpOptions),
    Custom(Box<RunOptions>),
    Scenario(Box<crate::scenario::Options>),
}

pub struct ExpOptions {
    pub which: Vec<String>,
    pub check: bool,
    pub quick: bool,
    pub out: PathBuf,
    pub seeds: Option<u64>,
    pub master: u64,
}

/// A choice among named values, parsed from its flag's value; the error lists what is valid.
fn choose<T: Copy>(flag: &str, v: &str, valid: &[(&str, T)]) -> Result<T, String> {
    valid
        .iter()
        .find(|(name, _)| *name == v)
        .map(|(_, t)| *t)
        .ok_or_else(|| {
            let names: Vec<&str> = valid.iter().map(|(n, _)| *n).collect();
            format!("{flag} {v:?}: expected one of {}", names.join(", "))
        })
}

/// The upstream model of `sim run`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    Flaky,
    Capacity,
    Occ,
}

pub const MODELS: [(&str, Model); 3] = [
    ("flaky", Model::Flaky),
    ("capacity", Model::Capacity),
    ("occ", Model::Occ),
];

/// The retry budget of `sim run`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BudgetKind {
    None,
    Ratio,
    Brooker,
    Grpc,
    Aws,
}

pub const BUDGETS: [(&str, BudgetKind); 5] = [
    ("none", BudgetKind::None),
    ("ratio", BudgetKind::Ratio),
    ("brooker", BudgetKind::Brooker),
    ("grpc", BudgetKind::Grpc),
    ("aws", BudgetKind::Aws),
];

/// The throttler of `sim run`: off, or how it counts calls refused by policies inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThrottlerKind {
    Off,
    Sre,
    Failsafe,
}

pub const THROTTLERS: [(&str, ThrottlerKind); 3] = [
    ("off", ThrottlerKind::Off),
    ("sre", ThrottlerKind::Sre),
    ("failsafe", ThrottlerKind::Failsafe),
];

/// The backoff formulas (with the short names the help has always accepted).
pub const STRATEGIES: [(&str, Strategy); 7] = [
    ("none", Strategy::None),
    ("exponential", Strategy::Exponential),
    ("expo", Strategy::Exponential),
    ("full", Strategy::FullJitter),
    ("equal", Strategy::EqualJitter),
    ("decorrelated", Strategy::Decorrelated),
    ("decorr", Strategy::Decorrelated),
];

/// The flags every model uses.
const RUN_FLAGS: [&str; 3] = ["--seeds", "--master", "--out"];
/// The flags the OCC model uses beside [`RUN_FLAGS`]: it runs N clients once each through a
/// retry with no budget and no throttler, on its own fixed workload.
const OCC_FLAGS: [&str; 7] = [
    "--model",
    "--clients",
    "--net",
    "--strategy",
    "--base",
    "--cap",
    "--attempts",
];

#[derive(Clone, Debug)]
pub struct RunOptions {
    pub model: Model,
    pub clients: usize,
    pub rate: f64,
    pub client: ClientKind,
    pub failure: f64,
    pub capacity: (usize, Duration, usize),
    pub duration: Duration,
    pub warmup: Duration,
    pub net: Delay,
    pub strategy: Strategy,
    pub base: Duration,
    pub cap: Duration,
    pub attempts: u32,
    pub budget: BudgetKind,
    pub ratio: u32,
    pub throttler: ThrottlerKind,
    pub k: f64,
    pub seeds: u64,
    pub master: u64,
    pub out: PathBuf,
}

/// A duration flag's value; the error names the flag.
fn duration(flag: &str, v: &str) -> Result<Duration, String> {
    parse_duration(v).map_err(|e| format!("{flag}: {e}"))
}

fn num<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, String> {
    v.parse().map_err(|_| format!("{flag}: cannot read {v:?}"))
}

pub fn parse(args: &[String]) -> Result<Command, String> {
    if args
        .iter()
        .any(|a| a == "--help" || a == "-h" || a == "help")
    {
        return Ok(Command::Help);
    }
    if args.first().map(String::as_str) == Some("scenario") {
        return parse_scenario(&args[1..]).map(|o| Command::Scenario(Box::new(o)));
    }
    if args.first().map(String::as_str) == Some("run") {
        return parse_run(&args[1..]).map(|o| Command::Custom(Box::new(o)));
    }
    let mut o = ExpOptions {
        which: Vec::new(),
        check: false,
        quick: false,
        out: PathBuf::from("sim-out"),
        seeds: None,
        master: 2015,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |flag: &str| it.next().cloned().ok_or(format!("{flag} needs a value"));
        match a.as_str() {
            "--check" => o.check = true,
            "--quick" => o.quick = true,
            "--out" => o.out = PathBuf::from(value("--out")?),
            "--seeds" => o.seeds = Some(num("--seeds", &value("--seeds")?)?),
            "--master" => o.master = num("--master", &value("--master")?)?,
            flag if flag.starts_with('-') => return Err(format!("unknown option {flag}")),
            name => {
                let known = name == "all" || EXPERIMENTS.contains(&name);
                if !known {
                    return Err(format!("unknown experiment {name:?}"));
                }
                o.which.push(name.to_string());
            }
        }
    }
    if o.which.is_empty() {
        o.which.push("all".into());
    }
    if o.seeds == Some(0) {
        return Err("--seeds must be at least 1".into());
    }
    Ok(Command::Experiments(o))
}

/// The flags of `sim scenario`.
pub const SCENARIO_FLAGS: [&str; 7] = [
    "--quick",
    "--check",
    "--quiet",
    "--out",
    "--pipeline",
    "--compare",
    "--seed",
];

fn parse_scenario(args: &[String]) -> Result<crate::scenario::Options, String> {
    let mut file = None;
    let mut o = crate::scenario::Options {
        file: PathBuf::new(),
        quick: false,
        check: false,
        out: None,
        pipeline: None,
        compare: None,
        seed: None,
        quiet: false,
    };
    let mut seen: Vec<&str> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |flag: &str| {
            it.next()
                .filter(|v| !v.starts_with("--"))
                .cloned()
                .ok_or(format!("{flag} needs a value"))
        };
        if a.starts_with('-') {
            if seen.contains(&a.as_str()) {
                return Err(format!("{a} given twice"));
            }
            seen.push(a.as_str());
        }
        match a.as_str() {
            "--quick" => o.quick = true,
            "--check" => o.check = true,
            "--quiet" => o.quiet = true,
            "--out" => o.out = Some(PathBuf::from(value(a)?)),
            "--pipeline" => o.pipeline = Some(PathBuf::from(value(a)?)),
            "--compare" => o.compare = Some(PathBuf::from(value(a)?)),
            "--seed" => o.seed = Some(num(a, &value(a)?)?),
            flag if flag.starts_with('-') => {
                return Err(format!(
                    "unknown option {flag} for sim scenario: expected one of {}",
                    SCENARIO_FLAGS.join(", ")
                ));
            }
            path => {
                if file.is_some() {
                    return Err(format!(
                        "sim scenario takes one scenario file; {path:?} is a second (use --compare \
                         for a second pipeline)"
                    ));
                }
                file = Some(PathBuf::from(path));
            }
        }
    }
    o.file =
        file.ok_or("sim scenario needs a scenario file, e.g. sim/scenarios/retry-storm.toml")?;
    Ok(o)
}

fn parse_run(args: &[String]) -> Result<RunOptions, String> {
    let mut o = RunOptions {
        model: Model::Flaky,
        clients: 100,
        rate: 10.0,
        client: ClientKind::Open,
        failure: 0.1,
        capacity: (10, Duration::from_millis(100), 10),
        duration: Duration::from_secs(10),
        warmup: Duration::ZERO,
        net: Delay::Exponential {
            mean: Duration::from_millis(10),
        },
        strategy: Strategy::FullJitter,
        base: Duration::from_millis(5),
        cap: Duration::from_secs(2),
        attempts: 3,
        budget: BudgetKind::None,
        ratio: 100,
        throttler: ThrottlerKind::Off,
        k: 2.0,
        seeds: 1,
        master: 2015,
        out: PathBuf::from("sim-out"),
    };
    // The flags given, to refuse those the chosen setting would ignore.
    let mut given: Vec<&str> = Vec::new();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let v = it.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--model" => o.model = choose(flag, v, &MODELS)?,
            "--clients" => o.clients = num(flag, v)?,
            "--rate" => o.rate = num(flag, v)?,
            "--client" => o.client = ClientKind::parse(v)?,
            "--failure" => o.failure = num(flag, v)?,
            "--capacity" => {
                let p: Vec<&str> = v.split(':').collect();
                if p.len() != 3 {
                    return Err("--capacity wants WORKERS:SERVICE:QUEUE, e.g. 10:100ms:10".into());
                }
                o.capacity = (num(flag, p[0])?, duration(flag, p[1])?, num(flag, p[2])?);
            }
            "--duration" => o.duration = duration(flag, v)?,
            "--warmup" => o.warmup = duration(flag, v)?,
            "--net" => o.net = Delay::parse(v)?,
            "--strategy" => o.strategy = choose(flag, v, &STRATEGIES)?,
            "--base" => o.base = duration(flag, v)?,
            "--cap" => o.cap = duration(flag, v)?,
            "--attempts" => o.attempts = num(flag, v)?,
            "--budget" => o.budget = choose(flag, v, &BUDGETS)?,
            "--ratio" => o.ratio = num(flag, v)?,
            "--throttler" => o.throttler = choose(flag, v, &THROTTLERS)?,
            "--k" => o.k = num(flag, v)?,
            "--seeds" => o.seeds = num(flag, v)?,
            "--master" => o.master = num(flag, v)?,
            "--out" => o.out = PathBuf::from(v),
            _ => return Err(format!("unknown option {flag}")),
        }
        given.push(flag.as_str());
    }
    if o.rate.is_nan() || o.rate <= 0.0 || o.clients == 0 || o.seeds == 0 {
        return Err("--rate, --clients and --seeds must be positive".into());
    }
    if !(0.0..=1.0).contains(&o.failure) {
        return Err("--failure must be in [0, 1]".into());
    }
    applicable(&o, &given)?;
    Ok(o)
}

/// Refuses a flag the chosen model or setting would silently ignore: a run that quietly
/// dropped `--budget ratio` would be read as a budgeted run.
fn applicable(o: &RunOptions, given: &[&str]) -> Result<(), String> {
    for &flag in given {
        let refusal = match (o.model, flag) {
            (Model::Occ, f) if !OCC_FLAGS.contains(&f) && !RUN_FLAGS.contains(&f) => {
                let mut valid: Vec<&str> = OCC_FLAGS[1..].to_vec();
                valid.extend(RUN_FLAGS);
                Some(format!(
                    "does not apply to --model occ, which uses only {}",
                    valid.join(", ")
                ))
            }
            (Model::Flaky, "--capacity") => {
                Some("applies only to --model capacity (--model flaky takes --failure)".into())
            }
            (Model::Capacity, "--failure") => {
                Some("applies only to --model flaky (--model capacity takes --capacity)".into())
            }
            (_, "--ratio") if o.budget != BudgetKind::Ratio => Some(format!(
                "applies only to --budget ratio, not --budget {}",
                name_of(&BUDGETS, o.budget)
            )),
            (_, "--k") if o.throttler == ThrottlerKind::Off => {
                Some("applies only with a --throttler: sre or failsafe".into())
            }
            (_, "--base" | "--cap") if o.strategy == Strategy::None => Some(
                "does not apply to --strategy none (retries at once); use one of exponential, \
                 full, equal, decorrelated"
                    .into(),
            ),
            _ => None,
        };
        if let Some(why) = refusal {
            return Err(format!("{flag} {why}"));
        }
    }
    Ok(())
}

fn name_of<T: Copy + PartialEq>(valid: &[(&'static str, T)], t: T) -> &'static str {
    valid.iter().find(|(_, v)| *v == t).map_or("?", |(n, _)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[cfg(feature = "experiments")]
    #[test]
    fn the_names_match_the_experiments() {
        let names: Vec<&str> = crate::exp::ALL.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, EXPERIMENTS);
    }

    #[test]
    fn experiments_and_flags() {
        let Ok(Command::Experiments(o)) = parse(&args("aws sre --check --quick --seeds 3")) else {
            panic!()
        };
        assert_eq!(o.which, ["aws", "sre"]);
        assert!(o.check && o.quick);
        assert_eq!(o.seeds, Some(3));
        assert!(parse(&args("nonsense")).is_err());
        assert!(parse(&args("--seeds 0")).is_err());
        let Ok(Command::Experiments(o)) = parse(&[]) else {
            panic!()
        };
        assert_eq!(o.which, ["all"]);
    }

    #[test]
    fn custom_run_options() {
        let Ok(Command::Custom(o)) = parse(&args(
            "run --model capacity --clients 5 --rate 2.5 --client serial --net fixed:3ms --capacity 4:20ms:8",
        )) else {
            panic!()
        };
        assert_eq!((o.clients, o.rate, o.client), (5, 2.5, ClientKind::Serial));
        assert_eq!(o.capacity, (4, Duration::from_millis(20), 8));
        assert!(parse(&args("run --failure 2")).is_err());
        assert!(parse(&args("run --clients")).is_err());
    }

    fn refusal(s: &str) -> String {
        match parse(&args(s)) {
            Err(e) => e,
            Ok(_) => panic!("{s:?} was accepted"),
        }
    }

    /// An unknown value is refused, and the error lists every valid one (on the base commit
    /// `--model occ` with any `--budget` or `--throttler` value ran silently).
    #[test]
    fn unknown_values_are_refused_with_the_valid_ones() {
        for (s, valid) in [
            ("run --budget bogus", "none, ratio, brooker, grpc, aws"),
            (
                "run --model occ --budget bogus",
                "none, ratio, brooker, grpc, aws",
            ),
            ("run --model bogus", "flaky, capacity, occ"),
            ("run --throttler bogus", "off, sre, failsafe"),
            (
                "run --strategy bogus",
                "none, exponential, expo, full, equal, decorrelated, decorr",
            ),
            ("run --model occ --throttler bogus", "off, sre, failsafe"),
            ("run --duration 5bogus", "us, ms, s or m"),
        ] {
            let e = refusal(s);
            assert!(e.contains("bogus") && e.contains(valid), "{s}: {e}");
        }
    }

    /// A flag the chosen model or setting would ignore is refused, naming the flag and what
    /// applies instead.
    #[test]
    fn inapplicable_flags_are_refused() {
        for (s, flag, says) in [
            ("run --model occ --budget ratio", "--budget", "--model occ"),
            (
                "run --model occ --throttler sre",
                "--throttler",
                "--model occ",
            ),
            ("run --model occ --rate 5", "--rate", "--clients, --net"),
            ("run --model occ --failure 0.2", "--failure", "--model occ"),
            ("run --model occ --duration 3s", "--duration", "--model occ"),
            ("run --capacity 1:1ms:1", "--capacity", "--model capacity"),
            (
                "run --model capacity --failure 0.2",
                "--failure",
                "--model flaky",
            ),
            ("run --ratio 50", "--ratio", "--budget ratio"),
            ("run --budget aws --ratio 50", "--ratio", "not --budget aws"),
            ("run --k 1.5", "--k", "sre or failsafe"),
            (
                "run --strategy none --base 1ms",
                "--base",
                "--strategy none",
            ),
            ("run --cap 1s --strategy none", "--cap", "--strategy none"),
        ] {
            let e = refusal(s);
            assert!(e.starts_with(flag) && e.contains(says), "{s}: {e}");
        }
        // The order of the flags does not matter: the check runs after all are read.
        assert!(refusal("run --budget ratio --model occ").starts_with("--budget"));
    }

    #[test]
    fn scenario_options_are_read_and_mistakes_named() {
        let Ok(Command::Scenario(o)) = parse(&args(
            "scenario s.toml --quick --check --out d --compare b.toml --pipeline a.toml --seed 7 --quiet",
        )) else {
            panic!()
        };
        assert_eq!(o.file, PathBuf::from("s.toml"));
        assert!(o.quick && o.check && o.quiet);
        assert_eq!(o.seed, Some(7));
        assert_eq!(o.compare, Some(PathBuf::from("b.toml")));
        assert_eq!(o.pipeline, Some(PathBuf::from("a.toml")));
        for (s, says) in [
            ("scenario", "needs a scenario file"),
            ("scenario a.toml b.toml", "use --compare"),
            (
                "scenario a.toml --fast",
                "expected one of --quick, --check, --quiet, --out",
            ),
            ("scenario a.toml --seed", "--seed needs a value"),
            ("scenario a.toml --seed x", "--seed: cannot read"),
            ("scenario a.toml --out --quick", "--out needs a value"),
            ("scenario a.toml --quick --quick", "given twice"),
        ] {
            let e = refusal(s);
            assert!(e.contains(says), "{s}: {e}");
        }
    }

    /// Every flag is still accepted where it applies.
    #[test]
    fn applicable_flags_are_accepted() {
        for s in [
            "run --model occ --clients 5 --net fixed:1ms --strategy equal --base 1ms --cap 1s \
             --attempts 4 --seeds 2 --master 7 --out x",
            "run --model flaky --failure 0.3 --budget ratio --ratio 50 --throttler sre --k 1.1",
            "run --model capacity --capacity 2:5ms:2 --budget aws --throttler failsafe --k 3",
            "run --strategy none --attempts 2 --rate 3 --client periodic --duration 1s \
             --warmup 100ms",
        ] {
            assert!(parse(&args(s)).is_ok(), "{s}: {:?}", parse(&args(s)).err());
        }
        let Ok(Command::Custom(o)) = parse(&args("run --budget ratio --strategy decorr")) else {
            panic!()
        };
        assert_eq!(
            (o.budget, o.strategy),
            (BudgetKind::Ratio, Strategy::Decorrelated)
        );
    }
}
