//! forge: flocking simulations recorded to `.bfs`, exactly reproducible.
//!
//! The modules follow the pipeline `scene → sim → record → bfs → render → video`:
//! - [`scene`]: scene files and built-in scenes, resolved and validated;
//! - [`sim`]: the models, the neighbour grid, the CPU and CUDA solvers (no I/O);
//! - [`record`]: the background writer that takes frames from a solver to a [`bfs`] file;
//! - [`simulate`]: a scene simulated into a recording, the one way every front end (the CLI,
//!   the player's live mode, the Python package) does it;
//! - [`bfs`]: the format (write, read, BoidForge's BFS1) — the only contract between the
//!   solver and the renderer;
//! - [`look`]: the one type of a look's settings (flags, look files and a scene's `render`
//!   section alike), and its vocabulary, a leaf that scenes and the renderer share (the look
//!   is resolved over a recording into the renderer's settings by [`video::resolve`]);
//! - [`render`]: the headless wgpu renderer (one file per pass; typed settings only);
//! - [`video`]: the look resolved over a recording ([`video::resolve`]: layers, measured
//!   exposure, colour ranges), the frame loop from a recording through the renderer into a
//!   sink (FFmpeg, PNG files, a still image), and the encoders;
//! - [`sweep`], [`bench`], [`metrics`], [`plot`]: parameter sweeps, benchmarks, order
//!   parameters, plots;
//! - [`export`]: a recording out to NumPy (`.npz`), CSV or extended XYZ;
//! - [`analyze`]: correlation length, susceptibility, g(r) and neighbour anisotropy of a
//!   recording (`forge analyze`);
//! - [`live`]: a scene simulated while it is watched: the solver on a thread, its frames to
//!   the player over a channel (and to a recording, as `forge simulate` writes it);
//! - [`player`]: `forge view`, the interactive player: a window drawn by the same renderer,
//!   the look tuned live and saved for a render, live simulations watched as they run;
//! - [`cli`]: argument types and one thin file per command;
//! - leaves: [`output`] (the one atomic-write helper: temporary names, locks in `lock.rs`, same-file
//!   checks), [`signal`] (SIGINT/SIGTERM as a flag the work loops poll), [`process`] (every
//!   external program run with a deadline, stopped on a signal), [`progress`],
//!   [`units`], [`sys`] (free memory and disk space, opening only regular files).
// Every unsafe operation sits in an `unsafe` block with its SAFETY note, unsafe fns included.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod analyze;
pub mod bench;
pub mod bfs;
pub mod cli;
pub mod engine;
pub mod export;
pub mod live;
pub mod look;
pub mod metrics;
pub mod output;
pub mod player;
pub mod plot;
pub mod process;
pub mod progress;
pub mod record;
pub mod render;
pub mod scene;
pub mod signal;
pub mod sim;
pub mod simulate;
pub mod sweep;
pub mod sys;
pub mod units;
pub mod video;
