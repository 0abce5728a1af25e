//! What the limiter's loom models share: exploration under a preemption bound, a limiter that
//! closes its window at every settle, and the call whose settle closes it. Included by path
//! (`#[path = "support/loom_limiter.rs"] mod loom_limiter;`), so it is no test target of its
//! own.

use core::time::Duration;

use resilix::Verdict;
use resilix::limiter::{Limiter, LimiterConfig, LimiterPermit};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::time::Instant;

/// Checks `f` under every interleaving with at most three preemptions: that keeps a model
/// under a minute, where the close path alone touches seven atomics and unbounded exploration
/// of two full admit+settle paths runs for many minutes.
pub fn bounded(f: impl Fn() + Sync + Send + 'static) {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(f);
}

/// AIMD from a limit of 1 up to `max_limit`, closing its window at every settle (one sample,
/// no RTT floor, no probing), so that one settle is one window close: +1 call.
pub fn closing_at_every_settle(max_limit: u32) -> LimiterConfig {
    LimiterConfig {
        min_limit: 1,
        initial_limit: 1,
        max_limit,
        window_samples: 1,
        min_rtt: Duration::ZERO,
        probe_multiplier: 0,
        ..LimiterConfig::aimd()
    }
}

/// One call admitted at 2 s, if there is room, and settled a success at 3 s, which closes the
/// window; answers whether it was admitted. `check` sees the permit before its settle.
pub fn call_across_a_close(
    limiter: &Limiter,
    seed: u64,
    check: impl FnOnce(&LimiterPermit<'_>),
) -> bool {
    let mut rng = SeededRandom::new(seed);
    let mut env = Env::new(Instant::from_secs(2), &mut rng);
    let Ok(p) = limiter.admit(&mut env) else {
        return false;
    };
    check(&p);
    env.now = Instant::from_secs(3);
    p.settle(&Verdict::Success, &mut env);
    true
}
