//! Seeded Gaussian noise (Box-Muller over ChaCha8), so that a seed fixes every SLAM sample.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A seeded source of normally distributed samples.
#[derive(Debug, Clone)]
pub struct Gaussian {
    rng: ChaCha8Rng,
    spare: Option<f64>,
}

impl Gaussian {
    /// A generator whose samples depend only on `seed`.
    pub fn new(seed: u64) -> Self {
        Gaussian {
            rng: ChaCha8Rng::seed_from_u64(seed),
            spare: None,
        }
    }

    /// One sample of N(0, sigma^2); `sigma <= 0` gives 0 without consuming randomness.
    pub fn sample(&mut self, sigma: f64) -> f64 {
        if sigma <= 0.0 || !sigma.is_finite() {
            return 0.0;
        }
        sigma * self.standard()
    }

    fn standard(&mut self) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        // u1 in (0, 1] so that ln(u1) is finite.
        let u1: f64 = 1.0 - self.rng.gen::<f64>();
        let u2: f64 = self.rng.gen::<f64>();
        let radius = (-2.0 * u1.ln()).sqrt();
        let angle = std::f64::consts::TAU * u2;
        self.spare = Some(radius * angle.sin());
        radius * angle.cos()
    }
}
