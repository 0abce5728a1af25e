//! Random long timelines: gaps drawn log-uniformly between two lengths, so that a run of a few
//! thousand steps holds nanosecond bursts, second-long pauses, idle days and idle years.

use core::time::Duration;

use resilix::random::Random;
use resilix::time::Instant;

/// Ten years (of 365.25 days), the longest gap the differential runs draw by default.
pub const TEN_YEARS: Duration = Duration::from_secs(10 * 31_557_600);

/// A distribution of gaps between steps: log-uniform between `min` and `max`, so every order
/// of magnitude between them is equally likely.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gaps {
    /// The shortest gap (at least 1 ns).
    pub min: Duration,
    /// The longest gap.
    pub max: Duration,
    /// Out of 256 steps, how many take a gap of zero (calls at the same instant).
    pub zero_in_256: u8,
}

impl Gaps {
    /// Gaps from 1 ns to ten years, one step in 16 at the same instant as the last.
    pub const LONG: Gaps = Gaps {
        min: Duration::from_nanos(1),
        max: TEN_YEARS,
        zero_in_256: 16,
    };

    /// Log-uniform gaps between `min` and `max`.
    pub const fn between(min: Duration, max: Duration) -> Gaps {
        Gaps {
            min,
            max,
            zero_in_256: 16,
        }
    }

    /// One gap.
    pub fn draw(&self, rng: &mut impl Random) -> Duration {
        if rng.below(256) < u64::from(self.zero_in_256) {
            return Duration::ZERO;
        }
        let lo = self.min.as_nanos().max(1).min(u128::from(u64::MAX)) as u64;
        let hi = self.max.as_nanos().min(u128::from(u64::MAX)) as u64;
        if hi <= lo {
            return Duration::from_nanos(lo);
        }
        // Log-uniform by octave, then uniform within the octave: exact in integers, and every
        // power of two between `lo` and `hi` is equally likely to be the gap's order.
        let lo_bits = 63 - lo.leading_zeros();
        let hi_bits = 63 - hi.leading_zeros();
        let octave = lo_bits + rng.below(u64::from(hi_bits - lo_bits) + 1) as u32;
        let start = (1u64 << octave).max(lo);
        let end = if octave >= 63 {
            u64::MAX
        } else {
            ((1u64 << (octave + 1)) - 1).min(hi)
        };
        let span = end - start;
        let gap = if span == u64::MAX {
            rng.next_u64()
        } else {
            start + rng.below(span + 1)
        };
        Duration::from_nanos(gap)
    }
}

/// A clock moved forward by random gaps.
#[derive(Clone, Copy, Debug)]
pub struct Timeline {
    now: Instant,
    gaps: Gaps,
}

impl Timeline {
    /// A timeline starting at `start`.
    pub const fn new(start: Instant, gaps: Gaps) -> Timeline {
        Timeline { now: start, gaps }
    }

    /// The current instant.
    pub const fn now(&self) -> Instant {
        self.now
    }

    /// Moves on by one random gap (saturating at the end of the `u64` timeline) and answers
    /// the new instant.
    pub fn advance(&mut self, rng: &mut impl Random) -> Instant {
        self.now = self.now.saturating_add(self.gaps.draw(rng));
        self.now
    }

    /// Moves on by exactly `gap`.
    pub fn advance_by(&mut self, gap: Duration) -> Instant {
        self.now = self.now.saturating_add(gap);
        self.now
    }
}

/// A [`Random`] that reads a fuzzer's bytes, then goes on with a generator seeded from them:
/// the fuzzer steers every choice of a differential run (gaps, arrivals, verdicts) through the
/// same driver the property tests use. (Going on with zeros would hang: `Random::below`
/// rejects a zero draw for most bounds and draws again, for ever.)
#[derive(Clone, Debug)]
pub struct Bytes<'a> {
    data: &'a [u8],
    rest: resilix::random::SeededRandom,
}

impl<'a> Bytes<'a> {
    /// Reads `data`.
    pub const fn new(data: &'a [u8]) -> Bytes<'a> {
        // FNV-1a over the whole input: the same bytes give the same run.
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        let mut i = 0;
        while i < data.len() {
            hash = (hash ^ data[i] as u64).wrapping_mul(0x0100_0000_01b3);
            i += 1;
        }
        Bytes {
            data,
            rest: resilix::random::SeededRandom::new(hash),
        }
    }

    /// Whether every byte has been read.
    pub const fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

impl Random for Bytes<'_> {
    fn next_u32(&mut self) -> u32 {
        if self.data.is_empty() {
            return self.rest.next_u32();
        }
        let mut word = [0u8; 4];
        let n = self.data.len().min(4);
        word[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        u32::from_le_bytes(word)
    }
}

/// The gaps of a deterministic sweep: `0, step, 2·step, …` up to `span`, the first decision
/// after each idle gap to be checked by the caller.
pub fn sweep(span: Duration, step: Duration) -> impl Iterator<Item = Duration> {
    let step = step.max(Duration::from_nanos(1));
    let n = (span.as_nanos() / step.as_nanos()) as u64;
    (0..=n).map(move |i| step.saturating_mul(i.min(u64::from(u32::MAX)) as u32))
}

/// The idle gaps after which a windowed policy's first decision is checked: coarse (three
/// circles in `coarse_points` steps) over 0..3 circles of its 31-bit period word, and fine (a
/// tenth of a bucket) over ± two windows around every multiple of a quarter circle (the eras,
/// where an aliasing word would misread), as far as the timeline reaches from `start`.
///
/// `window` is split into `buckets` buckets; a circle is 2^31 bucket periods.
pub fn window_idle_gaps(
    window: Duration,
    buckets: usize,
    start: Instant,
    coarse_points: u32,
) -> impl Iterator<Item = Duration> {
    let bucket_nanos = window.as_nanos().div_ceil(buckets as u128) as u64;
    let circle = Duration::from_nanos(bucket_nanos.saturating_mul(1 << 31));
    let last = u128::from(Instant::MAX.as_nanos() - start.as_nanos());
    let three = circle.saturating_mul(3);
    let coarse = sweep(three, three / coarse_points);
    let step = Duration::from_nanos((bucket_nanos / 10).max(1));
    let fine = (1..=12u32)
        .map(move |quarter| (circle / 4).saturating_mul(quarter))
        .take_while(move |centre| centre.as_nanos() <= last)
        .flat_map(move |centre| {
            let from = centre.saturating_sub(window * 2);
            sweep(window * 4, step).map(move |gap| from + gap)
        });
    coarse.chain(fine).filter(move |gap| gap.as_nanos() <= last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use resilix::random::SeededRandom;

    #[test]
    fn gaps_cover_every_order_of_magnitude() {
        let mut rng = SeededRandom::new(7);
        let mut octaves = [0u32; 64];
        let mut zeros = 0;
        for _ in 0..100_000 {
            let g = Gaps::LONG.draw(&mut rng);
            assert!(g <= TEN_YEARS);
            if g.is_zero() {
                zeros += 1;
                continue;
            }
            octaves[63 - (g.as_nanos() as u64).leading_zeros() as usize] += 1;
        }
        // 1 ns .. 2^58 ns: 59 octaves, about 1,500 draws each.
        for (octave, n) in octaves.iter().enumerate().take(58) {
            assert!(*n > 1_000, "octave {octave}: {n}");
        }
        assert!((5_000..7_500).contains(&zeros), "{zeros}");
    }

    #[test]
    fn a_timeline_saturates_at_the_end() {
        let mut t = Timeline::new(Instant::MAX, Gaps::LONG);
        let mut rng = SeededRandom::new(1);
        assert_eq!(t.advance(&mut rng), Instant::MAX);
        assert_eq!(t.advance_by(Duration::from_secs(1)), Instant::MAX);
    }

    #[test]
    fn bytes_run_out_into_a_generator_seeded_by_them() {
        let mut b = Bytes::new(&[1, 0, 0, 0, 2]);
        assert_eq!(b.next_u32(), 1);
        assert_eq!(b.next_u32(), 2);
        assert!(b.is_empty());
        let after = b.next_u32();
        assert_eq!(Bytes::new(&[1, 0, 0, 0, 2]).clone().rest.next_u32(), after);
        // An empty input does not hang a bounded draw.
        assert!(Bytes::new(&[]).below(3) < 3);
    }

    #[test]
    fn sweep_steps_evenly() {
        let v: Vec<_> = sweep(Duration::from_secs(1), Duration::from_millis(250)).collect();
        assert_eq!(v.len(), 5);
        assert_eq!(v[4], Duration::from_secs(1));
    }

    /// The fine part lands on every quarter circle to a tenth of a bucket, and nothing passes
    /// the end of the timeline.
    #[test]
    fn window_idle_gaps_reach_every_era_boundary() {
        let window = Duration::from_micros(10); // 10 buckets of 1 µs: a circle of 35.8 min
        let circle = Duration::from_micros(1 << 31);
        let gaps: Vec<Duration> =
            window_idle_gaps(window, 10, Instant::from_secs(1), 1_000).collect();
        for quarter in 1..=12u32 {
            let centre = (circle / 4) * quarter;
            let nearest = gaps.iter().map(|g| g.abs_diff(centre)).min().unwrap();
            assert!(
                nearest <= Duration::from_nanos(100),
                "quarter {quarter}: {nearest:?}"
            );
        }
        let late = Instant::MAX.saturating_sub(Duration::from_secs(3_600));
        let left = Instant::MAX - late;
        assert!(window_idle_gaps(window, 10, late, 1_000).all(|g| g <= left));
    }
}
