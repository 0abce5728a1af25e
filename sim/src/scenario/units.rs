//! The values a scenario file writes as strings: durations ("250ms", "2m", "24h").

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserialize, Deserializer, Visitor};

use crate::net::parse_duration;

/// A duration written as a string with a unit: `us`, `ms`, `s`, `m` or `h`.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Default)]
pub struct Dur(pub Duration);

impl Dur {
    pub fn secs(self) -> f64 {
        self.0.as_secs_f64()
    }
}

/// `parse_duration` and hours, which a diurnal period needs.
pub fn duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if let Some(h) = t.strip_suffix('h') {
        let v: f64 = h
            .parse()
            .map_err(|_| format!("bad number in duration {s:?}"))?;
        if !(v >= 0.0 && v.is_finite()) {
            return Err(format!(
                "duration {s:?} must be a finite non-negative number"
            ));
        }
        return Ok(Duration::from_secs_f64(v * 3600.0));
    }
    parse_duration(t).map_err(|e| e.replace("us, ms, s or m", "us, ms, s, m or h"))
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Dur;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a duration as a string with a unit, like \"250ms\", \"5s\", \"2m\", \"1h\"",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Dur, E> {
                duration(v).map(Dur).map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_every_unit_and_name_them_when_wrong() {
        assert_eq!(duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(duration("1.5h").unwrap(), Duration::from_secs(5400));
        assert_eq!(duration("2m").unwrap(), Duration::from_secs(120));
        let e = duration("5d").unwrap_err();
        assert!(e.contains("us, ms, s, m or h"), "{e}");
        assert!(duration("-1h").is_err());
    }
}
