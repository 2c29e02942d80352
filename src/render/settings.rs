//! The typed settings the renderer takes (resolved by `crate::look`; the renderer never sees
//! scene files or flags): how a recording looks, the world it shows, what each frame becomes.

use crate::look::CameraMode;

pub use crate::look::{ColorMode, Fit, Shape, Style};

/// The colour mode's code in the agents pass's uniform (see `agents.wgsl`).
pub(super) fn color_code(c: ColorMode) -> u32 {
    match c {
        ColorMode::Speed => 0,
        ColorMode::Heading => 1,
        ColorMode::Density => 2,
        ColorMode::Fixed => 3,
        ColorMode::RelativeHeading => 4,
        ColorMode::Species => 5,
    }
}

/// Colour grading after the tone curve (display-referred, 0..1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Grade {
    /// Around mid grey; 1 = none.
    pub contrast: f32,
    /// 0 = grey; 1 = none.
    pub saturation: f32,
    /// Raises the blacks (0 = none).
    pub lift: f32,
    /// Of the mid-tones (1 = none; above 1 brighter).
    pub gamma: f32,
    /// Scales the whites (1 = none).
    pub gain: f32,
}

impl Grade {
    pub const NONE: Grade = Grade {
        contrast: 1.0,
        saturation: 1.0,
        lift: 0.0,
        gamma: 1.0,
        gain: 1.0,
    };
}

/// A picture under the agents (`--background-image`), at the output's size: sRGB RGBA8,
/// tight rows.
#[derive(Clone, PartialEq)]
pub struct Plate {
    /// Where it was read from (what tells two plates apart).
    pub path: std::path::PathBuf,
    pub width: u32,
    pub height: u32,
    pub rgba: std::sync::Arc<Vec<u8>>,
}

impl std::fmt::Debug for Plate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Plate({}, {}x{})",
            self.path.display(),
            self.width,
            self.height
        )
    }
}

/// Everything about how a recording looks, resolved (by `video::resolve`, from the layers of a
/// `crate::look::Look`) and validated: what the renderer takes.
#[derive(Clone, Debug)]
pub struct Settings {
    pub width: u32,
    pub height: u32,
    /// Light on dark (glow) or dark on light (ink).
    pub style: Style,
    pub color: ColorMode,
    /// `fixed:#rrggbb`: the colour, sRGB as written (`#rrggbb` / 255).
    pub fixed: Option<[f32; 3]>,
    /// `--color species`: each species' colour (sRGB bytes), by species index; the colour map
    /// is then this palette (`colormap::palette`), and each agent's value its species.
    pub palette: Option<Vec<[u8; 3]>>,
    pub colormap: crate::look::Colormap,
    /// Where the map starts (0..1): the default look leaves out a map's darkest colours.
    pub colormap_floor: f32,
    /// Colour value at the map's ends (speed in world units/s; density in agents per cell).
    /// `None`: speed → 5th..95th percentile over sampled frames; density → 0..4× the mean.
    pub range: Option<[f32; 2]>,
    /// Fraction of the previous frame kept (0 = no trails).
    pub trails: f32,
    /// Bloom strength (0 = off).
    pub bloom: f32,
    /// Bloom's size relative to the default (1): the same glow, scaled.
    pub bloom_radius: f32,
    pub exposure: f32,
    /// sRGB, as written (`#rrggbb` / 255); with `background_top`, the bottom of a gradient.
    pub background: [f32; 3],
    /// The background's colour at the top of the frame (a vertical gradient), sRGB.
    pub background_top: Option<[f32; 3]>,
    /// A transparent background: the display image's alpha is the light's coverage (glow:
    /// its brightest channel after the tone curve; ink: the ink's opacity), its colour the
    /// light's own (straight, not premultiplied); linear light (EXR) is premultiplied.
    pub alpha: bool,
    /// A picture in place of the background colour.
    pub plate: Option<Plate>,
    /// 0..1: each sprite's light divided by its crowd's overlap to this power.
    pub stacking: f32,
    pub shape: Shape,
    pub grade: Grade,
    /// Sprite core radius in pixels at 1080p (scaled with the output height).
    pub point_size: f32,
    pub fit: Fit,
    pub follow: bool,
    pub vignette: f32,
    /// Shutter angle in degrees (0 = no motion blur): each sprite is smeared over the path it
    /// covered in the last `shutter / 360` of a frame interval.
    pub shutter: f32,
    /// Overlays drawn after tone mapping (colour bar, time, title, scale bar).
    pub overlay: super::overlay::Overlays,
    /// 3D recordings only: how they are looked at (`None` for 2D).
    pub view3: Option<View3>,
    /// 2D (and the top camera): the world point at the middle of the frame (`None`: the
    /// world's centre); the follow camera's eased centre of mass takes its place.
    pub center: Option<[f32; 2]>,
    /// 2D (and the top camera): magnification over the fitted view (1 = as `fit` frames it).
    pub zoom: f32,
    /// The look's timeline: settings keyed over the run's steps, applied to these before
    /// each frame (`Renderer::render`); None without one.
    pub keys: Option<crate::look::keys::LookKeys>,
}

impl Settings {
    /// The longest trails of any frame: the look's own, or the longest its keys give. Frames
    /// drawn before the first one shown, to warm the trails up, fade by the keyed trails.
    pub fn longest_trails(&self) -> f32 {
        use crate::look::keys::LookField;
        match &self.keys {
            Some(k) => k.most(LookField::Trails, self.trails),
            None => self.trails,
        }
    }
}

/// How a 3D recording is shown (resolved and validated).
#[derive(Clone, Debug, PartialEq)]
pub struct View3 {
    pub mode: CameraMode,
    /// Fixed camera: eye and target (world units) [default: the orbit's start, world centre].
    pub eye: Option<[f32; 3]>,
    pub target: Option<[f32; 3]>,
    /// Vertical field of view, degrees.
    pub fov: f32,
    /// 0..1: how far the farthest agents fade towards the background.
    pub fog: f32,
    /// Draw the world box as a faint wireframe.
    pub world_box: bool,
    /// Orbit camera: degrees per second of video, as the look gives it.
    pub orbit_speed: f32,
    /// Orbit camera: simulated seconds per full turn (negative turns the other way; 0 holds
    /// still), from the speed and the frame rate. The phase is the frame's time over this, so
    /// frame K is seen from the same place whichever frames are rendered.
    pub orbit_period: f32,
}

/// What the renderer knows about the world from the file's header.
#[derive(Clone, Copy, Debug)]
pub struct World {
    pub dim: usize,
    /// x, y size (density, and the `top` camera, use the x–y projection of a 3D world).
    pub size: [f32; 2],
    /// z size (0 in 2D).
    pub depth: f32,
    pub wrap: bool,
    /// Agents outside the world are possible (open boundary): no scissor.
    pub open: bool,
    /// The simulation's time step, seconds (a frame's time is its step × this).
    pub dt: f32,
    /// Simulated seconds between recorded frames (the time step × the recording interval).
    pub frame_dt: f32,
}

impl World {
    /// The z size when density is counted on a 3D grid (3D recordings), else `None`.
    pub fn density_depth(&self) -> Option<f32> {
        (self.dim == 3 && self.depth > 0.0).then_some(self.depth)
    }
}

/// What comes out of each frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// Planar Y'CbCr, BT.709 limited range, as FFmpeg's rawvideo reads it (video).
    Yuv(YuvFormat),
    /// RGBA8, sRGB, tight rows (PNG).
    Rgba8,
    /// RGBA, sRGB, 16 bits a channel (native-endian `u16`), tight rows (16-bit PNG).
    Rgba16,
    /// RGBA `f32`, scene-linear light: exposure and bloom applied, no tone curve, no sRGB
    /// encoding (OpenEXR).
    Linear,
}

/// The raw Y'CbCr layouts the video pass writes (FFmpeg's names in [`YuvFormat::name`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YuvFormat {
    /// 8 bits, chroma halved both ways (H.264; every player).
    Yuv420p,
    /// 10 bits in little-endian `u16`s, chroma halved both ways (H.265, AV1).
    Yuv420p10,
    /// 10 bits in little-endian `u16`s, chroma halved horizontally only (ProRes 422).
    Yuv422p10,
}

impl YuvFormat {
    /// FFmpeg's `-pix_fmt` name.
    pub fn name(self) -> &'static str {
        match self {
            YuvFormat::Yuv420p => "yuv420p",
            YuvFormat::Yuv420p10 => "yuv420p10le",
            YuvFormat::Yuv422p10 => "yuv422p10le",
        }
    }

    pub fn bits(self) -> u32 {
        match self {
            YuvFormat::Yuv420p => 8,
            YuvFormat::Yuv420p10 | YuvFormat::Yuv422p10 => 10,
        }
    }

    /// Rows of luma per row of chroma (2 for 4:2:0, 1 for 4:2:2).
    pub fn chroma_rows(self) -> u32 {
        match self {
            YuvFormat::Yuv420p | YuvFormat::Yuv420p10 => 2,
            YuvFormat::Yuv422p10 => 1,
        }
    }
}

impl Output {
    /// The video output forge has always written: 8-bit 4:2:0.
    pub const YUV420P: Output = Output::Yuv(YuvFormat::Yuv420p);

    /// The display image's format. 8-bit outputs take `Rgba8Unorm` (the tone-map pass dithers
    /// before its store); deeper ones half floats (11 significant bits: enough for 10-bit
    /// video, and for linear light), dithered later, if at all, at their own depth.
    pub fn display_format(self) -> wgpu::TextureFormat {
        match self {
            Output::Rgba8 | Output::Yuv(YuvFormat::Yuv420p) => wgpu::TextureFormat::Rgba8Unorm,
            _ => wgpu::TextureFormat::Rgba16Float,
        }
    }

    /// Bytes of one display-image pixel as read back.
    pub fn texel_bytes(self) -> u32 {
        match self.display_format() {
            wgpu::TextureFormat::Rgba8Unorm => 4,
            _ => 8,
        }
    }
}
