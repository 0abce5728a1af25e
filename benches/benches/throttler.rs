//! Throttler admit + settle, healthy (P = 0, no random draw) and shedding.
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use resilix::Verdict;
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::throttler::{Throttler, ThrottlerConfig};
use resilix::time::Instant;

fn admit_settle(c: &mut Criterion) {
    for (name, verdict) in [
        ("throttler/admit+settle/healthy", Verdict::Success),
        ("throttler/admit+settle/failing", Verdict::Transient),
    ] {
        let throttler: Throttler = Throttler::new(ThrottlerConfig::DEFAULT).unwrap();
        let mut rng = SeededRandom::new(1);
        let mut now = 0u64;
        c.bench_function(name, |b| {
            b.iter(|| {
                now += 1_000;
                let mut env = Env::new(Instant::from_nanos(now), &mut rng);
                if let Ok(permit) = throttler.admit(&mut env) {
                    permit.settle(black_box(&verdict), &mut env);
                }
            })
        });
    }
}

criterion_group!(benches, admit_settle);
criterion_main!(benches);
