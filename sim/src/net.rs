//! Network delay per hop.

use std::time::Duration;

use resilix::random::SeededRandom;

use crate::rng::{exponential, secs, standard_normal};

/// How long one hop (request or response) takes.
#[derive(Clone, Copy, Debug)]
pub enum Delay {
    /// Always the same.
    Fixed(Duration),
    /// `|Normal(mean, sd)|`: AWS's OCC simulator, `abs(random.normalvariate(10, 2))` ms.
    AbsNormal { mean: Duration, sd: Duration },
    /// Exponential with this mean: Brooker's 2022 simulator, `expovariate(1/0.01)`.
    Exponential { mean: Duration },
}

impl Delay {
    pub fn sample(&self, rng: &mut SeededRandom) -> Duration {
        match *self {
            Delay::Fixed(d) => d,
            Delay::AbsNormal { mean, sd } => {
                secs((mean.as_secs_f64() + sd.as_secs_f64() * standard_normal(rng)).abs())
            }
            Delay::Exponential { mean } => secs(exponential(rng, mean.as_secs_f64())),
        }
    }

    /// Parses `fixed:10ms`, `normal:10ms:2ms`, `exp:10ms`.
    pub fn parse(s: &str) -> Result<Delay, String> {
        let parts: Vec<&str> = s.split(':').collect();
        match parts.as_slice() {
            ["fixed", d] => Ok(Delay::Fixed(parse_duration(d)?)),
            ["normal", m, sd] => Ok(Delay::AbsNormal {
                mean: parse_duration(m)?,
                sd: parse_duration(sd)?,
            }),
            ["exp", m] => Ok(Delay::Exponential {
                mean: parse_duration(m)?,
            }),
            _ => Err(format!(
                "bad delay {s:?}: expected fixed:D, normal:MEAN:SD or exp:MEAN (D like 10ms, 1.5s)"
            )),
        }
    }
}

/// `10ms`, `1.5s`, `250us`, `3m`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, unit) = s
        .find(|c: char| c.is_ascii_alphabetic())
        .map(|i| s.split_at(i))
        .ok_or_else(|| format!("duration {s:?} needs a unit (us, ms, s, m)"))?;
    let v: f64 = num
        .parse()
        .map_err(|_| format!("bad number in duration {s:?}"))?;
    let scale = match unit {
        "us" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" => 60.0,
        _ => return Err(format!("unknown unit in duration {s:?}: us, ms, s or m")),
    };
    if !(v >= 0.0 && v.is_finite()) {
        return Err(format!(
            "duration {s:?} must be a finite non-negative number"
        ));
    }
    Ok(Duration::from_secs_f64(v * scale))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_delays_and_durations() {
        assert_eq!(parse_duration("10ms").unwrap(), Duration::from_millis(10));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("10").is_err());
        assert!(matches!(
            Delay::parse("normal:10ms:2ms"),
            Ok(Delay::AbsNormal { .. })
        ));
        assert!(Delay::parse("gauss:1").is_err());
    }

    #[test]
    fn abs_normal_is_never_negative_and_centred() {
        let d = Delay::AbsNormal {
            mean: Duration::from_millis(10),
            sd: Duration::from_millis(2),
        };
        let mut rng = SeededRandom::new(4);
        let n = 50_000;
        let total: f64 = (0..n).map(|_| d.sample(&mut rng).as_secs_f64()).sum();
        assert!((total / n as f64 - 0.010).abs() < 0.0001);
    }
}
