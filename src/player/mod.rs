//! `forge view`: the interactive player. A window (winit) shows a recording, or a scene while
//! it is simulated, drawn by the same renderer and passes as `forge render` into its display
//! image, copied 1:1 into the window, with a panel (egui) beside it where every setting of the
//! look is tuned live and a bar below it (the timeline, the transport, the HUD). What the
//! window shows is what a render of that look gives: the look, the camera included, is saved
//! as a look file that `forge render FILE --look NAME.look.json` and `forge still` read.
//!
//! - [`frames`]: recorded frames streamed from disk, read ahead of the playhead;
//! - frames of a live run come over a channel from [`crate::live`];
//! - [`clock`]: the playhead; [`screen`]: the renderer and whether its image is exact;
//! - [`tune`]: the look resolved as a render resolves it; [`save`]: the look file;
//! - [`camera`]: pan, zoom, orbit, dolly, fly as changes to the look;
//! - [`window`]: the window, its surface and egui; [`blit`]: the image into the window;
//! - [`app`]: the event loop; [`play`]: one frame's work; [`input`]: keys and mouse;
//!   [`panel`], [`bar`]: the controls.

mod app;
mod bar;
mod blit;
pub mod camera;
pub mod clock;
mod frames;
mod input;
mod panel;
pub mod panel_paint;
mod physics;
mod play;
mod save;
mod screen;
mod tune;
mod window;

use std::path::PathBuf;

use anyhow::{anyhow, bail, Context, Result};

use crate::bfs::Reader;
use crate::live::{self, Live, LiveScene};
use crate::video::resolve::Layers;

/// What to watch.
pub enum Input {
    /// A recording (forge's `.bfs` or BoidForge's BFS1).
    Recording(PathBuf),
    /// A scene, simulated while it is shown.
    Scene(Box<LiveScene>),
}

/// One `forge view`, its flags resolved.
pub struct Options {
    /// The look's layers above the recording's own (flags, a `--look` file).
    pub look: Layers,
    /// `--interpolate K` (1: the recorded frames only).
    pub interpolate: u64,
    pub adapter: Option<String>,
    /// Where `s` writes the look [default: NAME.look.json beside the recording].
    pub save_look: Option<PathBuf>,
    /// Replace a look file that was there before.
    pub force: bool,
    /// Start paused.
    pub paused: bool,
    /// Play again from the start at the end.
    pub looping: bool,
    /// The name the window and messages give the input.
    pub name: String,
    /// Quit after this many seconds, saying how many frames were shown (benchmarks, scripts).
    pub quit_after: Option<f64>,
    /// Show this many frames as fast as the window goes, then quit, saying how fast.
    pub bench_frames: Option<u64>,
}

/// Why no window can open: the one line a user gets, naming the cause and what works instead.
#[derive(Debug, thiserror::Error)]
#[error(
    "forge view needs a display: {0}; without one, `forge still FILE --frame K -o frame.png` \
     and `forge render FILE` draw the same images"
)]
pub struct NoDisplay(pub String);

/// The cause when the environment names no display at all.
fn no_display_named() -> Option<String> {
    let set = |v: &str| std::env::var_os(v).is_some_and(|x| !x.is_empty());
    if set("DISPLAY") || set("WAYLAND_DISPLAY") || set("WAYLAND_SOCKET") {
        None
    } else {
        Some("neither DISPLAY nor WAYLAND_DISPLAY is set".into())
    }
}

/// The display the environment names, for messages.
fn display_name() -> String {
    match (std::env::var("WAYLAND_DISPLAY"), std::env::var("DISPLAY")) {
        (Ok(w), _) if !w.is_empty() => format!("WAYLAND_DISPLAY={w}"),
        (_, Ok(d)) => format!("DISPLAY={d}"),
        _ => "the display".into(),
    }
}

/// winit's error text without the source location it starts with ("os error at
/// FILE:LINE: what happened").
pub(crate) fn os_error_text(s: &str) -> &str {
    match s.strip_prefix("os error at ") {
        Some(rest) => rest.split_once(": ").map_or(rest, |(_, what)| what),
        None => s,
    }
}

/// Runs the player on `input` until its window closes; gives `--bench-frames`' report (lines
/// for standard output) where it was asked for.
pub fn run(input: Input, o: Options) -> Result<Option<String>> {
    if let Some(cause) = no_display_named() {
        return Err(NoDisplay(cause).into());
    }
    let event_loop = winit::event_loop::EventLoop::new().map_err(|e| {
        NoDisplay(format!(
            "cannot connect to {}: {}",
            display_name(),
            os_error_text(&e.to_string())
        ))
    })?;
    // Every check on the input and the look before the window opens.
    let source = app::Source::prepare(input, &o)?;
    let mut app = app::App::new(o, source);
    event_loop
        .run_app(&mut app)
        .map_err(|e| anyhow!("the window's event loop failed: {e}"))?;
    app.result()
}

/// Opens a recording for the player, with the warnings and notes `forge render` prints.
fn open_recording(path: &std::path::Path) -> Result<Reader> {
    let r = crate::bfs::open_recording(path)?;
    for w in r.warnings() {
        log::warn!("{}: {w}", path.display());
    }
    if r.header().world_inferred {
        log::info!(
            "note: {} stores no world size; using the inferred {} x {}",
            path.display(),
            r.header().world_size[0],
            r.header().world_size[1]
        );
    }
    if r.frame_count() == 0 {
        bail!("{} has no frames to show", path.display());
    }
    Ok(r)
}

/// A live run's look is resolved over its first frame: written, with the run's header, to a
/// temporary recording that the look is resolved over (as a render resolves it over a file).
fn first_frame_recording(
    live: &mut Live,
) -> Result<(tempfile::TempDir, PathBuf, crate::bfs::Frame)> {
    let first = match live.next_blocking()? {
        live::Msg::Frame(f) => f,
        live::Msg::Keyed(_) => bail!("a parameter was set before the first frame"),
        live::Msg::Ended(why) => bail!(
            "the simulation ended before its first frame{}",
            why.map(|w| format!(": {w}")).unwrap_or_default()
        ),
    };
    let dir = tempfile::Builder::new()
        .prefix("forge-view-")
        .tempdir()
        .context("cannot create a temporary folder for the look")?;
    let path = dir.path().join("first-frame.bfs");
    let file = std::fs::File::create(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    let mut w = crate::bfs::Writer::new(file, &live.header)?;
    w.write_frame(first.step, &first.pos, &first.vel)?;
    w.finalize()?;
    Ok((dir, path, first))
}
