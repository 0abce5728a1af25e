//! The adaptive limiter against its plain wide-time model: the fuzzer's bytes choose the config
//! (algorithm, parameters, a window from 1 ns to an hour: every tick scale) and then every gap
//! (1 ns to ten years), arrival, verdict and cancellation of a differential run. Panics on the
//! first difference in a decision, the limit, the in-flight or waiting count or the baseline.
#![no_main]

use core::time::Duration;

use libfuzzer_sys::fuzz_target;
use resilix::limiter::{Aimd, Algorithm, Gradient2, Limiter, LimiterConfig, Vegas};
use resilix::time::Instant;
use resilix_reference::limiter::LimiterTwin;
use resilix_reference::timeline::Bytes;
use resilix_reference::twin::Mix;
use resilix_reference::{Gaps, Timeline, drive};

fn config(h: &[u8; 12]) -> LimiterConfig {
    let pick = |i: usize, xs: &[f32]| xs[h[i] as usize % xs.len()];
    let algorithm = match h[0] % 3 {
        0 => Algorithm::Gradient2(Gradient2 {
            smoothing: pick(1, &[0.2, 0.5, 1.0]),
            queue_size: u32::from(h[2] % 6),
            long_window: [1, 10, 600][h[3] as usize % 3],
            rtt_tolerance: pick(4, &[1.0, 1.5, 2.0]),
            drop_backoff: pick(5, &[0.5, 0.9, 1.0]),
            drop_threshold: pick(6, &[0.0, 0.02, 0.5]),
        }),
        1 => Algorithm::Vegas(Vegas {
            smoothing: pick(1, &[0.5, 1.0]),
        }),
        _ => Algorithm::Aimd(Aimd {
            backoff_ratio: pick(5, &[0.5, 0.9]),
            timeout: [Duration::from_millis(1), Duration::from_secs(5)][h[3] as usize % 2],
        }),
    };
    // Log-uniform from 1 ns to 2^42 ns, capped at an hour.
    let exp = u32::from(h[7] % 42);
    let ns = ((1u64 << exp) | (u64::from(h[8]) << exp.saturating_sub(8))).min(3_600_000_000_000);
    let max_window = Duration::from_nanos(ns.max(1));
    let min_window = (max_window / (1u32 << (h[9] % 16))).max(Duration::from_nanos(1));
    let min_limit = 1 + u32::from(h[10] % 4);
    let initial_limit = min_limit + u32::from(h[11] % 6);
    LimiterConfig {
        algorithm,
        min_limit,
        initial_limit,
        max_limit: initial_limit + u32::from(h[2] % 11),
        min_window,
        max_window,
        window_samples: 1 + u32::from(h[4] % 12),
        min_rtt: [Duration::ZERO, Duration::from_micros(100)][h[6] as usize % 2],
        probe_multiplier: u32::from(h[1] % 5),
        queue_factor: pick(9, &[1.0, 1.5, 2.0, 4.0]),
        queue_rungs: 1 + u32::from(h[10] % 4),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((head, rest)) = data.split_first_chunk::<12>() else {
        return;
    };
    let c = config(head);
    let real = Limiter::new(c).expect("valid by construction");
    let mut twin = LimiterTwin::new(&real, &c);
    let mut rng = Bytes::new(rest);
    let mix = if head[0] & 0x80 != 0 {
        Mix {
            success: 120,
            transient: 20,
            timeout: 50,
            overload: 40,
            answered: 10,
        }
    } else {
        Mix::MOSTLY_HEALTHY
    };
    let mut t = Timeline::new(Instant::ZERO, Gaps::LONG);
    // About one step per four bytes: each step draws a gap, a choice and a verdict.
    let steps = (16 + rest.len() as u64 / 4).min(1_024);
    let max_open = 1 + usize::from(head[11] % 24);
    if let Err(m) = drive(&mut twin, &mut t, &mut rng, steps, mix, max_open) {
        panic!("{c:?}\n{m}");
    }
});
