//! The value types a config file writes that serde has no word for: durations, an optional
//! setting that can be turned off, and retry tokens.
//!
//! Each reads through its own visitor (no `untagged` enums), so a bad value's error carries
//! the path of its field and, in TOML, the position of the value.

use core::fmt;
use core::marker::PhantomData;
use core::time::Duration;

use resilix::retry::budget::Tokens;
use serde::de::value::{F64Deserializer, I64Deserializer, MapAccessDeserializer, StrDeserializer};
use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde::{Serialize, Serializer};

use crate::duration;

/// A duration written as a string: `"250ms"`, `"5s"`, `"1h30m"`, `"1.5s"` (see
/// [`duration`](crate::duration)).
///
/// ```
/// use core::time::Duration;
/// use resilix_config::ConfigDuration;
///
/// let d: ConfigDuration = "1h30m".parse()?;
/// assert_eq!(Duration::from(d), Duration::from_secs(5_400));
/// assert_eq!(d.to_string(), "1h30m");
/// # Ok::<(), resilix_config::duration::DurationError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ConfigDuration(pub Duration);

impl From<ConfigDuration> for Duration {
    fn from(d: ConfigDuration) -> Duration {
        d.0
    }
}

impl From<Duration> for ConfigDuration {
    fn from(d: Duration) -> ConfigDuration {
        ConfigDuration(d)
    }
}

impl core::str::FromStr for ConfigDuration {
    type Err = duration::DurationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        duration::parse(s).map(ConfigDuration)
    }
}

impl fmt::Display for ConfigDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&duration::format(self.0))
    }
}

impl Serialize for ConfigDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&duration::format(self.0))
    }
}

impl<'de> Deserialize<'de> for ConfigDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ConfigDuration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration string such as \"250ms\", \"5s\" or \"1h30m\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ConfigDuration, E> {
                duration::parse(v).map(ConfigDuration).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<ConfigDuration, E> {
                Err(E::custom(duration::DurationError::MissingUnit))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<ConfigDuration, E> {
                Err(E::custom(duration::DurationError::MissingUnit))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<ConfigDuration, E> {
                Err(E::custom(duration::DurationError::MissingUnit))
            }
        }
        d.deserialize_any(V)
    }
}

/// A setting the core holds as an `Option`: a value, or `"off"`.
///
/// Leaving the field out keeps the core's default (which may be on, like the breaker's
/// `failure_rate_above_percent = 50`); `"off"` turns it off (`None` in the core).
///
/// ```
/// use resilix_config::Switch;
///
/// let on: Switch<u8> = serde_json::from_str("50")?;
/// let off: Switch<u8> = serde_json::from_str("\"off\"")?;
/// assert_eq!((on.into_option(), off.into_option()), (Some(50), None));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Switch<T> {
    /// `"off"`: the core's `None`.
    Off,
    /// A value: the core's `Some`.
    On(T),
}

impl<T> Switch<T> {
    /// `None` for `Off`.
    pub fn into_option(self) -> Option<T> {
        match self {
            Switch::Off => None,
            Switch::On(v) => Some(v),
        }
    }
}

impl<T> From<Option<T>> for Switch<T> {
    fn from(o: Option<T>) -> Self {
        match o {
            None => Switch::Off,
            Some(v) => Switch::On(v),
        }
    }
}

impl<T: Serialize> Serialize for Switch<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Switch::Off => s.serialize_str("off"),
            Switch::On(v) => v.serialize(s),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Switch<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Switch<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a value, or \"off\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Switch<T>, E> {
                if v == "off" {
                    return Ok(Switch::Off);
                }
                T::deserialize(StrDeserializer::<E>::new(v)).map(Switch::On)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Switch<T>, E> {
                T::deserialize(de::value::U64Deserializer::<E>::new(v)).map(Switch::On)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Switch<T>, E> {
                T::deserialize(I64Deserializer::<E>::new(v)).map(Switch::On)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Switch<T>, E> {
                T::deserialize(F64Deserializer::<E>::new(v)).map(Switch::On)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Switch<T>, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(Switch::On)
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// An amount of retry tokens as a number: `5`, `0.1`, to three decimals (the core keeps
/// thousandths of a token, as gRPC A6 does).
///
/// ```
/// use resilix::retry::budget::Tokens;
/// use resilix_config::TokenAmount;
///
/// let t: TokenAmount = serde_json::from_str("0.1")?;
/// assert_eq!(Tokens::from(t), Tokens::milli(100));
/// assert!(serde_json::from_str::<TokenAmount>("0.0001").is_err(), "finer than a thousandth");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TokenAmount(pub Tokens);

impl From<TokenAmount> for Tokens {
    fn from(t: TokenAmount) -> Tokens {
        t.0
    }
}

const TOKENS_RULE: &str =
    "a token amount is a number from 0 to 4294967.295 with at most three decimals";

fn milli_from_f64(v: f64) -> Option<u32> {
    let milli = v * 1000.0;
    if !milli.is_finite() || milli < 0.0 || milli > u32::MAX as f64 + 0.5 {
        return None;
    }
    let rounded = milli.round();
    // A decimal with at most three places, read as a float, lands within a few ulps of a
    // whole number of thousandths; anything further had a fourth decimal.
    if (milli - rounded).abs() > 1e-6 * rounded.max(1.0) {
        return None;
    }
    Some(rounded as u32)
}

impl Serialize for TokenAmount {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let milli = self.0.as_milli();
        if milli.is_multiple_of(1000) {
            s.serialize_u64(u64::from(milli / 1000))
        } else {
            s.serialize_f64(f64::from(milli) / 1000.0)
        }
    }
}

impl<'de> Deserialize<'de> for TokenAmount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = TokenAmount;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(TOKENS_RULE)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<TokenAmount, E> {
                v.checked_mul(1000)
                    .and_then(|m| u32::try_from(m).ok())
                    .map(|m| TokenAmount(Tokens::milli(m)))
                    .ok_or_else(|| E::custom(TOKENS_RULE))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<TokenAmount, E> {
                let v = u64::try_from(v).map_err(|_| E::custom(TOKENS_RULE))?;
                self.visit_u64(v)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<TokenAmount, E> {
                milli_from_f64(v)
                    .map(|m| TokenAmount(Tokens::milli(m)))
                    .ok_or_else(|| E::custom(TOKENS_RULE))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_amounts_are_exact_to_a_thousandth() {
        assert_eq!(milli_from_f64(0.1), Some(100));
        assert_eq!(milli_from_f64(5.001), Some(5_001));
        assert_eq!(milli_from_f64(4_294_967.295), Some(u32::MAX));
        assert_eq!(milli_from_f64(4_294_967.296), None);
        assert_eq!(milli_from_f64(0.0005), None);
        assert_eq!(milli_from_f64(-1.0), None);
        assert_eq!(milli_from_f64(f64::NAN), None);
        for milli in [0u32, 1, 100, 999, 1_001, 123_456, u32::MAX] {
            assert_eq!(milli_from_f64(f64::from(milli) / 1000.0), Some(milli));
        }
    }
}
