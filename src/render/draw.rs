//! Drawing one frame's agents into the HDR target: the sprite sizes, the per-frame agent
//! parameters (2D view or 3D camera, colour range, motion blur) and the buffers they read.

use super::agents::{AgentBuffers, AgentBuffers3, AgentParams};
use super::splat::{SplatFrame, SplatParams};
use super::Renderer;

/// The halo's brightness relative to the core, for the sprites and the splat path alike.
pub(super) const SPRITE_HALO: f32 = 0.35;

impl Renderer {
    /// Draws the `n` agents of the frame already uploaded to the agent buffer into
    /// `hdr_views[cur]`, over the last frame's light times the fade (trails); `cam3` is the 3D
    /// camera's parameters (else the 2D `view`: lower-left corner, size, centre). Returns
    /// whether the world box is to be drawn over the display image.
    pub(super) fn draw_agents(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        n: u32,
        cam3: Option<AgentParams>,
        view: ([f32; 2], [f32; 2], [f32; 2]),
        range: [f32; 2],
        mean_heading: f32,
    ) -> bool {
        let core_px = self.core_px();
        if cam3.is_none() && self.splat_draws(core_px) {
            self.splat_agents(encoder, n, view, range, mean_heading, core_px);
            return false;
        }
        self.fade
            .run(encoder, &self.hdr_views[self.cur], self.cur, self.carried());
        self.sprite_agents(encoder, n, cam3, view, range, mean_heading, core_px)
    }

    /// The sprites' core width in pixels this frame.
    pub(super) fn core_px(&self) -> f32 {
        // Below ~0.7 px a core would fall between pixel centres and flicker: keep it a pixel.
        (self.look.point_size * self.look.height as f32 / 1080.0).max(0.7)
    }

    /// Whether the agents are round sprites of one size, not motion-blurred: what a filter
    /// over the frame can draw (the splat path, the CPU's frames).
    pub(super) fn round_dots(&self) -> bool {
        self.look.shape == super::Shape::Dot && self.look.shutter <= 0.0 && self.sizes.is_none()
    }

    /// Whether this frame's 2D agents go through the splat path: round dots of one size on an
    /// adapter with the compute passes, at a size they fit.
    fn splat_draws(&self, core_px: f32) -> bool {
        let Some(splat) = &self.splat else {
            return false;
        };
        let size = [self.look.width, self.look.height];
        self.way != super::way::Way::Sprites
            && self.round_dots()
            && splat.fits(size, core_px, SPRITE_HALO)
    }

    /// The 2D view's sprite parameters as the splat path takes them (`splat.rs`; the CPU's
    /// frames too): the view, colours, crowd and trails.
    pub(super) fn splat_params(
        &self,
        view: ([f32; 2], [f32; 2], [f32; 2]),
        range: [f32; 2],
        mean_heading: f32,
        core_px: f32,
    ) -> SplatParams {
        let (view_min, view_size, centre) = view;
        let sprite = self.sprite_params(AgentParams::default(), core_px, core_px * 4.0, range, 0.0);
        let (w, h) = (self.look.width as f32, self.look.height as f32);
        let scissor = match self.scissor(centre, view_min, view_size) {
            Some([x, y, sw, sh]) => [x as f32, y as f32, (x + sw) as f32, (y + sh) as f32],
            None => [0.0, 0.0, w, h],
        };
        let carried = self.carried();
        SplatParams {
            view_min,
            view_size,
            world: self.world.size,
            viewport: [w, h],
            range,
            mode: sprite.mode,
            copies: self.copies(view_min, view_size, core_px * 4.0),
            stacking: sprite.stacking,
            stack_area: sprite.stack_area,
            mean_heading,
            fade: carried.unwrap_or(0.0),
            carry: carried.is_some() as u32,
            intensity: sprite.intensity,
            dim: self.world.dim as u32,
            scissor,
            fixed: sprite.fixed,
            ..Default::default()
        }
    }

    /// The 2D agents through the splat path (`splat.rs`), the trails carried in its last pass.
    fn splat_agents(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        n: u32,
        view: ([f32; 2], [f32; 2], [f32; 2]),
        range: [f32; 2],
        mean_heading: f32,
        core_px: f32,
    ) {
        let params = self.splat_params(view, range, mean_heading, core_px);
        let Some(mut splat) = self.splat.take() else {
            return;
        };
        let (values, _, _) = self.per_agent_slots(n);
        let prev = 1 - self.cur;
        let frame = SplatFrame {
            agents: &self.agents_buf,
            values,
            n,
            prev: &self.hdr_views[prev],
            hdr: &self.hdr_views[self.cur],
            core_px,
            halo_level: SPRITE_HALO,
        };
        let gpu = &self.gpu;
        splat.run(&gpu.device, &gpu.queue, encoder, params, &frame);
        self.splat = Some(splat);
    }

    /// The agents as instanced sprites (`agents.rs`), added onto the HDR target.
    #[allow(clippy::too_many_arguments)]
    fn sprite_agents(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        n: u32,
        cam3: Option<AgentParams>,
        view: ([f32; 2], [f32; 2], [f32; 2]),
        range: [f32; 2],
        mean_heading: f32,
        core_px: f32,
    ) -> bool {
        let (view_min, view_size, centre) = view;
        let queue = &self.gpu.queue;
        let radius_px = core_px * 4.0;
        // The narrowest core a sprite can have: the smallest species' multiple of it, and in
        // 3D the farthest sprite's (shaders/agents.wgsl, `vs_main3`: a quarter, 0.7 px at
        // least). From WIDE_CORE_PX up the sprites take the cheaper core.
        let narrowest_core = match cam3 {
            Some(_) => (core_px * self.per_agent.smallest_size * 0.25).max(0.7),
            None => core_px * self.per_agent.smallest_size,
        };
        let wide_core = narrowest_core >= super::agents::WIDE_CORE_PX;
        let frame = |p: AgentParams| self.sprite_params(p, core_px, radius_px, range, mean_heading);
        let (density_buf, sizes_buf, sized) = self.per_agent_slots(n);
        // Positions at 0, velocities right after them (the file's frame layout).
        let a = &self.agents_buf;
        let q = n as u64 * 4;
        let stride = self.world.dim as u64 * q;
        match cam3 {
            Some(c) => {
                let params = frame(AgentParams {
                    copies: 1,
                    sized,
                    ..c
                });
                let bufs = AgentBuffers3 {
                    slots: [
                        (a, 0),
                        (a, q),
                        (a, 2 * q),
                        (a, stride),
                        (a, stride + q),
                        (a, stride + 2 * q),
                        (density_buf, 0),
                        (sizes_buf, 0),
                    ],
                    n,
                };
                self.agents.draw3(
                    queue,
                    encoder,
                    &self.hdr_views[self.cur],
                    &params,
                    wide_core,
                    &bufs,
                );
                self.look.view3.as_ref().is_some_and(|v| v.world_box)
            }
            None => {
                let params = frame(AgentParams {
                    view_min,
                    view_size,
                    world: self.world.size,
                    copies: self.copies(view_min, view_size, radius_px),
                    sized,
                    ..Default::default()
                });
                let bufs = AgentBuffers {
                    slots: [
                        (a, 0),
                        (a, q),
                        (a, stride),
                        (a, stride + q),
                        (density_buf, 0),
                        (sizes_buf, 0),
                    ],
                    n,
                };
                let scissor = self.scissor(centre, view_min, view_size);
                self.agents.draw(
                    queue,
                    encoder,
                    &self.hdr_views[self.cur],
                    &params,
                    wide_core,
                    &bufs,
                    scissor,
                );
                false
            }
        }
    }

    /// The buffers of the density slot (`--color species`: the species values where the
    /// density would be) and of the size slot (each agent's size multiple where its species has
    /// one, else any buffer: unread), and whether sizes are read.
    fn per_agent_slots(&self, n: u32) -> (&wgpu::Buffer, &wgpu::Buffer, u32) {
        let density = self
            .density
            .as_ref()
            .map(|d| &d.density)
            .or(self.species.as_ref())
            .unwrap_or(&self.agents_buf);
        let sizes = self.sizes.as_ref().filter(|b| b.size() >= n as u64 * 4);
        (
            density,
            sizes.unwrap_or(&self.agents_buf),
            sizes.is_some() as u32,
        )
    }

    /// `p` (the view's or the camera's parameters) with this frame's sprite parameters, the
    /// same in 2D and 3D: sizes, colour mode and range, motion blur (the simulated time the
    /// shutter is open in each frame interval), stacking, shape.
    fn sprite_params(
        &self,
        p: AgentParams,
        core_px: f32,
        radius_px: f32,
        range: [f32; 2],
        mean_heading: f32,
    ) -> AgentParams {
        let fixed = self.look.fixed.map(|c| c.map(super::srgb_to_linear));
        AgentParams {
            viewport: [self.look.width as f32, self.look.height as f32],
            range,
            radius_px,
            core: (core_px / radius_px).clamp(0.05, 1.0),
            // Species without their ids (a renderer never told them): one colour.
            mode: match self.look.color {
                super::ColorMode::Species if self.species.is_none() => {
                    super::settings::color_code(super::ColorMode::Fixed)
                }
                c => super::settings::color_code(c),
            },
            intensity: 1.0,
            halo: SPRITE_HALO,
            shutter: self.look.shutter / 360.0 * self.world.frame_dt,
            stacking: self.look.stacking,
            // A sprite's light covers about 4.76 core radii squared (see video::resolve::exposure).
            stack_area: 4.76 * core_px * core_px
                / (super::agents::CROWD_CELL * super::agents::CROWD_CELL) as f32,
            shape: (self.look.shape == super::Shape::Dart) as u32,
            mean_heading,
            fixed: match fixed {
                Some([r, g, b]) => [r, g, b, 1.0],
                None => [0.0; 4],
            },
            ..p
        }
    }

    /// How many copies of each agent a 2D frame of the view `view_min`, `view_size` draws
    /// (shaders/agents.wgsl, `copy_shift`): 1 where the world does not wrap; 4, the agent and
    /// its images across the nearer edges, where no sprite of the far images can reach into the
    /// view (it reaches less than half a world past the world's edges, by more than a sprite's
    /// reach); else all 9. Sprites of `radius_px` pixels; a motion-blurred streak, or a
    /// species' own size, may reach further: those frames draw all 9.
    fn copies(&self, view_min: [f32; 2], view_size: [f32; 2], radius_px: f32) -> u32 {
        if !self.world.wrap {
            return 1;
        }
        if self.look.shutter > 0.0 || self.sizes.is_some() {
            return 9;
        }
        let (w, h) = (self.look.width as f32, self.look.height as f32);
        let near = (0..2).all(|k| {
            let world = self.world.size[k];
            // A dart's quad reaches DART_LENGTH radii along its heading; two pixels of slack.
            let reach = (radius_px * super::agents::DART_LENGTH + 2.0) * view_size[k] / [w, h][k];
            view_min[k] >= -0.5 * world + reach && view_min[k] + view_size[k] <= 1.5 * world - reach
        });
        if near {
            4
        } else {
            9
        }
    }

    /// The world's rectangle on screen in uv (x0, y0, x1, y1; y down) for the 2D `view`; the
    /// whole frame where the world repeats (tiled) or has no edge (open).
    pub(super) fn world_rect(&self, view: ([f32; 2], [f32; 2], [f32; 2])) -> [f32; 4] {
        let (view_min, view_size, centre) = view;
        if self.world.open || (self.world.wrap && self.look.fit == super::Fit::Tile) {
            return [0.0, 0.0, 1.0, 1.0];
        }
        let u = |x: f32, axis: usize| (x - view_min[axis]) / view_size[axis];
        let lo = [
            centre[0] - self.world.size[0] / 2.0,
            centre[1] - self.world.size[1] / 2.0,
        ];
        [
            u(lo[0], 0),
            1.0 - u(lo[1] + self.world.size[1], 1),
            u(lo[0] + self.world.size[0], 0),
            1.0 - u(lo[1], 1),
        ]
    }

    /// Pixel rectangle agents may be drawn in: one world-sized window around the view's
    /// centre, so the letterbox bars stay empty and a wrapping world shows every agent once.
    fn scissor(
        &self,
        centre: [f32; 2],
        view_min: [f32; 2],
        view_size: [f32; 2],
    ) -> Option<[u32; 4]> {
        // Open worlds have agents outside; a tiled wrapping world shows its repeats.
        if self.world.open || (self.world.wrap && self.look.fit == super::Fit::Tile) {
            return None;
        }
        let (w, h) = (self.look.width as f32, self.look.height as f32);
        let lo = [
            centre[0] - self.world.size[0] / 2.0,
            centre[1] - self.world.size[1] / 2.0,
        ];
        let px = |x: f32, axis: usize| (x - view_min[axis]) / view_size[axis];
        let x0 = (px(lo[0], 0) * w).round().clamp(0.0, w);
        let x1 = (px(lo[0] + self.world.size[0], 0) * w)
            .round()
            .clamp(0.0, w);
        // Pixel rows run top-down; world y runs bottom-up.
        let y0 = ((1.0 - px(lo[1] + self.world.size[1], 1)) * h)
            .round()
            .clamp(0.0, h);
        let y1 = ((1.0 - px(lo[1], 1)) * h).round().clamp(0.0, h);
        Some([
            x0 as u32,
            y0 as u32,
            (x1 - x0).max(0.0) as u32,
            (y1 - y0).max(0.0) as u32,
        ])
    }
}
