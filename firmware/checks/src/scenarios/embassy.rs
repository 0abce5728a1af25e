//! The embassy program's retry delays, replayed with a manual timeline from its seed.

use resilix::call::{CallOptions, Next};
use resilix::permit::Env;
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::time::Instant;

use super::{ensure, nanos};
use crate::Trace;
use crate::embassy::{BACKOFF, RETRY, SCRIPT, SEED};

/// Every delay the program's retries draw, in order (the breaker draws nothing: its open
/// jitter is off), each within the full-jitter ceiling `min(cap, base · 2^attempt)`.
pub(crate) fn backoff(t: &mut Trace) -> Result<(), &'static str> {
    let pipeline = Pipeline::new().retry(RETRY);
    let mut rng = SeededRandom::new(SEED);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    for script in SCRIPT {
        let options = CallOptions::default().idempotent(script.idempotent);
        let mut call = pipeline.call(env.now, options);
        for (i, verdict) in script.verdicts.iter().enumerate() {
            let attempt = call
                .admit(&mut env)
                .map_err(|_| "an empty pipeline refused")?;
            match call.settle(attempt, verdict, &mut env) {
                Next::RetryAt(at) => {
                    let delay = at - env.now;
                    ensure(
                        delay <= BACKOFF.ceiling(call.attempts()),
                        "jitter above the backoff ceiling",
                    )?;
                    t.push(nanos(delay));
                    env.now = at;
                }
                _ => ensure(i + 1 == script.verdicts.len(), "the call ended early")?,
            }
        }
    }
    Ok(())
}
