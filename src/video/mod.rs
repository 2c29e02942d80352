//! Recording → video: frames stream from the `.bfs` file (read ahead on a thread), through the
//! GPU renderer, into one [`FrameSink`]: FFmpeg (H.264, yuv420p, BT.709), a folder of PNG
//! files, one still image, or memory (benchmarks). One loop serves them all. Nothing is held
//! whole in memory; an output appears under its final name only when complete.
//!
//! A frame that cannot be read (corrupt in the middle of the file) stops the render with an
//! error naming the frame, and no output is left. A file cut short (crash, kill) is not an
//! error: every complete frame renders, with the reader's warning printed.

pub mod chunk;
pub mod codec;
pub mod concat;
pub mod encoding;
pub mod ffmpeg;
pub mod interp;
pub mod mp4;
mod plan;
pub mod png;
pub mod resolve;
pub mod sink;
pub mod source;
pub mod watch;

use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::bfs::{Frame, FrameRange, Reader};
use crate::render::Renderer;
use interp::{Space, Timeline};
pub use plan::Plan;
pub use resolve::{Layers, Resolved};
pub use sink::StillFormat;

/// Where frames go.
#[derive(Clone, Debug)]
pub enum Destination {
    /// A video file through FFmpeg, encoded as the flags ask (resolved against this FFmpeg
    /// once the output is claimed).
    Mp4 {
        path: PathBuf,
        encoding: codec::EncodingFlags,
    },
    /// One PNG per frame (`frame_000000.png`, …) in a folder.
    Png { dir: PathBuf },
    /// One frame as an image (PNG, 16-bit PNG or EXR); with trails, the frames before it are
    /// drawn into the trails first (until earlier light has faded below `chunk::WARM_EPS`),
    /// so the still matches the video's frame.
    Still {
        path: PathBuf,
        frame: u64,
        format: StillFormat,
    },
    /// yuv420p frames kept in memory (up to `keep` of them) or dropped: render-only timing
    /// for `forge bench render`.
    Collect {
        frames: std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>,
        keep: usize,
    },
}

/// One render: a recording, how it looks, which frames, where they go.
#[derive(Clone, Debug)]
pub struct Job {
    pub input: PathBuf,
    /// The look's layers above the recording's own (flags, a `--look` file).
    pub look: Layers,
    /// Recorded frames `A..B` (`--frames`); ignored by a still.
    pub frames: FrameRange,
    pub dest: Destination,
    pub force: bool,
    pub quiet: bool,
    pub adapter: Option<String>,
    /// `--interpolate K`: K output frames per recorded interval (1 = the recorded frames only).
    /// `--frames` counts recorded frames; output frames, chunks and PNG names count output
    /// frames (see `interp.rs`).
    pub interpolate: u64,
    /// `--chunk I/N`: only piece I of N of the frames (see `chunk.rs`); a video gets the
    /// chunk's manifest in its metadata. Not for a still.
    pub chunk: Option<crate::engine::Task>,
}

pub struct Report {
    pub frames: u64,
    pub width: u32,
    pub height: u32,
    pub fps: u32,
    /// Wall time of the whole render, start-up included.
    pub secs: f64,
    /// Of which start-up: the GPU opened, every pass built, the encoder started.
    pub start_secs: f64,
    pub adapter: String,
    /// Frames (warm-up ones included) drawn on the CPU rather than through the GPU passes
    /// (`FORGE_RENDERER`), and in all.
    pub on_cpu: u64,
    pub drawn: u64,
    /// Each pass's wall time, when the plan timed them ([`Plan::time_passes`]).
    pub laps: Option<crate::render::laps::Laps>,
}

impl Report {
    /// Frames per second once started (the start-up left out).
    pub fn rate(&self) -> f64 {
        self.frames as f64 / (self.secs - self.start_secs).max(1e-9)
    }
}

fn open_input(path: &Path) -> Result<Reader> {
    let r = crate::bfs::open_recording(path)?;
    for w in r.warnings() {
        log::warn!("{}: {w}", path.display());
    }
    let h = r.header();
    if h.world_inferred {
        log::info!(
            "note: {} stores no world size; using the inferred {} x {}",
            path.display(),
            h.world_size[0],
            h.world_size[1]
        );
    }
    Ok(r)
}

/// The look of the job's recording, resolved over the whole recording (what `--print-look`
/// prints). Nothing is written and no GPU is opened.
pub fn look_of(job: &Job) -> Result<Resolved> {
    let mut reader = open_input(&job.input)?;
    resolve::resolve(&job.look, &mut reader, &job.input)
}

/// Renders a recording into the job's destination.
pub fn render(job: &Job) -> Result<Report> {
    Plan::resolve(job)?.run()
}

/// What a recording's scene adds to the drawing of its frames, told to every renderer that
/// draws them (`forge render`, `forge still`, `forge view`): each agent's species (what
/// `--color species` colours by), each agent's sprite size (its species' `render.size`) and the
/// obstacles.
pub struct SceneMarks {
    species: Vec<u8>,
    sizes: Vec<f32>,
    obstacles: Vec<crate::render::obstacles::Shape>,
    /// The obstacles at a step, where the scene's timeline moves, adds or removes them.
    moving: Option<crate::render::obstacles::Moving>,
}

impl SceneMarks {
    /// The marks of the recording with `header` (none but the species ids from a recording
    /// without a stored scene: BoidForge's, say).
    pub fn of(header: &crate::bfs::Header) -> SceneMarks {
        let scene = crate::scene::Scene::from_stored_json(&header.scene_json).ok();
        let (sizes, obstacles) = match &scene {
            Some(s) => {
                let by_species = crate::scene::species::sizes(&s.species);
                let sizes = header
                    .species
                    .iter()
                    .map(|&i| by_species.get(i as usize).copied().unwrap_or(1.0))
                    .collect();
                (sizes, shapes_of(&s.obstacles))
            }
            None => (Vec::new(), Vec::new()),
        };
        let keys = scene
            .as_ref()
            .and_then(crate::scene::timeline::ObstacleKeys::of);
        let moving = keys.map(|k| -> crate::render::obstacles::Moving {
            std::sync::Arc::new(move |step| shapes_of(&k.at(step)))
        });
        SceneMarks {
            species: header.species.clone(),
            sizes,
            obstacles,
            moving,
        }
    }

    /// Tells `renderer` these marks (the species ids only where it colours by species).
    pub fn apply(&self, renderer: &mut Renderer) {
        if renderer.settings().color == crate::look::ColorMode::Species {
            renderer.set_species(&self.species);
        }
        renderer.set_sizes(&self.sizes);
        match &self.moving {
            Some(at) => renderer.set_moving_obstacles(&self.obstacles, at.clone()),
            None => renderer.set_obstacles(&self.obstacles),
        }
    }
}

/// The scene's obstacles as the renderer draws them (their x–y plane).
fn shapes_of(obstacles: &[crate::scene::Obstacle]) -> Vec<crate::render::obstacles::Shape> {
    use crate::render::obstacles::Shape;
    use crate::scene::Obstacle;
    let xy = |v: &[f32]| [v[0], v[1]];
    obstacles
        .iter()
        .map(|o| match o {
            Obstacle::Circle { center, radius } => Shape::Circle {
                center: xy(center),
                radius: *radius,
            },
            Obstacle::Box { min, max } => Shape::Box {
                min: xy(min),
                max: xy(max),
            },
            Obstacle::Segment { from, to, radius } => Shape::Segment {
                from: xy(from),
                to: xy(to),
                radius: *radius,
            },
        })
        .collect()
}

/// The frames a follow camera eases over before the first frame drawn.
struct Replay<'a> {
    reader: &'a mut Reader,
    input: &'a Path,
    timeline: Timeline,
    space: &'a Space,
}

impl Replay<'_> {
    /// Eases the renderer's follow camera over output frames `frames` without drawing them,
    /// as a render from the recording's first frame would have.
    fn ease(self, renderer: &mut Renderer, frames: Range<u64>) -> Result<()> {
        let k = self.timeline.k;
        // The recorded frames either side of a skipped output frame, and their blend.
        let (mut a, mut b, mut mix) = (Frame::empty(), Frame::empty(), Frame::empty());
        for o in frames {
            crate::signal::check()?;
            let (r, frac) = self.timeline.at(o);
            let input = self.input;
            let mut read = |r: u64, f: &mut Frame| {
                self.reader
                    .read_frame_into(r, f)
                    .with_context(|| format!("{}: frame {r}", input.display()))
            };
            read(r, &mut a)?;
            if frac == 0 {
                renderer.skip(&a);
            } else {
                read(r + 1, &mut b)?;
                interp::blend(&a, &b, frac as f32 / k as f32, self.space, &mut mix);
                mix.index = o;
                renderer.skip(&mix);
            }
        }
        Ok(())
    }
}
