//! forge: flocking simulations recorded to `.bfs`, exactly reproducible.
pub mod bench;
pub mod bfs;
pub mod cli;
pub mod metrics;
pub mod plot;
pub mod progress;
pub mod record;
pub mod render;
pub mod scene;
pub mod scenes;
pub mod sim;
pub mod sweep;
pub mod video;
