//! forge: flocking simulations recorded to `.bfs`, exactly reproducible.
pub mod bench;
pub mod bfs;
pub mod cli;
pub mod metrics;
pub mod record;
pub mod scene;
pub mod scenes;
pub mod sim;
