//! The integration tests, as one test binary (one link of the library instead of one per
//! file): each file of `tests/` is a module of it, sharing `common`. `alloc.rs` and
//! `bfs_format.rs` count allocations with a global allocator of their own, so they stay test
//! binaries of their own. One file's tests: `cargo test --release --test integration docs::`.

mod common;

mod alpha;
mod analyze;
mod boundary;
mod cli;
mod codecs;
mod cuda;
mod damaged;
mod deploy;
mod determinism;
mod docs;
mod export;
mod film;
mod flight;
mod gltf;
mod gnf;
mod hostile;
mod interpolate;
mod kernels_host;
mod layouts;
mod long_render;
mod look;
mod motion_blur;
mod obstacle_keys;
mod obstacles;
mod one_look;
mod outputs;
mod outputs_hostile;
mod overlay;
mod physics;
mod processes;
mod release;
mod render;
mod scale_out;
mod soft;
mod species;
mod species_keys;
mod sweep;
mod timeline;
mod view;
