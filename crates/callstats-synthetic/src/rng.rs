//! The one seeded generator of the synthetic data, calls and portal alike: wyrand, written out
//! here so that no dependency upgrade changes the data. (fastrand, the project's generator
//! for jitter and failure injection, changed its wyrand constants in 2.5; every demo value
//! and every test pinned to one would have moved with it.)

/// wyrand: a tiny, well-mixed generator.
pub(crate) struct Rng(u64);

impl Rng {
    /// A stream for one purpose: the same (seed, purpose) always gives the same.
    pub(crate) fn new(seed: u64, purpose: &str) -> Self {
        let mut state = seed ^ 0x243F_6A88_85A3_08D3;
        for byte in purpose.bytes() {
            state = (state ^ u64::from(byte)).wrapping_mul(0x0100_0000_01B3);
        }
        Self(state)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0xA076_1D64_78BD_642F);
        let product = u128::from(self.0) * u128::from(self.0 ^ 0xE703_7ED1_A0B4_28DB);
        let high = u64::try_from(product >> 64).unwrap_or(0);
        let low = u64::try_from(product & u128::from(u64::MAX)).unwrap_or(0);
        high ^ low
    }

    /// Uniform in `0..n` (`0` when `n` is 0).
    pub(crate) fn below<T: Into<u64> + TryFrom<u64> + Default>(&mut self, n: T) -> T {
        T::try_from(self.next() % n.into().max(1)).unwrap_or_default()
    }

    /// Uniform in `[0, 1)`.
    pub(crate) fn unit(&mut self) -> f64 {
        f64::from(u32::try_from(self.next() >> 32).unwrap_or(0)) / 4_294_967_296.0
    }

    /// Uniform in `[low, high)`.
    pub(crate) fn between(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * self.unit()
    }

    /// One element of a non-empty slice.
    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        let len = u64::try_from(items.len()).ok()?;
        items.get(usize::try_from(self.below(len)).ok()?)
    }

    /// True `per_mille` times in a thousand.
    pub(crate) fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000_u64) < per_mille
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn a_seed_and_purpose_give_one_stream_and_draws_stay_in_range() {
        let draws = |purpose| {
            let mut rng = Rng::new(42, purpose);
            (0..1000).map(|_| rng.below(7_u32)).collect::<Vec<_>>()
        };
        assert_eq!(draws("roster"), draws("roster"));
        assert_ne!(draws("roster"), draws("scripts"));
        assert!(draws("roster").iter().all(|&n| n < 7));
        assert!((0..7).all(|n| draws("roster").contains(&n)));
        let mut rng = Rng::new(1, "unit");
        assert!((0..1000).all(|_| (0.0..1.0).contains(&rng.unit())));
        assert_eq!(rng.below(0_u64), 0);
        assert_eq!(rng.pick::<u8>(&[]), None);
    }
}
