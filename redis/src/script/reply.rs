//! What the script answers, parsed.

use core::time::Duration;

use redis::{ErrorKind, RedisError};

#[allow(unused_imports)]
use super::GcraScript;

/// What the script answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reply {
    /// Whether the cells were admitted (and spent).
    pub admitted: bool,
    /// If refused: how long after `server_now` the cells would be admitted.
    pub wait: Duration,
    /// Whole cells left in the bucket after this decision.
    pub remaining: u32,
    /// How long after `server_now` the bucket is full again (the stored TAT − now).
    pub reset_after: Duration,
    /// The instant the decision was made at, on the server's clock (since the Unix epoch,
    /// with Redis's microsecond resolution), or the explicit instant.
    pub server_now: Duration,
}

/// What [`GcraScript::eval_before`] answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The script ran in time and decided.
    Decided(Reply),
    /// The script ran after the caller's deadline and decided nothing.
    Expired {
        /// When it ran, on the server's clock (since the Unix epoch).
        server_now: Duration,
    },
}

impl Decision {
    pub(crate) fn from_raw(raw: &[i64]) -> Result<Decision, RedisError> {
        match raw {
            &[-1, _, _, _, secs, nanos] => Ok(Decision::Expired {
                server_now: Reply::instant(secs, nanos)?,
            }),
            _ => Reply::from_raw(raw).map(Decision::Decided),
        }
    }

    /// The instant the script ran at, on the server's clock.
    pub fn server_now(&self) -> Duration {
        match self {
            Decision::Decided(r) => r.server_now,
            Decision::Expired { server_now } => *server_now,
        }
    }
}

impl Reply {
    pub(crate) fn bad() -> RedisError {
        RedisError::from((
            ErrorKind::Parse,
            "resilix gcra script: unexpected reply shape",
        ))
    }

    fn instant(secs: i64, nanos: i64) -> Result<Duration, RedisError> {
        let non_neg = |v: i64| u64::try_from(v).map_err(|_| Reply::bad());
        Ok(Duration::from_secs(non_neg(secs)?) + Duration::from_nanos(non_neg(nanos)?))
    }

    fn from_raw(raw: &[i64]) -> Result<Reply, RedisError> {
        let &[admitted @ (0 | 1), wait, remaining, reset, secs, nanos] = raw else {
            return Err(Reply::bad());
        };
        let non_neg = |v: i64| u64::try_from(v).map_err(|_| Reply::bad());
        Ok(Reply {
            admitted: admitted == 1,
            wait: Duration::from_nanos(non_neg(wait)?),
            remaining: u32::try_from(remaining).map_err(|_| Reply::bad())?,
            reset_after: Duration::from_nanos(non_neg(reset)?),
            server_now: Reply::instant(secs, nanos)?,
        })
    }

    /// The bucket's TAT after this decision, on the server's clock: what
    /// [`GcraScript::refund`] needs to give an admission back.
    pub fn tat(&self) -> Duration {
        self.server_now + self.reset_after
    }
}
