//! The command-line arguments of every command, and their value parsers.

use std::path::PathBuf;

use crate::scene::{self, Scene, Search};
use crate::sim::backend::Backend;
use crate::vocab;

/// A flag value that does not parse; clap prints it after the flag's name.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadValue(String);

impl From<String> for BadValue {
    fn from(s: String) -> BadValue {
        BadValue(s)
    }
}

/// What `simulate` and `run` may change of a scene; stored back into the recording's scene.
#[derive(clap::Args, Debug, Clone, Copy, Default)]
pub struct Overrides {
    /// Override the scene's number of steps.
    #[arg(long)]
    pub steps: Option<u64>,
    /// Override the scene's number of agents (the world keeps its size).
    #[arg(long)]
    pub agents: Option<u64>,
    /// Override the scene's random seed.
    #[arg(long)]
    pub seed: Option<u64>,
}

impl Overrides {
    /// Applies the overrides to `scene`, naming the flag at fault.
    pub fn apply(&self, scene: &mut Scene) -> Result<(), anyhow::Error> {
        if let Some(s) = self.steps {
            if s > scene::MAX_STEPS {
                anyhow::bail!("--steps: must be at most {}, got {s}", scene::MAX_STEPS);
            }
            scene.steps = s;
        }
        if let Some(n) = self.agents {
            if n == 0 || n > scene::MAX_AGENTS {
                anyhow::bail!("--agents: must be in 1..={}, got {n}", scene::MAX_AGENTS);
            }
            if scene.init.layout == scene::Layout::File {
                anyhow::bail!(
                    "--agents: the scene takes its agents from {}",
                    scene.init.path.as_deref().unwrap_or("a file")
                );
            }
            scene.agents = n as u32;
            if let Some(c) = scene.init.count {
                scene.init.count = Some(c.min(n as u32));
            }
        }
        if let Some(s) = self.seed {
            scene.seed = s;
        }
        Ok(())
    }
}

#[derive(clap::Args, Debug)]
pub struct SimulateArgs {
    /// A scene file (JSON) or the name of a built-in scene (see `forge scenes`).
    pub scene: String,
    /// Output recording [default: SCENE_NAME.bfs in the current folder]. Written as
    /// NAME.XXXXXX.partial and renamed when complete; stopped early (SIGINT, SIGTERM, a full
    /// disk), the .partial keeps every complete frame.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub overrides: Overrides,
    /// Worker threads [default: all cores]. The output does not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Neighbour search [default: the scene's, else auto]. The output does not depend on it.
    #[arg(long, value_enum)]
    pub search: Option<Search>,
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: Backend,
    /// Overwrite the output if it exists.
    #[arg(long)]
    pub force: bool,
    /// No progress bar and no summary line.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(clap::Args, Debug)]
pub struct InfoArgs {
    /// A recording (.bfs, ours or BoidForge's BFS1).
    pub file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Write every frame's metrics to this CSV file.
    #[arg(long, value_name = "OUT.csv")]
    pub metrics: Option<PathBuf>,
    /// Plot every frame's polarization, mean speed and nearest-neighbour distance (PNG).
    #[arg(long, value_name = "OUT.png")]
    pub plot: Option<PathBuf>,
    /// Measure only frames A..B of the recording (B excluded; either may be left out)
    /// [default: all].
    #[arg(long, value_name = "A..B", value_parser = parse_frames)]
    pub frames: Option<(Option<u64>, Option<u64>)>,
    /// Giant number fluctuations: ΔN against ⟨N⟩ over boxes of growing size in the measured
    /// frames, and the exponent α of ΔN ∝ ⟨N⟩^α (0.5 for a gas, ≈ 0.8 for a 2D ordered flock).
    #[arg(long)]
    pub gnf: bool,
    /// Write the GNF table (one row per box size) to this CSV file (implies --gnf).
    #[arg(long, value_name = "OUT.csv")]
    pub gnf_csv: Option<PathBuf>,
    /// Plot ΔN against ⟨N⟩, log-log, with the fitted line (PNG; implies --gnf).
    #[arg(long, value_name = "OUT.png")]
    pub gnf_plot: Option<PathBuf>,
    /// Overwrite the metrics CSV or plot, or the GNF CSV or plot, if it exists.
    #[arg(long)]
    pub force: bool,
}

// ---------------------------------------------------------------------------------------------
// forge render / still / gpus / run / demo

/// How a recording looks. Each flag falls back to the recording's scene `render` section,
/// then to the default shown.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct LookArgs {
    /// Output size in pixels, two even numbers [default: scene's, else 1920x1080].
    #[arg(long, value_name = "WxH", value_parser = parse_size, conflicts_with_all = ["uhd", "fhd", "hd"])]
    pub size: Option<[u32; 2]>,
    /// 3840x2160.
    #[arg(long = "4k", conflicts_with_all = ["fhd", "hd"])]
    pub uhd: bool,
    /// 1920x1080.
    #[arg(long = "1080p", conflicts_with = "hd")]
    pub fhd: bool,
    /// 1280x720.
    #[arg(long = "720p")]
    pub hd: bool,
    /// Colour agents by speed, heading, density (computed on the GPU) or one fixed colour
    /// [default: scene's, else speed].
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(vocab::COLORS))]
    pub color: Option<String>,
    /// Colour map [default: scene's, else inferno from 30% in (its near-black end left out);
    /// sinebow for heading].
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(vocab::COLORMAPS))]
    pub colormap: Option<String>,
    /// Values at the colour map's ends [default: scene's, else speed: 5th..95th percentile
    /// over 16 sampled frames; density: 0..4x the mean agents per cell].
    #[arg(long, value_name = "A..B", value_parser = parse_range_f32)]
    pub range: Option<[f32; 2]>,
    /// Trails: fraction of the previous frame kept, in [0, 1), 0 = off [default: scene's, else
    /// the light halves in 0.15 s: 0.86 at 30 fps].
    #[arg(long)]
    pub trails: Option<f32>,
    /// Bloom strength, 0 = off [default: scene's, else 0.5].
    #[arg(long)]
    pub bloom: Option<f32>,
    /// Bloom's size, relative to the default: 2 = the same glow twice as wide, 0.5 = half; the
    /// same fraction of the frame at every size, its light the same (0.25..=4) [default:
    /// scene's, else 1].
    #[arg(long, value_name = "R")]
    pub bloom_radius: Option<f32>,
    /// Exposure before tone mapping [default: scene's, else measured on the recording: how
    /// much light the agents pile up on screen, one value for the whole clip].
    #[arg(long)]
    pub exposure: Option<f32>,
    /// Background colour, #rrggbb [default: scene's, else #05050a].
    #[arg(long, value_name = "#RRGGBB")]
    pub background: Option<String>,
    /// Sprite core radius in pixels at 1080p, scaled with the output height [default: scene's;
    /// else, with a measured exposure, 0.15 of the agents' mean spacing on screen (1.4..4.5),
    /// otherwise 1.5].
    #[arg(long)]
    pub point_size: Option<f32>,
    /// Vignette strength, 0 = none [default: 0.25].
    #[arg(long)]
    pub vignette: Option<f32>,
    /// Motion blur: the shutter angle in degrees, film's convention (180 = open half of each
    /// frame interval; 0 = off). Each agent is smeared along its velocity over the shutter
    /// time, with its light kept [default: scene's, else 0].
    #[arg(long, value_name = "SHUTTER")]
    pub motion_blur: Option<f32>,
    /// Overlays drawn over the picture, comma-separated: colorbar (the colour map, its range
    /// and quantity), time (t = … s, step), title, scale (a bar in world units, 2D); or none
    /// [default: scene's, else none].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub overlay: Option<Vec<String>>,
    /// Title text; shows the title overlay [default: scene's, else the scene's name].
    #[arg(long)]
    pub title: Option<String>,
    /// How the world fills the frame when their aspects differ [default: letterbox].
    #[arg(long, value_enum)]
    pub fit: Option<crate::render::Fit>,
    /// Keep the centre of mass in the middle of the frame (eased); for a 3D recording, the
    /// same as --camera follow.
    #[arg(long)]
    pub follow: bool,
    /// 3D recordings: orbit (circle the world once over the clip), fixed (from --eye towards
    /// --target), follow (track the centre of mass) or top (orthographic x-y projection)
    /// [default: orbit; fixed if --eye or --target is given].
    #[arg(long, value_enum)]
    pub camera: Option<crate::render::camera::CameraMode>,
    /// 3D, --camera fixed: where the eye is, world units
    /// [default: where the orbit starts, 25° above the -y side].
    #[arg(long, value_name = "X,Y,Z", value_parser = parse_vec3, allow_hyphen_values = true)]
    pub eye: Option<[f32; 3]>,
    /// 3D, --camera fixed: the point looked at, world units [default: the world's centre].
    #[arg(long, value_name = "X,Y,Z", value_parser = parse_vec3, allow_hyphen_values = true)]
    pub target: Option<[f32; 3]>,
    /// 3D: vertical field of view in degrees [default: 45].
    #[arg(long, value_name = "DEG")]
    pub fov: Option<f32>,
    /// 3D: fog, 0..1: how far the farthest agents fade towards the background [default: 0].
    #[arg(long)]
    pub fog: Option<f32>,
    /// 3D: draw the world box as a faint wireframe.
    #[arg(long = "box")]
    pub world_box: bool,
    /// GPU adapter: an index or part of a name from `forge gpus` [default: the best present].
    #[arg(long)]
    pub adapter: Option<String>,
}

impl LookArgs {
    pub fn flags(&self) -> crate::look::LookFlags {
        let size = if self.uhd {
            Some([3840, 2160])
        } else if self.fhd {
            Some([1920, 1080])
        } else if self.hd {
            Some([1280, 720])
        } else {
            self.size
        };
        crate::look::LookFlags {
            size,
            fps: None,
            color: self.color.clone(),
            colormap: self.colormap.clone(),
            range: self.range,
            trails: self.trails,
            bloom: self.bloom,
            bloom_radius: self.bloom_radius,
            exposure: self.exposure,
            background: self.background.clone(),
            point_size: self.point_size,
            fit: self.fit,
            follow: self.follow,
            vignette: self.vignette,
            motion_blur: self.motion_blur,
            overlay: self.overlay.clone(),
            title: self.title.clone(),
            camera: self.camera,
            eye: self.eye,
            target: self.target,
            fov: self.fov,
            fog: self.fog,
            world_box: self.world_box,
        }
    }
}

/// Video output flags (shared by render, run and demo).
#[derive(clap::Args, Debug, Clone)]
pub struct VideoArgs {
    /// Frames per second of the video: one recorded frame per video frame
    /// [default: scene's, else 30].
    #[arg(long)]
    pub fps: Option<u32>,
    /// Video codec: h264 (8-bit, .mp4, plays everywhere), h265 or av1 (10-bit, .mp4),
    /// prores (ProRes 422 HQ, 10-bit 4:2:2, .mov, for editing) [default: h264].
    #[arg(long, value_enum, value_name = "CODEC")]
    pub codec: Option<crate::video::codec::Codec>,
    /// A specific FFmpeg encoder (e.g. h264_nvenc, libaom-av1) [default: the codec's:
    /// libx264, libx265, libsvtav1 (else libaom-av1, librav1e), prores_ks].
    #[arg(long, value_name = "NAME")]
    pub encoder: Option<String>,
    /// Constant rate factor: lower is better [default: 18 for libx264 (0..=51), 20 for libx265
    /// (0..=51), 30 for libsvtav1 and libaom-av1 (0..=63); ProRes has none].
    #[arg(long)]
    pub crf: Option<u32>,
    /// Encoder speed [default: veryfast for libx264, medium for libx265 (ultrafast .. placebo), 8 for
    /// libsvtav1 (0..=13), 6 for libaom-av1 (0..=8); lower numbers are slower and better].
    #[arg(long)]
    pub preset: Option<String>,
    /// Draw K−1 frames between each pair of recorded ones (agents on smooth paths through
    /// both positions, velocities as tangents; the shortest way across a wrapping seam): a
    /// recording taken every few steps plays smoothly, K times slower at the same --fps.
    /// Recorded frames come out exactly as they are [default: 1, none drawn between].
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub interpolate: Option<u64>,
    /// Write PNG frames (frame_000000.png, ...) into this folder instead of a video.
    #[arg(long, value_name = "DIR")]
    pub png: Option<PathBuf>,
    /// Overwrite the outputs if they exist: the video (or PNG files), and for `run` the --bfs
    /// recording too. Never an input.
    #[arg(long)]
    pub force: bool,
    /// No progress bar and no summary line.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Needs FFmpeg for video (apt-get install ffmpeg) and a GPU or Mesa's software \
driver (apt-get install mesa-vulkan-drivers libvulkan1 libegl1 libegl-mesa0 libgl1-mesa-dri).\n\
A recording cut short renders every complete frame (with a warning); a frame that cannot be read \
stops the render with an error naming it, and no video is left behind."
)]
pub struct RenderArgs {
    /// A recording (.bfs, ours or BoidForge's BFS1).
    pub file: PathBuf,
    /// Output video [default: FILE with .mp4].
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Frames A..B of the recording (B excluded; either may be left out) [default: all].
    #[arg(long, value_name = "A..B", value_parser = parse_frames)]
    pub frames: Option<(Option<u64>, Option<u64>)>,
    /// Render only piece I (0-based) of N contiguous, balanced frame ranges of the clip, with
    /// the whole clip's look, trails warmed up from the frames before it, and a manifest in the
    /// MP4's metadata; join the pieces with `forge concat`. `auto` (or `auto/N`) reads I and N
    /// from a Slurm job array, a Kubernetes Indexed Job or FORGE_TASK_INDEX/FORGE_TASK_COUNT.
    #[arg(long, value_name = "I/N|auto", value_parser = crate::engine::parse_task_spec)]
    pub chunk: Option<crate::engine::TaskSpec>,
    #[command(flatten)]
    pub video: VideoArgs,
    #[command(flatten)]
    pub look: LookArgs,
}

#[derive(clap::Args, Debug)]
pub struct StillArgs {
    /// A recording (.bfs, ours or BoidForge's BFS1).
    pub file: PathBuf,
    /// Frame to render (with trails, the frames before it are rendered too).
    #[arg(long, default_value_t = 0)]
    pub frame: u64,
    /// Output image (.png, or .exr for linear light).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Image format: png (8-bit sRGB), png16 (16-bit sRGB), exr (32-bit float linear light,
    /// no tone curve) [default: exr for an .exr output, else png].
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<crate::video::StillFormat>,
    /// Overwrite the output if it exists.
    #[arg(long)]
    pub force: bool,
    /// No progress bar and no summary line.
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub look: LookArgs,
}

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// A scene file (JSON) or the name of a built-in scene (see `forge scenes`).
    pub scene: String,
    /// Output video [default: SCENE_NAME.mp4].
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Keep the recording here [default: a temporary file, deleted afterwards]. An existing
    /// file is overwritten only with --force, which covers every output of `run`; it must not be
    /// the video's name. Stopped early (a signal, a full disk), it keeps its complete frames
    /// under its temporary name.
    #[arg(long, value_name = "FILE.bfs")]
    pub bfs: Option<PathBuf>,
    #[command(flatten)]
    pub overrides: Overrides,
    #[command(flatten)]
    pub video: VideoArgs,
    #[command(flatten)]
    pub look: LookArgs,
}

/// `forge demo`: the embedded default scene, sized to render in about a minute on a CPU.
#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Output video.
    #[arg(short, long, default_value = "demo.mp4")]
    pub output: PathBuf,
    /// Overwrite the output if it exists.
    #[arg(long)]
    pub force: bool,
    /// No progress bar and no summary line.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Demo settings: the default scene (`murmuration`) with fewer agents and steps, 1280x720.
pub const DEMO_AGENTS: u64 = 10_000;
pub const DEMO_STEPS: u64 = 360;

fn parse_size(s: &str) -> Result<[u32; 2], BadValue> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("expected WxH (like 1920x1080), got {s:?}"))?;
    let w: u32 = w
        .trim()
        .parse()
        .map_err(|_| format!("bad width in {s:?}"))?;
    let h: u32 = h
        .trim()
        .parse()
        .map_err(|_| format!("bad height in {s:?}"))?;
    if w == 0 || h == 0 {
        return Err(format!("width and height must be above zero, got {w}x{h}").into());
    }
    if w % 2 == 1 || h % 2 == 1 {
        return Err(format!("H.264 (yuv420p) needs even sizes, got {w}x{h}").into());
    }
    Ok([w, h])
}

fn parse_vec3(s: &str) -> Result<[f32; 3], BadValue> {
    let parts: Vec<&str> = s.split(',').collect();
    if parts.len() != 3 {
        return Err(format!("expected X,Y,Z, got {s:?}").into());
    }
    let mut v = [0.0f32; 3];
    for (o, t) in v.iter_mut().zip(&parts) {
        *o = t
            .trim()
            .parse()
            .map_err(|_| format!("bad number {:?} in {s:?}", t.trim()))?;
        if !o.is_finite() {
            return Err(format!("need finite numbers, got {s:?}").into());
        }
    }
    Ok(v)
}

fn parse_range_f32(s: &str) -> Result<[f32; 2], BadValue> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("expected A..B, got {s:?}"))?;
    let a: f32 = a.trim().parse().map_err(|_| format!("bad number {a:?}"))?;
    let b: f32 = b.trim().parse().map_err(|_| format!("bad number {b:?}"))?;
    if !(a.is_finite() && b.is_finite() && a < b) {
        return Err(format!("need finite A < B, got {s}").into());
    }
    Ok([a, b])
}

fn parse_frames(s: &str) -> Result<(Option<u64>, Option<u64>), BadValue> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("expected A..B (B excluded; A.. or ..B allowed), got {s:?}"))?;
    let num = |t: &str| -> Result<Option<u64>, BadValue> {
        if t.trim().is_empty() {
            Ok(None)
        } else {
            t.trim()
                .parse()
                .map(Some)
                .map_err(|_| BadValue(format!("bad frame number {t:?}")))
        }
    };
    let (a, b) = (num(a)?, num(b)?);
    if let (Some(a), Some(b)) = (a, b) {
        if a >= b {
            return Err(format!("{a}..{b} is empty").into());
        }
    }
    Ok((a, b))
}

// ---------------------------------------------------------------------------------------------
// forge export

#[derive(clap::Args, Debug)]
#[command(
    after_help = "In Python: d = numpy.load(\"run.npz\"); d[\"pos\"].shape  # (frames, agents, dim)\n\
.npz arrays: pos, vel (float32, frames x agents x dim), frame, step (int64), time (float64, \
step x dt), polarization, mean_speed, nn_distance, pairwise_distance (float64, as forge info \
--metrics; not with --no-metrics), world (float32, dim), scene (the scene JSON, a string).\n\
.csv rows: frame,step,time,agent,x,y[,z],vx,vy[,vz], one per agent per frame, for recordings \
of at most 10 million rows.\n\
Both are written as a stream (memory does not grow with the recording) and appear under their \
name only when complete."
)]
pub struct ExportArgs {
    /// A recording (.bfs, ours or BoidForge's BFS1).
    pub file: PathBuf,
    /// Output: .npz (NumPy) or .csv [default: FILE with .npz].
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Frames A..B of the recording (B excluded; either may be left out) [default: all].
    #[arg(long, value_name = "A..B", value_parser = parse_frames)]
    pub frames: Option<(Option<u64>, Option<u64>)>,
    /// Export every K-th frame of the range, from its first.
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub every: u64,
    /// .npz: leave out the per-frame metrics (computing them is most of the time of a large
    /// export: about 0.1 s a frame of 100,000 agents).
    #[arg(long)]
    pub no_metrics: bool,
    /// Overwrite the output if it exists.
    #[arg(long)]
    pub force: bool,
    /// No progress bar and no summary line.
    #[arg(short, long)]
    pub quiet: bool,
}

// ---------------------------------------------------------------------------------------------
// forge concat

#[derive(clap::Args, Debug)]
#[command(
    after_help = "The parts may be given in any order (a shell glob sorts part-10 \
before part-2): they are joined in chunk order, by stream copy (no re-encode). Each part's \
manifest (the forge_chunk tag in its metadata) is read with ffprobe, which comes with FFmpeg \
(FORGE_FFPROBE, else the ffprobe beside FORGE_FFMPEG, else ffprobe on the PATH). A missing, \
duplicated, foreign or damaged part is refused, naming it, and nothing is written."
)]
pub struct ConcatArgs {
    /// The chunks (MP4 files from `forge render --chunk I/N`), every one of them once.
    #[arg(required = true, value_name = "PARTS")]
    pub parts: Vec<PathBuf>,
    /// The joined film.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Overwrite the output if it exists.
    #[arg(long)]
    pub force: bool,
    /// No summary line.
    #[arg(short, long)]
    pub quiet: bool,
}
