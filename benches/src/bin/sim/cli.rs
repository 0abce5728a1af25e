//! Command-line parsing with std only.

use std::path::PathBuf;
use std::time::Duration;

use crate::engine::ClientKind;
use crate::net::{Delay, parse_duration};

pub const HELP: &str = "\
resilix simulator: reproduces published retry, jitter, budget and throttling results with the
real resilix policies on a simulated timeline.

USAGE
  sim [EXPERIMENT...] [--check] [--quick] [--out DIR] [--seeds N] [--master SEED]
  sim run [OPTIONS]          one custom run, printed and written as CSV/JSON

EXPERIMENTS (default: all)
  aws       AWS backoff and jitter, OCC model, N = 10..190, five strategies
  sre       SRE retry amplification (3 attempts vs the 10% budget) and layering
  throttle  SRE client-side throttling: K x capacity at 10x overload, sweeps
  brooker   Brooker 2022 strategies across failure rates
  quota     gRPC A6 and AWS SDK retry token counts
  e2e       spec §10/§9 end to end (shared budget, histogram hygiene, ...)
  little    Little's Law with a rate limiter vs a bulkhead
  rare_drops  Gradient2 under rare timeouts: drop rules before/after/Netflix

OPTIONS
  --check          exit non-zero if any check is outside its tolerance
  --quick          the CI profile: fewer seeds and shorter runs, every check still made
  --out DIR        where CSV, JSON, SVG and REPORT.md go (default sim-out)
  --seeds N        seeds (runs) per point, overriding each experiment's own
  --master SEED    master seed every random stream is derived from (default 2015)

sim run OPTIONS (defaults in brackets)
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
";

/// The experiments, in the order of the issue (the same names as `exp::ALL`).
pub const EXPERIMENTS: [&str; 8] = [
    "aws",
    "sre",
    "throttle",
    "brooker",
    "quota",
    "e2e",
    "little",
    "rare_drops",
];

pub enum Command {
    Help,
    Experiments(ExpOptions),
    Custom(Box<RunOptions>),
}

pub struct ExpOptions {
    pub which: Vec<String>,
    pub check: bool,
    pub quick: bool,
    pub out: PathBuf,
    pub seeds: Option<u64>,
    pub master: u64,
}

#[derive(Clone, Debug)]
pub struct RunOptions {
    pub model: String,
    pub clients: usize,
    pub rate: f64,
    pub client: ClientKind,
    pub failure: f64,
    pub capacity: (usize, Duration, usize),
    pub duration: Duration,
    pub warmup: Duration,
    pub net: Delay,
    pub strategy: String,
    pub base: Duration,
    pub cap: Duration,
    pub attempts: u32,
    pub budget: String,
    pub ratio: u32,
    pub throttler: String,
    pub k: f64,
    pub seeds: u64,
    pub master: u64,
    pub out: PathBuf,
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

fn parse_run(args: &[String]) -> Result<RunOptions, String> {
    let mut o = RunOptions {
        model: "flaky".into(),
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
        strategy: "full".into(),
        base: Duration::from_millis(5),
        cap: Duration::from_secs(2),
        attempts: 3,
        budget: "none".into(),
        ratio: 100,
        throttler: "off".into(),
        k: 2.0,
        seeds: 1,
        master: 2015,
        out: PathBuf::from("sim-out"),
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let v = it.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--model" => o.model = v.clone(),
            "--clients" => o.clients = num(flag, v)?,
            "--rate" => o.rate = num(flag, v)?,
            "--client" => o.client = ClientKind::parse(v)?,
            "--failure" => o.failure = num(flag, v)?,
            "--capacity" => {
                let p: Vec<&str> = v.split(':').collect();
                if p.len() != 3 {
                    return Err("--capacity wants WORKERS:SERVICE:QUEUE, e.g. 10:100ms:10".into());
                }
                o.capacity = (num(flag, p[0])?, parse_duration(p[1])?, num(flag, p[2])?);
            }
            "--duration" => o.duration = parse_duration(v)?,
            "--warmup" => o.warmup = parse_duration(v)?,
            "--net" => o.net = Delay::parse(v)?,
            "--strategy" => o.strategy = v.clone(),
            "--base" => o.base = parse_duration(v)?,
            "--cap" => o.cap = parse_duration(v)?,
            "--attempts" => o.attempts = num(flag, v)?,
            "--budget" => o.budget = v.clone(),
            "--ratio" => o.ratio = num(flag, v)?,
            "--throttler" => o.throttler = v.clone(),
            "--k" => o.k = num(flag, v)?,
            "--seeds" => o.seeds = num(flag, v)?,
            "--master" => o.master = num(flag, v)?,
            "--out" => o.out = PathBuf::from(v),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if o.rate.is_nan() || o.rate <= 0.0 || o.clients == 0 || o.seeds == 0 {
        return Err("--rate, --clients and --seeds must be positive".into());
    }
    if !(0.0..=1.0).contains(&o.failure) {
        return Err("--failure must be in [0, 1]".into());
    }
    Ok(o)
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
            "run --clients 5 --rate 2.5 --client serial --net fixed:3ms --capacity 4:20ms:8",
        )) else {
            panic!()
        };
        assert_eq!((o.clients, o.rate, o.client), (5, 2.5, ClientKind::Serial));
        assert_eq!(o.capacity, (4, Duration::from_millis(20), 8));
        assert!(parse(&args("run --failure 2")).is_err());
        assert!(parse(&args("run --clients")).is_err());
    }
}
