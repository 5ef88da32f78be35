//! A tiny shared random source for fault injection and delay distributions. It is a counter run
//! through SplitMix64: lock-free (one relaxed `fetch_add`), and deterministic for a given seed and
//! request order, so tests can check rates within a tolerance without flakiness.

use std::sync::atomic::{AtomicU64, Ordering};

const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// The seed every server starts from; a fixed seed keeps fail-rate tests reproducible.
pub(crate) const DEFAULT_SEED: u64 = 0x5eed_1b0a_d0be_ef00;

#[derive(Debug)]
pub(crate) struct Rng {
    counter: AtomicU64,
}

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self {
            counter: AtomicU64::new(seed),
        }
    }

    pub(crate) fn next_u64(&self) -> u64 {
        let x = self.counter.fetch_add(GAMMA, Ordering::Relaxed);
        splitmix64(x.wrapping_add(GAMMA))
    }

    /// Uniform in `[0, 1)`, 53 bits of precision.
    pub(crate) fn next_f64(&self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

fn splitmix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_stay_in_unit_interval_and_average_one_half() {
        let rng = Rng::new(DEFAULT_SEED);
        let n = 100_000;
        let sum: f64 = (0..n)
            .map(|_| rng.next_f64())
            .inspect(|u| assert!((0.0..1.0).contains(u)))
            .sum();
        assert!((sum / n as f64 - 0.5).abs() < 0.01);
    }

    #[test]
    fn same_seed_same_sequence() {
        let (a, b) = (Rng::new(7), Rng::new(7));
        assert!((0..100).all(|_| a.next_u64() == b.next_u64()));
    }
}
