//! Drawing for a window (`forge view`): the same passes as a render, the display image left
//! on the GPU for the window to show 1:1, settings changed between frames, and where each frame
//! was seen from (so that a window's camera can take over from the recording's own).

use anyhow::{bail, Result};

use super::agents::AgentParams;
use super::{ColorMode, Renderer, Settings};
use crate::bfs::Frame;

/// Where a frame was seen from: the 3D camera's eye and the point it looked at, or the 2D
/// view's lower-left corner and the world units it spanned.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Seen {
    /// 3D (perspective cameras): eye and target, world units.
    pub eye_target: Option<([f32; 3], [f32; 3])>,
    /// 2D (and the 3D top camera): the world point at the lower-left corner, the world units
    /// spanned across and up, and the world point at the middle.
    pub view: ([f32; 2], [f32; 2], [f32; 2]),
}

impl Seen {
    pub(super) fn of(cam3: Option<&AgentParams>, view: ([f32; 2], [f32; 2], [f32; 2])) -> Seen {
        Seen {
            eye_target: cam3.map(|c| (c.eye, c.anchor)),
            view,
        }
    }
}

impl Renderer {
    /// Renders `frame` into the display image ([`Renderer::display_view`]) and stops there: no
    /// conversion, no read-back. The image is the one [`Renderer::render`] would read back.
    pub fn show(&mut self, frame: &Frame) -> Result<()> {
        self.showing = true;
        let r = self.render(frame, &mut |_| {
            bail!("internal: a frame drawn for a window was read back")
        });
        self.showing = false;
        r
    }

    /// The display image: the last frame shown, sRGB-encoded values in the output's display
    /// format (`Rgba8Unorm` for `Output::Rgba8`).
    pub fn display_view(&self) -> &wgpu::TextureView {
        &self.ldr_view
    }

    /// The settings frames are drawn with.
    pub fn settings(&self) -> &Settings {
        &self.look
    }

    /// Where the last frame drawn was seen from.
    pub fn seen(&self) -> Seen {
        self.seen
    }

    /// Forgets the trails and the eased cameras: the next frame is drawn as a render's first.
    pub fn restart(&mut self) {
        self.drawn = 0;
        self.centre = None;
        self.follow3 = None;
        self.last_view_proj = None;
    }

    /// Waits until the GPU has done everything submitted so far.
    pub fn wait(&self) -> Result<()> {
        self.gpu
            .device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| anyhow::anyhow!("waiting for the GPU ({}): {e}", self.gpu.info.name))?;
        Ok(())
    }

    /// Takes `look` for the next frames if the passes built for the current settings serve it
    /// unchanged, and says whether it did; if not (another size, colour map, bloom on or off or
    /// its radius, overlays, density colouring, or any setting not known here to be read frame
    /// by frame), nothing changes and a new renderer is needed. Trails and eased cameras carry
    /// on.
    pub fn set_look(&mut self, look: Settings) -> bool {
        let old = &self.look;
        // `look` with the settings read frame by frame put back to the current ones: what is
        // left must be the same.
        let mut rest = look.clone();
        rest.trails = old.trails;
        rest.exposure = old.exposure;
        rest.vignette = old.vignette;
        rest.background = old.background;
        rest.background_top = old.background_top;
        rest.style = old.style;
        rest.fixed = old.fixed;
        rest.stacking = old.stacking;
        rest.shape = old.shape;
        rest.grade = old.grade;
        rest.point_size = old.point_size;
        rest.shutter = old.shutter;
        rest.fit = old.fit;
        rest.follow = old.follow;
        rest.range = old.range;
        rest.view3 = old.view3.clone();
        rest.center = old.center;
        rest.zoom = old.zoom;
        if (look.bloom > 0.0) == (old.bloom > 0.0) {
            rest.bloom = old.bloom;
        }
        // The colour mode is read frame by frame, but density has a pass of its own and the
        // colour bar names the quantity.
        let density = |c: ColorMode| c == ColorMode::Density;
        if !density(look.color) && !density(old.color) && !old.overlay.any() {
            rest.color = old.color;
        }
        if format!("{rest:?}") != format!("{old:?}") {
            return false;
        }
        if !look.follow {
            self.centre = None;
        }
        self.range = look.range.unwrap_or([0.0, 1.0]);
        self.look = look;
        true
    }
}
