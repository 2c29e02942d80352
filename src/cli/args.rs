//! The command-line arguments of every command, and their value parsers.

use std::path::PathBuf;

use crate::bfs::FrameRange;
use crate::look::{Look, Size};
use crate::scene::Search;
use crate::sim::backend::Backend;
use crate::video::Layers;

pub use crate::scene::Overrides;

#[derive(clap::Args, Debug)]
pub struct SimulateArgs {
    /// A scene file (JSON) or the name of a built-in scene (see `forge scenes`).
    ///
    /// Every field is in the guide's Scenes chapter. Obstacles: `"obstacles": [{"circle":
    /// {"center": [x, y], "radius": r}}, {"box": {"min": [..], "max": [..]}}, {"segment":
    /// {"from": [..], "to": [..], "radius": r}}]` (a circle is a sphere in 3D); boids steer
    /// around them with `boids.w_avoid` (default max_force), looking `boids.look_ahead` time
    /// units ahead (default 1) for a berth of `boids.clearance` (default r_sep), and never end
    /// a step inside one.
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
    /// Write every frame's metrics (and each parameter its timeline keys) to this CSV file.
    #[arg(long, value_name = "OUT.csv")]
    pub metrics: Option<PathBuf>,
    /// Plot every frame's polarization, mean speed and nearest-neighbour distance (PNG), and
    /// each parameter the recording's timeline keys.
    #[arg(long, value_name = "OUT.png")]
    pub plot: Option<PathBuf>,
    /// With --plot: draw the polarization against this parameter of the recording's timeline
    /// (`vicsek.noise`) instead of against time, rising and falling stretches in two colours
    /// (a hysteresis loop).
    #[arg(long, value_name = "PARAM", requires = "plot")]
    pub against: Option<String>,
    /// Measure only frames A..B of the recording (B excluded; either may be left out)
    /// [default: all].
    #[arg(long, value_name = "A..B")]
    pub frames: Option<FrameRange>,
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
    /// No progress bar.
    #[arg(short, long)]
    pub quiet: bool,
}

// ---------------------------------------------------------------------------------------------
// forge render / still / gpus / run / demo

/// How a recording looks: every setting of a [`Look`] as a flag (each falls back to a
/// `--look` file, then to the recording's scene `render` section, then to a default or a
/// value measured over the recording), with the size shortcuts, the look file and the GPU.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct LookArgs {
    #[command(flatten)]
    pub look: Look,
    /// 3840x2160 (--size 3840x2160).
    #[arg(long = "4k", help_heading = "Frame", conflicts_with_all = ["size", "fhd", "hd"])]
    pub uhd: bool,
    /// 1920x1080.
    #[arg(long = "1080p", help_heading = "Frame", conflicts_with_all = ["size", "hd"])]
    pub fhd: bool,
    /// 1280x720.
    #[arg(long = "720p", help_heading = "Frame", conflicts_with = "size")]
    pub hd: bool,
    /// A look file: JSON with any of the fields of a scene's `render` section (what
    /// --print-look prints). Flags override it; it overrides the recording's section
    /// [default: none].
    #[arg(
        long = "look",
        value_name = "FILE.json",
        help_heading = "Look file and GPU"
    )]
    pub look_file: Option<PathBuf>,
    /// GPU adapter: an index or part of a name from `forge gpus` [default: the best present].
    #[arg(long, help_heading = "Look file and GPU")]
    pub adapter: Option<String>,
}

impl LookArgs {
    /// The layers above the recording's: the flags (the size shortcuts included), the file.
    pub fn layers(&self) -> anyhow::Result<Layers> {
        let mut flags = self.look.clone();
        if self.uhd {
            flags.size = Some(Size([3840, 2160]));
        } else if self.fhd {
            flags.size = Some(Size([1920, 1080]));
        } else if self.hd {
            flags.size = Some(Size([1280, 720]));
        }
        let file = match &self.look_file {
            Some(p) => Some(crate::video::resolve::read_look_file(p)?),
            None => None,
        };
        Ok(Layers { flags, file })
    }
}

/// Video output flags (shared by render, run and demo).
#[derive(clap::Args, Debug, Clone)]
pub struct VideoArgs {
    /// Video codec: h264 (8-bit, .mp4, plays everywhere), h265 or av1 (10-bit, .mp4),
    /// prores (ProRes 422 HQ, 10-bit 4:2:2, .mov, for editing) [default: h264].
    #[arg(long, value_enum, value_name = "CODEC", help_heading = "Video")]
    pub codec: Option<crate::video::codec::Codec>,
    /// A specific FFmpeg encoder (e.g. h264_nvenc, libaom-av1) [default: the codec's:
    /// libx264, libx265, libsvtav1 (else libaom-av1, librav1e), prores_ks].
    #[arg(long, value_name = "NAME", help_heading = "Video")]
    pub encoder: Option<String>,
    /// Constant rate factor: lower is better [default: 18 for libx264 (0..=51), 20 for libx265
    /// (0..=51), 30 for libsvtav1 and libaom-av1 (0..=63); ProRes has none].
    #[arg(long, help_heading = "Video")]
    pub crf: Option<u32>,
    /// Encoder speed [default: veryfast for libx264, medium for libx265 (ultrafast .. placebo), 8 for
    /// libsvtav1 (0..=13), 6 for libaom-av1 (0..=8); lower numbers are slower and better].
    #[arg(long, help_heading = "Video")]
    pub preset: Option<String>,
    /// Draw K−1 frames between each pair of recorded ones (agents on smooth paths through
    /// both positions, velocities as tangents; the shortest way across a wrapping seam): a
    /// recording taken every few steps plays smoothly, K times slower at the same --fps.
    /// Recorded frames come out exactly as they are [default: 1, none drawn between].
    #[arg(long, value_name = "K", help_heading = "Video", value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub interpolate: Option<u64>,
    /// Write PNG frames (frame_000000.png, ...) into this folder instead of a video.
    #[arg(long, value_name = "DIR", help_heading = "Video")]
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
#[command(after_help = "Examples:\n  \
forge render run.bfs                                  # run.mp4, 1920x1080, the measured look\n  \
forge render run.bfs --720p --color heading --trails 0.9 -o heading.mp4\n  \
forge render run.bfs --frames 100..400 --codec prores  # an editor's clip, .mov\n  \
forge render run.bfs --print-look > look.json          # pin the look, edit it, then:\n  \
forge render run.bfs --look look.json --exposure 0.8\n  \
forge render run.bfs --chunk 0/4 -o part-0.mp4         # one of 4 pieces; forge concat joins them\n\n\
Needs FFmpeg for video (apt-get install ffmpeg) and a GPU or Mesa's software \
driver (apt-get install mesa-vulkan-drivers libvulkan1 libegl1 libegl-mesa0 libgl1-mesa-dri).\n\
A recording cut short renders every complete frame (with a warning); a frame that cannot be read \
stops the render with an error naming it, and no video is left behind.")]
pub struct RenderArgs {
    /// A recording (.bfs, ours or BoidForge's BFS1).
    pub file: PathBuf,
    /// Output video [default: FILE with .mp4].
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Frames A..B of the recording (B excluded; either may be left out) [default: all].
    #[arg(long, value_name = "A..B")]
    pub frames: Option<FrameRange>,
    /// Render only piece I (0-based) of N contiguous, balanced frame ranges of the clip, with
    /// the recording's look, trails warmed up from the frames before it, and a manifest in the
    /// MP4's metadata; join the pieces with `forge concat`. `auto` (or `auto/N`) reads I and N
    /// from a Slurm job array, a Kubernetes Indexed Job or FORGE_TASK_INDEX/FORGE_TASK_COUNT.
    #[arg(long, value_name = "I/N|auto", value_parser = crate::engine::parse_task_spec)]
    pub chunk: Option<crate::engine::TaskSpec>,
    /// Print the resolved look as JSON (every setting, the measured ones included) and exit
    /// without rendering; `--look` reads it back.
    #[arg(long)]
    pub print_look: bool,
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
    #[arg(short, long, required_unless_present = "print_look")]
    pub output: Option<PathBuf>,
    /// Image format: png (8-bit sRGB), png16 (16-bit sRGB), exr (32-bit float linear light,
    /// no tone curve) [default: exr for an .exr output, else png].
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<crate::video::StillFormat>,
    /// Print the resolved look as JSON (every setting, the measured ones included) and exit
    /// without rendering; `--look` reads it back.
    #[arg(long)]
    pub print_look: bool,
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

/// `forge demo`: the embedded default scene, sized to render in under a minute on 2 CPU cores.
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
.xyz: extended XYZ for OVITO and ASE, a block per frame: the world box as Lattice and pbc, then \
species, pos, velo (2D in the plane z = 0), id and Z (0) per agent; Time, Step and Frame.\n\
Each is written as a stream (memory does not grow with the recording) and appears under its \
name only when complete."
)]
pub struct ExportArgs {
    /// A recording (.bfs, ours or BoidForge's BFS1).
    pub file: PathBuf,
    /// Output: .npz (NumPy), .csv, .xyz (extended XYZ), .usda/.usd (USD text) or .glb (binary
    /// glTF, for Blender without USD) [default: FILE with .npz].
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Frames A..B of the recording (B excluded; either may be left out) [default: all].
    #[arg(long, value_name = "A..B")]
    pub frames: Option<FrameRange>,
    /// Export every K-th frame of the range, from its first.
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub every: u64,
    /// .npz: leave out the per-frame metrics (computing them is most of the time of a large
    /// export: about 0.1 s a frame of 100,000 agents).
    #[arg(long)]
    pub no_metrics: bool,
    /// USD: colour every agent in every frame (`primvars:displayColor`) as `forge render
    /// --color` does: speed, heading, relative-heading, species or fixed[:#rrggbb], with the
    /// recording's look for the rest [default: each species' colour, where it has species].
    #[arg(long, value_name = "COLOR")]
    pub color: Option<crate::look::ColorBy>,
    /// USD, with --color: the colour map, as `forge render --colormap` [default: the look's].
    #[arg(long, value_name = "MAP", value_enum)]
    pub colormap: Option<crate::look::Colormap>,
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

// ---------------------------------------------------------------------------------------------
// forge view

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Keys: space play/pause, ← → one frame back/on, Home End first/last \
frame, + − faster/slower (×0.05 to ×8), r reverse, l loop, s save the look, f follow (2D), 0 fit \
(2D) or the recording's camera (3D), q or Esc quit. Mouse over the picture: 2D drag pans, wheel \
zooms about the cursor; 3D drag orbits, right drag pans, wheel dollies, W A S D Q E with the \
right button held fly. The timeline below the picture scrubs.\n\
The look saved (s) is every setting, the camera included: `forge render FILE --look \
NAME.look.json` (or `forge still FILE --frame K --look NAME.look.json`) draws what the window \
showed. Needs a display (X11 or Wayland); without one, forge still and forge render draw the \
same images."
)]
pub struct ViewArgs {
    /// A recording (.bfs, ours or BoidForge's BFS1) to play, or a scene to simulate while it
    /// is shown: a scene file (JSON) or the name of a built-in scene (see `forge scenes`).
    pub input: String,
    /// A scene: also record its frames to this file, byte for byte what `forge simulate`
    /// writes [default: none]. Closed early, the recording keeps its complete frames under its
    /// temporary name.
    #[arg(long, value_name = "FILE.bfs")]
    pub record: Option<PathBuf>,
    #[command(flatten)]
    pub overrides: Overrides,
    /// A scene: solver threads [default: all cores]. The frames do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
    /// A scene: which solver runs the step [default: auto].
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: Backend,
    /// A recording: draw K−1 frames between each pair of recorded ones, as `forge render
    /// --interpolate K` does [default: 1, none drawn between].
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub interpolate: Option<u64>,
    /// Where `s` writes the look [default: NAME.look.json beside the recording NAME.bfs;
    /// SCENE_NAME.look.json here for a scene].
    #[arg(long, value_name = "FILE.json")]
    pub save_look: Option<PathBuf>,
    /// Start paused [default: playing].
    #[arg(long)]
    pub paused: bool,
    /// Play again from the start at the end (l toggles it) [default: stop at the end].
    #[arg(long = "loop")]
    pub looping: bool,
    /// Quit after this many seconds, printing the frames shown per second [default: never].
    #[arg(long, value_name = "SECONDS")]
    pub quit_after: Option<f64>,
    /// A recording: show N frames, one per window frame as fast as the window goes (the clock
    /// and the speed aside, looping at the end), then quit, printing frames per second, the
    /// size, the agents and the GPU; then where a window frame's time goes (the scene, the
    /// panel, the window), over N/4 more frames (10 to 100) with each part waited for
    /// [default: off].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub bench_frames: Option<u64>,
    /// Overwrite a look file that was there before the player started, and the --record file.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub look: LookArgs,
}
