//! The names a look is made of — colour modes, colour maps, cameras — shared by the scene
//! schema, the command-line flags and the renderer. A leaf: it imports nothing of the crate.

/// Colour modes (`scene.render.color`, `forge render --color`).
pub const COLORS: &[&str] = &["speed", "heading", "density", "fixed"];

/// Colour maps (`scene.render.colormap`, `forge render --colormap`).
pub const COLORMAPS: &[&str] = &[
    "viridis", "magma", "inferno", "plasma", "turbo", "cividis", "twilight", "sinebow",
];

/// Cameras for 3D recordings (`scene.render.camera`, `forge render --camera`).
pub const CAMERAS: &[&str] = &["orbit", "fixed", "follow", "top"];

/// Overlay names (scene `render.overlay`, `forge render --overlay`).
pub const OVERLAYS: &[&str] = &["colorbar", "time", "title", "scale"];
