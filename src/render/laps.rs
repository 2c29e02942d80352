//! Where a frame's time goes: with [`Renderer::time_passes`](super::Renderer::time_passes),
//! each pass is submitted on its own and waited for, and its wall time added to its row. The
//! waits take away the overlap of a normal render (the GPU working on frame k while frame
//! k−1 is read back and encoded), so the rows add up to more than a normal frame's time; they
//! say which pass costs what (`forge bench render --only passes`). Each row also holds the
//! process's CPU time over the pass (every thread: the software driver's rasterizer threads
//! included), which a busy machine disturbs less than wall time.

use std::time::Instant;

/// The passes timed, in the order a frame runs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// The frame's positions and velocities uploaded; the density grid counted (density
    /// colouring only).
    Upload,
    /// The trails' fade or the clear, and the agents' sprites drawn into the HDR target.
    Agents,
    /// The bloom chain: bright pass, downsamples, upsamples.
    Bloom,
    /// The tone map: exposure, bloom added, ACES, grade, background, vignette, trails faded.
    ToneMap,
    /// The overlays (caption, scale bar, colour bar) and the 3D world box.
    Overlay,
    /// The display image converted to Y'CbCr planes (video) or copied (images) into a
    /// staging buffer.
    Convert,
    /// The staging buffer mapped and its planes copied out.
    ReadBack,
    /// The frame handed to the sink (for a video: written into FFmpeg's pipe, which waits
    /// while x264 is busy).
    Sink,
}

impl Pass {
    pub const ALL: [Pass; 8] = [
        Pass::Upload,
        Pass::Agents,
        Pass::Bloom,
        Pass::ToneMap,
        Pass::Overlay,
        Pass::Convert,
        Pass::ReadBack,
        Pass::Sink,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Pass::Upload => "upload",
            Pass::Agents => "agents",
            Pass::Bloom => "bloom",
            Pass::ToneMap => "tone map",
            Pass::Overlay => "overlay",
            Pass::Convert => "yuv",
            Pass::ReadBack => "read-back",
            Pass::Sink => "sink",
        }
    }
}

/// The process's CPU time (user and system, every thread) in seconds; 0 where unknown.
fn cpu_secs() -> f64 {
    // SAFETY: rusage is plain integers, for which all zeros is a valid value.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills the struct it is given and reads nothing else.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return 0.0;
    }
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
    t(u.ru_utime) + t(u.ru_stime)
}

/// Wall and CPU seconds spent in each pass, over `frames` frames.
#[derive(Clone, Debug)]
pub struct Laps {
    wall: [f64; Pass::ALL.len()],
    cpu: [f64; Pass::ALL.len()],
    pub frames: u64,
    mark: (Instant, f64),
}

impl Default for Laps {
    fn default() -> Self {
        Laps {
            wall: [0.0; Pass::ALL.len()],
            cpu: [0.0; Pass::ALL.len()],
            frames: 0,
            mark: (Instant::now(), cpu_secs()),
        }
    }
}

impl Laps {
    /// Starts the clocks for the next pass.
    pub fn start(&mut self) {
        self.mark = (Instant::now(), cpu_secs());
    }

    /// The time since the last mark goes to `pass`; the clocks restart.
    pub fn lap(&mut self, pass: Pass) {
        let now = (Instant::now(), cpu_secs());
        self.wall[pass as usize] += (now.0 - self.mark.0).as_secs_f64();
        self.cpu[pass as usize] += now.1 - self.mark.1;
        self.mark = now;
    }

    /// Wall milliseconds a frame in `pass` (0 before any frame).
    pub fn ms(&self, pass: Pass) -> f64 {
        self.wall[pass as usize] * 1e3 / self.frames.max(1) as f64
    }

    /// CPU milliseconds a frame in `pass`, every thread of the process.
    pub fn cpu_ms(&self, pass: Pass) -> f64 {
        self.cpu[pass as usize] * 1e3 / self.frames.max(1) as f64
    }

    /// Wall and CPU milliseconds a frame over every pass.
    pub fn total_ms(&self) -> (f64, f64) {
        Pass::ALL
            .iter()
            .map(|&p| (self.ms(p), self.cpu_ms(p)))
            .fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1))
    }
}
