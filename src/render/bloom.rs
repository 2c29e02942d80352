//! Bloom: bright pass + 13-tap downsample mip chain + tent upsample back up
//! (shaders/bloom.wgsl; the Call of Duty 2014 method, as in bevy's bloom).
//!
//! The finest level of the glow is the one that lies at 1080p's second level (a quarter of
//! 1080p, a blur of about four pixels there) or just below it: above 540 rows the chain
//! starts at a quarter of the frame's size, not half. Its first pass reads the HDR image with
//! 16 bilinear taps (each a 2×2 average) over the 8×8 pixels around each quarter texel, the
//! bright pass taken per tap; from 1440 rows up the finest mips are only steps down to the
//! first that glows. The half-size level, a glow of a pixel or two (narrower than a sprite's
//! halo), cost over half of bloom's time on a software driver (6 + 4 ms of 16 at 720p on
//! lavapipe), and it is left out at every size alike, so the glow looks the same at each.
//!
//! Energy-conserving: every filter's weights sum to one, and going back up the chain each
//! level is blended with the one below (not added), with weights chosen so that every level
//! counts equally and all of them sum to one. The glow therefore carries exactly the light the
//! bright pass let through (the tone-map pass scales it by the strength). The number of levels
//! follows the frame's height — six at 1080p, one more per doubling, the top one weighted by
//! the fraction — so the glow's reach is the same fraction of the frame at 720p and at 4K.

use super::{fullscreen_pipeline, layout_entry, BLOOM_FORMAT};

/// Keep in sync with `Params` in shaders/bloom.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BloomParams {
    pub threshold: f32,
    pub knee: f32,
    pub radius: f32,
    pub _pad: f32,
}

impl BloomParams {
    /// Light above ~0.25 (after the downsample's averaging) glows, fading in from 0.05;
    /// upsample taps one texel apart.
    pub const DEFAULT: BloomParams = BloomParams {
        threshold: 0.25,
        knee: 0.2,
        radius: 1.0,
        _pad: 0.0,
    };
}

/// Levels at 1080p: the glow reaches 2^6 pixels there.
pub const LEVELS_AT_1080P: f32 = 6.0;

/// At most this many mips.
const MAX_MIPS: u32 = 9;

/// The finest level that glows at this height, counting the half-size level as 0: the one at
/// 1080p's level 1 or the finer side of it (its span [1, 2) in 1080p's levels), so that the
/// finest glow is the same fraction of the frame at every size.
pub fn first_level(height: u32) -> u32 {
    ((height.max(1) as f32 / 1080.0).log2() + 1.0 - 1e-4)
        .ceil()
        .max(0.0) as u32
}

/// How much each mip of the chain counts in the glow, summing to one. Level m (of a chain
/// that would start at half size; the chain's first mip is level `first`) blurs over about
/// 2^(m+1) pixels; the glow wants the reach of 1080p's six levels as fractions of the frame,
/// equally weighted per doubling. At another height level m sits at 1080p's level
/// m − log2(height/1080); each level takes the part of 1080p's span [−½, 5½] its own
/// [m − d − ½, m − d + ½] covers, the finest also what lies below it and the coarsest what
/// lies beyond the chain. (At 4K level 0 would get nothing: it is finer than 1080p's.)
/// `radius` (1 = the default) scales the glow: the span moves up by log2(radius) levels, so
/// twice the radius is the same glow twice as wide (below the finest mip, its weight stays
/// there); the weights still sum to one.
pub fn level_weights(height: u32, first: u32, mips: u32, radius: f32) -> Vec<f32> {
    let d = (height.max(1) as f32 / 1080.0).log2() - first as f32;
    let shift = radius.max(1e-3).log2();
    let (lo, hi) = (-0.5 + shift, LEVELS_AT_1080P - 0.5 + shift);
    // Enough levels for the top one to reach `hi`, as many as the chain holds.
    let want = ((hi - 0.5 + d).ceil().max(0.0) as u32 + 1).clamp(1, mips.max(1));
    let mut w: Vec<f32> = (0..want)
        .map(|m| {
            let (a, b) = (m as f32 - d - 0.5, m as f32 - d + 0.5);
            (b.min(hi) - a.max(lo)).max(0.0)
        })
        .collect();
    let last = w.len() - 1;
    w[0] += ((-d - 0.5) - lo).max(0.0);
    w[last] += (hi - (last as f32 - d + 0.5)).max(0.0);
    let sum: f32 = w.iter().sum();
    w.iter().map(|x| x / sum).collect()
}

/// The blend factor for each upsample (level m = (1 − a)·level m + a·upsampled level m + 1)
/// that gives the levels the weights `w`.
fn blend_factors(w: &[f32]) -> Vec<f32> {
    let mut a = Vec::new();
    let mut carried = 1.0f32; // the product of the factors so far
    for &wm in &w[..w.len().saturating_sub(1)] {
        let f = (1.0 - wm / carried).clamp(0.0, 1.0);
        a.push(f);
        carried *= f;
    }
    a
}

pub struct BloomPass {
    /// HDR image → mip 0: half size (`first_level` 0, up to 540 rows), else a quarter.
    down_first: wgpu::RenderPipeline,
    down: wgpu::RenderPipeline,
    up: wgpu::RenderPipeline,
    /// One view per mip; `views[hidden]` is what the tone-map pass reads.
    views: Vec<wgpu::TextureView>,
    /// Mips finer than the first that glows: steps down the chain only.
    hidden: usize,
    /// The first downsample's bind groups: [i] reads HDR target i.
    first_groups: [wgpu::BindGroup; 2],
    /// The other downsamples' bind groups: [i] reads mip i (and writes mip i + 1).
    down_groups: Vec<wgpu::BindGroup>,
    /// Upsample bind groups: [i] reads mip i+1 (and writes mip i).
    up_groups: Vec<wgpu::BindGroup>,
    /// Blend factor of each upsample into mip `hidden + i` (see [`blend_factors`]).
    blend: Vec<f32>,
}

/// The mip chain's shape for a `width`×`height` frame and a bloom of `radius`.
pub(super) struct Chain {
    /// Mip 0 is level `start` of the frame: half size (0), or a quarter above 540 rows (1).
    pub(super) start: u32,
    /// Mips finer than the first that glows.
    pub(super) hidden: u32,
    pub(super) mips: u32,
    /// Mip 0's size.
    pub(super) size: [u32; 2],
    /// Blend factor of each upsample (see [`blend_factors`]).
    pub(super) blend: Vec<f32>,
}

impl Chain {
    pub(super) fn plan(width: u32, height: u32, radius: f32) -> Chain {
        let first = first_level(height);
        let start = first.min(1);
        let hidden = first - start;
        let w0 = (width >> (start + 1)).max(1);
        let h0 = (height >> (start + 1)).max(1);
        let mut mips = 1;
        while mips < MAX_MIPS && (w0 >> mips) >= 4 && (h0 >> mips) >= 4 {
            mips += 1;
        }
        let hidden = hidden.min(mips - 1);
        let weights = level_weights(height, start + hidden, mips - hidden, radius);
        Chain {
            start,
            hidden,
            mips: hidden + weights.len() as u32,
            size: [w0, h0],
            blend: blend_factors(&weights),
        }
    }

    /// The chain's texture, one view per mip.
    fn views(&self, device: &wgpu::Device) -> Vec<wgpu::TextureView> {
        let texture = device.create_texture(&wgpu::TextureDescriptor {
            label: Some("bloom mip chain"),
            size: wgpu::Extent3d {
                width: self.size[0],
                height: self.size[1],
                depth_or_array_layers: 1,
            },
            mip_level_count: self.mips,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: BLOOM_FORMAT,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING,
            view_formats: &[],
        });
        (0..self.mips)
            .map(|m| {
                texture.create_view(&wgpu::TextureViewDescriptor {
                    label: Some("bloom mip view"),
                    base_mip_level: m,
                    mip_level_count: Some(1),
                    ..Default::default()
                })
            })
            .collect()
    }
}

impl BloomPass {
    pub fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        hdr: [&wgpu::TextureView; 2],
        [width, height]: [u32; 2],
        radius: f32,
        sampler: &wgpu::Sampler,
    ) -> Self {
        let module = device.create_shader_module(wgpu::include_wgsl!("../../shaders/bloom.wgsl"));
        let bgl = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("bloom bind group layout"),
            entries: &[
                layout_entry::uniform(0, wgpu::ShaderStages::FRAGMENT),
                layout_entry::texture(1, wgpu::ShaderStages::FRAGMENT),
                layout_entry::sampler(2, wgpu::ShaderStages::FRAGMENT),
            ],
        });
        let params =
            super::uniform_buffer(device, "bloom params", std::mem::size_of::<BloomParams>());
        queue.write_buffer(&params, 0, bytemuck::bytes_of(&BloomParams::DEFAULT));
        let chain = Chain::plan(width, height, radius);
        let (start, hidden, mips) = (chain.start, chain.hidden, chain.mips);
        let views = chain.views(device);
        let blend = chain.blend;
        let group = |src: &wgpu::TextureView| {
            super::uniform_textures_sampler(
                device,
                "bloom bind group",
                &bgl,
                &params,
                &[src],
                Some(sampler),
            )
        };
        let first_groups = hdr.map(group);
        let down_groups = (1..mips as usize).map(|m| group(&views[m - 1])).collect();
        let up_groups = (0..mips as usize - 1)
            .map(|m| group(&views[m + 1]))
            .collect();
        // (1 − a)·this level + a·the level below, upsampled; `a` is the blend constant.
        let mix = wgpu::BlendComponent {
            src_factor: wgpu::BlendFactor::Constant,
            dst_factor: wgpu::BlendFactor::OneMinusConstant,
            operation: wgpu::BlendOperation::Add,
        };
        let mixing = Some(wgpu::BlendState {
            color: mix,
            alpha: mix,
        });
        BloomPass {
            down_first: fullscreen_pipeline(
                device,
                "bloom first downsample",
                &module,
                if start == 0 {
                    "fs_downsample_half"
                } else {
                    "fs_downsample_quarter"
                },
                Some(&bgl),
                BLOOM_FORMAT,
                None,
            ),
            down: fullscreen_pipeline(
                device,
                "bloom downsample",
                &module,
                "fs_downsample",
                Some(&bgl),
                BLOOM_FORMAT,
                None,
            ),
            up: fullscreen_pipeline(
                device,
                "bloom upsample",
                &module,
                "fs_upsample",
                Some(&bgl),
                BLOOM_FORMAT,
                mixing,
            ),
            views,
            hidden: hidden as usize,
            first_groups,
            down_groups,
            up_groups,
            blend,
        }
    }

    /// The result, for the tone-map pass.
    pub fn output(&self) -> &wgpu::TextureView {
        &self.views[self.hidden]
    }

    /// Blooms HDR target `hdr`.
    pub fn run(&self, encoder: &mut wgpu::CommandEncoder, hdr: usize) {
        encoder.push_debug_group("bloom");
        for (m, view) in self.views.iter().enumerate() {
            let mut pass = super::begin_overwrite(encoder, "bloom downsample pass", &[view]);
            pass.set_pipeline(if m == 0 { &self.down_first } else { &self.down });
            let group = if m == 0 {
                &self.first_groups[hdr]
            } else {
                &self.down_groups[m - 1]
            };
            pass.set_bind_group(0, group, &[]);
            pass.draw(0..3, 0..1);
        }
        for m in (self.hidden..self.views.len() - 1).rev() {
            let mut pass = super::begin_pass(encoder, "bloom upsample pass", &self.views[m], None);
            pass.set_pipeline(&self.up);
            let a = self.blend[m - self.hidden] as f64;
            pass.set_blend_constant(wgpu::Color {
                r: a,
                g: a,
                b: a,
                a,
            });
            pass.set_bind_group(0, &self.up_groups[m], &[]);
            pass.draw(0..3, 0..1);
        }
        encoder.pop_debug_group();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_follow_the_height_and_weigh_one() {
        for (h, n) in [(1080, 6), (2160, 7), (720, 6), (360, 5), (180, 4)] {
            let w = level_weights(h, 0, MAX_MIPS, 1.0);
            assert_eq!(w.len(), n, "{h}p");
            assert!((w.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        }
        // 1080p: six equal levels. 720p: level 0 also takes the finer 0.585 of a level below
        // it, level 5 the 0.415 left at the top. 4K: nothing for the finest level.
        assert!(level_weights(1080, 0, MAX_MIPS, 1.0)
            .iter()
            .all(|&x| (x - 1.0 / 6.0).abs() < 1e-6));
        let w = level_weights(720, 0, MAX_MIPS, 1.0);
        assert!(
            (w[0] * 6.0 - 1.585).abs() < 0.01 && (w[5] * 6.0 - 0.415).abs() < 0.01,
            "{w:?}"
        );
        let w = level_weights(2160, 0, MAX_MIPS, 1.0);
        assert!(w[0] < 1e-6 && (w[1] * 6.0 - 1.0).abs() < 1e-5, "{w:?}");
        // A short chain (a small frame) keeps what it has.
        assert_eq!(level_weights(2160, 0, 3, 1.0).len(), 3);
        // Glowing from level 1 at 1080p: 1080p's level 0 goes to it; level 2 at 4K is 1080p's
        // level 1 again, with the same weights.
        let w = level_weights(1080, 1, MAX_MIPS, 1.0);
        assert_eq!(w.len(), 5);
        assert!((w[0] * 6.0 - 2.0).abs() < 1e-5, "{w:?}");
        assert!(
            w[1..].iter().all(|&x| (x * 6.0 - 1.0).abs() < 1e-5),
            "{w:?}"
        );
        assert_eq!(
            level_weights(2160, 2, MAX_MIPS, 1.0),
            level_weights(1080, 1, MAX_MIPS, 1.0)
        );
    }

    #[test]
    fn the_radius_moves_the_glow_up_the_chain() {
        let one = level_weights(1080, 0, MAX_MIPS, 1.0);
        // Twice the radius: the same weights one level coarser; four times: two.
        for (radius, up) in [(2.0, 1), (4.0, 2)] {
            let w = level_weights(1080, 0, MAX_MIPS, radius);
            assert!(w[..up].iter().all(|&x| x < 1e-6), "{w:?}");
            assert_eq!(&w[up..], &one[..], "radius {radius}");
        }
        // Half: the finest mip also keeps what lies below it.
        let w = level_weights(1080, 0, MAX_MIPS, 0.5);
        assert_eq!(w.len(), 5);
        assert!(
            (w[0] * 6.0 - 2.0).abs() < 1e-5 && (w[1] * 6.0 - 1.0).abs() < 1e-5,
            "{w:?}"
        );
        // Between doublings the ends take the fractions.
        let w = level_weights(1080, 0, MAX_MIPS, 1.5);
        assert!((w.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!((w[0] * 6.0 - (1.0 - 1.5f32.log2())).abs() < 1e-4, "{w:?}");
    }

    #[test]
    fn the_finest_glow_sits_at_1080ps_second_level() {
        for (h, first) in [
            (180, 0),
            (360, 0),
            (538, 0),
            (540, 0),
            (542, 1),
            (720, 1),
            (1080, 1),
        ] {
            assert_eq!(first_level(h), first, "{h} rows");
        }
        for (h, first) in [(1440, 2), (2160, 2), (4320, 3)] {
            assert_eq!(first_level(h), first, "{h} rows");
        }
        // In 1080p's levels the finest glowing level lies in [1, 2) from 540 rows up.
        for h in [540, 720, 1080, 1440, 2160, 4320] {
            let at = first_level(h) as f32 - (h as f32 / 1080.0).log2();
            assert!((1.0 - 1e-3..2.0).contains(&at), "{h}: {at}");
        }
    }

    #[test]
    fn blending_up_the_chain_gives_those_weights() {
        for (h, first) in [(180, 0), (720, 0), (720, 1), (1080, 1), (2160, 1)] {
            let w = level_weights(h, first, MAX_MIPS, 1.0);
            let a = blend_factors(&w);
            // Level j's share of the top: the factors before it, times (1 − its own).
            let mut carried = 1.0;
            for (j, &wj) in w.iter().enumerate() {
                let share = carried * if j < a.len() { 1.0 - a[j] } else { 1.0 };
                assert!((share - wj).abs() < 1e-5, "{h}p level {j}: {share} vs {wj}");
                if j < a.len() {
                    carried *= a[j];
                }
            }
        }
    }
}
