//! What the window shows: the renderer (the same passes as `forge render`, into its display
//! image), the frame in that image, and whether that image is exactly the one a render (or a
//! still) of that frame gives.
//!
//! A render draws every frame from the first, so its trails and its follow camera carry the
//! whole history. The player keeps that while it plays forward frame by frame with the same
//! settings; after a jump, a backwards step or a change of look it draws the frame at once
//! (approximately) and then [`Settle`]s: the frames before it are drawn into the trails exactly
//! as `forge still` draws them (and, for a follow camera, the camera eased over every frame from
//! the first), a few at a time between window frames, and the frame is drawn again.

use std::time::{Duration, Instant};

use anyhow::Result;

use super::frames::Frames;
use crate::bfs::Frame;
use crate::render::gpu::Gpu;
use crate::render::{Output, Renderer, Settings, World};
use crate::video::chunk::warm_start;
use crate::video::SceneMarks;

/// The renderer and what its display image holds.
pub struct Screen {
    renderer: Renderer,
    gpu: Gpu,
    world: World,
    capacity: u32,
    /// What the scene adds to the frames (the recording's, or the live scene's): the species
    /// `--color species` colours by, the sprites' sizes, the obstacles.
    marks: SceneMarks,
    /// The output frame in the display image.
    shown: Option<u64>,
    /// The last output frame drawn into the trails (shown or passed over).
    drawn: Option<u64>,
    /// Whether the display image is the render's own image of `shown`.
    exact: bool,
    /// A settle under way.
    settle: Option<Settle>,
}

impl Screen {
    /// A screen for `capacity` agents of a scene that adds `marks`.
    pub fn new(
        gpu: Gpu,
        settings: Settings,
        world: World,
        capacity: u32,
        marks: SceneMarks,
    ) -> Result<Screen> {
        let renderer = renderer(&gpu, settings, world, capacity, &marks)?;
        Ok(Screen {
            renderer,
            gpu,
            world,
            capacity,
            marks,
            shown: None,
            drawn: None,
            exact: false,
            settle: None,
        })
    }

    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    pub fn renderer(&self) -> &Renderer {
        &self.renderer
    }

    pub fn settings(&self) -> &Settings {
        self.renderer.settings()
    }

    /// The output frame the display image holds.
    pub fn shown(&self) -> Option<u64> {
        self.shown
    }

    /// Whether the display image is exactly a render's image of the frame shown.
    pub fn exact(&self) -> bool {
        self.exact && self.settle.is_none()
    }

    /// Whether a settle is under way.
    pub fn settling(&self) -> bool {
        self.settle.is_some()
    }

    /// New settings for the next frames: the passes kept where they serve, else built again
    /// (a new size, say). The image is no longer exact.
    pub fn set_settings(&mut self, s: Settings) -> Result<()> {
        if !self.renderer.set_look(s.clone()) {
            self.renderer = renderer(&self.gpu, s, self.world, self.capacity, &self.marks)?;
        }
        self.exact = false;
        self.settle = None;
        Ok(())
    }

    /// Draws `f` as the frame after the one shown (playing forward): exactness carries on.
    pub fn next(&mut self, f: &Frame) -> Result<()> {
        let follows = self.drawn.is_some_and(|d| d + 1 == f.index);
        if f.index == 0 {
            self.renderer.restart();
        }
        self.renderer.show(f)?;
        self.exact = f.index == 0 || (follows && self.exact);
        self.shown = Some(f.index);
        self.drawn = Some(f.index);
        self.settle = None;
        Ok(())
    }

    /// Draws `f` into the trails only, as a frame passed over on the way to the next one shown.
    pub fn pass(&mut self, f: &Frame) -> Result<()> {
        let follows = self.drawn.is_some_and(|d| d + 1 == f.index);
        self.renderer.warm(f, &mut |_| Ok(()))?;
        self.exact &= follows;
        self.drawn = Some(f.index);
        Ok(())
    }

    /// Draws `f` over whatever the trails hold (a jump, a step back): shown at once, not
    /// exact.
    pub fn jump(&mut self, f: &Frame) -> Result<()> {
        self.renderer.show(f)?;
        self.exact = false;
        self.shown = Some(f.index);
        self.drawn = Some(f.index);
        Ok(())
    }

    /// Starts drawing output frame `target` exactly (see [`Settle`]); the image shown stays
    /// until it is done.
    pub fn settle(&mut self, target: u64) {
        let trails = self.renderer.settings().longest_trails();
        let start = warm_start(&(target..target + 1), trails);
        let replay = if self.renderer.follows() { 0 } else { start };
        self.settle = Some(Settle {
            target,
            next: replay,
            warm_from: start,
            started: false,
        });
    }

    /// Carries a settle on for about `budget`; true when the image is exact.
    pub fn work(&mut self, frames: &Frames, budget: Duration) -> Result<bool> {
        let Some(mut s) = self.settle.take() else {
            return Ok(self.exact);
        };
        let t0 = Instant::now();
        if !s.started {
            self.renderer.restart();
            s.started = true;
        }
        while t0.elapsed() < budget {
            let f = frames.get(s.next, 1)?;
            if s.next < s.warm_from {
                self.renderer.skip(&f);
            } else if s.next < s.target {
                self.renderer.warm(&f, &mut |_| Ok(()))?;
            } else {
                self.renderer.show(&f)?;
                self.renderer.wait()?;
                self.shown = Some(s.target);
                self.drawn = Some(s.target);
                self.exact = true;
                return Ok(true);
            }
            s.next += 1;
            if s.next % 8 == 0 {
                // What was submitted is done before the time is taken again.
                self.renderer.wait()?;
            }
        }
        self.renderer.wait()?;
        self.settle = Some(s);
        Ok(false)
    }
}

/// The renderer for `settings`, told the scene's marks as `forge render` tells its renderer.
fn renderer(
    gpu: &Gpu,
    settings: Settings,
    world: World,
    capacity: u32,
    marks: &SceneMarks,
) -> Result<Renderer> {
    let mut r = Renderer::new(gpu.clone(), settings, world, Output::Rgba8, capacity)?;
    marks.apply(&mut r);
    Ok(r)
}

/// Drawing one frame exactly as a render does: the follow camera eased over every frame before
/// it (skipped, not drawn), the trails warmed up from where earlier light has faded away
/// (`video::chunk::warm_start`, as `forge still` does), then the frame itself.
struct Settle {
    target: u64,
    /// The next output frame to go through.
    next: u64,
    /// Frames from here on are drawn into the trails.
    warm_from: u64,
    /// Whether the renderer has been restarted for it.
    started: bool,
}
