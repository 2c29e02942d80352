//! forge: flocking simulations recorded to `.bfs`, exactly reproducible.
//!
//! The modules follow the pipeline `scene → sim → record → bfs → look → render → video`:
//! - [`scene`]: scene files and built-in scenes, resolved and validated;
//! - [`sim`]: the models, the neighbour grid, the CPU and CUDA solvers (no I/O);
//! - [`record`]: the background writer that takes frames from a solver to a [`bfs`] file;
//! - [`bfs`]: the format (write, read, BoidForge's BFS1) — the only contract between the
//!   solver and the renderer;
//! - [`look`]: flags, then the recording's `render` section, then defaults, resolved once;
//! - [`render`]: the headless wgpu renderer (one file per pass; typed settings only);
//! - [`video`]: the frame loop from a recording through the renderer into a sink (FFmpeg,
//!   PNG files, a still image);
//! - [`sweep`], [`bench`], [`metrics`], [`plot`]: parameter sweeps, benchmarks, order
//!   parameters, plots;
//! - [`export`]: a recording out to NumPy (`.npz`) or CSV;
//! - [`cli`]: argument types and one thin file per command;
//! - leaves: [`output`] (the one atomic-write helper: temporary names, locks in `lock.rs`, same-file
//!   checks), [`signal`] (SIGINT/SIGTERM as a flag the work loops poll), [`process`] (every
//!   external program run with a deadline, stopped on a signal), [`progress`],
//!   [`units`], [`vocab`], [`sys`] (free memory and disk space, opening only regular files).
pub mod bench;
pub mod bfs;
pub mod cli;
pub mod engine;
pub mod export;
pub mod look;
pub mod metrics;
pub mod output;
pub mod plot;
pub mod process;
pub mod progress;
pub mod record;
pub mod render;
pub mod scene;
pub mod signal;
pub mod sim;
pub mod sweep;
pub mod sys;
pub mod units;
pub mod video;
pub mod vocab;
