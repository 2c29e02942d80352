//! rustfft's planner for float64, planned here so that its generic algorithms are compiled in
//! this crate, beside the library, rather than in it. The library calls the plans through
//! `dyn Fft`, which instantiates nothing.

use std::sync::Arc;

pub use rustfft::num_complex::Complex;
pub use rustfft::Fft;

/// The forward and the inverse transform of `len` points (unnormalised, as rustfft's).
pub fn plan(len: usize) -> (Arc<dyn Fft<f64>>, Arc<dyn Fft<f64>>) {
    let mut planner = rustfft::FftPlanner::new();
    (planner.plan_fft_forward(len), planner.plan_fft_inverse(len))
}
