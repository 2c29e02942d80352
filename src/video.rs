//! Recording → video: frames stream from the `.bfs` file (read ahead on a thread), through the
//! GPU renderer, into FFmpeg (H.264, yuv420p, BT.709) or PNG files. Nothing is held whole in
//! memory; the output appears under its final name only when complete.
//!
//! A frame that cannot be read (corrupt in the middle of the file) stops the render with an
//! error naming the frame, and no output is left. A file cut short (crash, kill) is not an
//! error: every complete frame renders, with the reader's warning printed.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};

use crate::bfs::{Frame, Header, Reader};
use crate::record::OutputFile;
use crate::render::camera::{self, CameraMode};
use crate::render::gpu::Gpu;
use crate::render::{colormap, ColorMode, Fit, Look, Output, Renderer, View3, World};
use crate::scene::{self, Boundary};

/// Defaults used when neither a flag nor the recording's scene says otherwise.
pub mod defaults {
    pub const SIZE: [u32; 2] = [1920, 1080];
    pub const FPS: u32 = 30;
    pub const COLOR: &str = "speed";
    pub const COLORMAP: &str = "inferno";
    /// For `--color heading` (a cyclic map).
    pub const COLORMAP_HEADING: &str = "sinebow";
    pub const TRAILS: f32 = 0.0;
    pub const BLOOM: f32 = 0.5;
    pub const EXPOSURE: f32 = 1.0;
    pub const BACKGROUND: &str = "#05050a";
    pub const POINT_SIZE: f32 = 1.5;
    pub const VIGNETTE: f32 = 0.25;
    pub const ENCODER: &str = "libx264";
    pub const CRF: u32 = 18;
    pub const PRESET: &str = "medium";
}

/// How many frames the speed range is estimated from (evenly spaced).
const RANGE_SAMPLE_FRAMES: u64 = 16;
/// Agents per sampled frame used for the speed range (evenly strided).
const RANGE_SAMPLE_AGENTS: usize = 20_000;
/// Frames read ahead of the renderer.
const READ_AHEAD: usize = 4;
/// Lines of FFmpeg's stderr kept for error messages.
const STDERR_TAIL: usize = 15;

/// Look settings as given on the command line (all optional: the scene's, then defaults).
#[derive(Clone, Debug, Default)]
pub struct LookFlags {
    pub size: Option<[u32; 2]>,
    pub color: Option<String>,
    pub colormap: Option<String>,
    pub range: Option<[f32; 2]>,
    pub trails: Option<f32>,
    pub bloom: Option<f32>,
    pub exposure: Option<f32>,
    pub background: Option<String>,
    pub point_size: Option<f32>,
    pub fit: Option<Fit>,
    pub follow: bool,
    pub vignette: Option<f32>,
    /// 3D recordings only.
    pub camera: Option<CameraMode>,
    pub eye: Option<[f32; 3]>,
    pub target: Option<[f32; 3]>,
    pub fov: Option<f32>,
    pub fog: Option<f32>,
    pub world_box: bool,
}

/// The 3D view from the flags, else the scene's `render` section (`None` for a 2D recording,
/// which refuses every 3D flag). The clip the orbit spans is filled in by the caller.
fn resolve_view3(f: &LookFlags, s: &scene::Render, dim: u8) -> Result<Option<View3>> {
    if dim != 3 {
        let given = [
            f.camera.map(|c| format!("--camera {}", c.name())),
            f.eye.map(|_| "--eye".to_string()),
            f.target.map(|_| "--target".to_string()),
            f.fov.map(|_| "--fov".to_string()),
            f.fog.map(|_| "--fog".to_string()),
            f.world_box.then(|| "--box".to_string()),
        ];
        if let Some(flag) = given.into_iter().flatten().next() {
            bail!(
                "{flag}: this recording is 2D; --camera, --eye, --target, --fov, --fog and --box apply to 3D recordings only"
            );
        }
        return Ok(None);
    }
    let v3 = |a: [f64; 3]| a.map(|x| x as f32);
    let flag_fixed = f.eye.is_some() || f.target.is_some();
    let scene_mode = match s.camera.as_deref() {
        None => None,
        Some("orbit") => Some(CameraMode::Orbit),
        Some("fixed") => Some(CameraMode::Fixed),
        Some("follow") => Some(CameraMode::Follow),
        Some("top") => Some(CameraMode::Top),
        Some(other) => bail!("scene.render.camera: unknown camera {other:?}"),
    };
    let mode = if let Some(m) = f.camera {
        m
    } else if flag_fixed {
        CameraMode::Fixed
    } else if f.follow {
        CameraMode::Follow
    } else if let Some(m) = scene_mode {
        m
    } else if s.eye.is_some() || s.target.is_some() {
        CameraMode::Fixed
    } else {
        CameraMode::Orbit
    };
    if flag_fixed && mode != CameraMode::Fixed {
        let flag = if f.eye.is_some() { "--eye" } else { "--target" };
        bail!(
            "{flag}: only with --camera fixed (the {} camera places itself)",
            mode.name()
        );
    }
    let (eye, target) = if mode == CameraMode::Fixed {
        (f.eye.or(s.eye.map(v3)), f.target.or(s.target.map(v3)))
    } else {
        (None, None)
    };
    for (name, v) in [("--eye", eye), ("--target", target)] {
        if let Some(p) = v {
            if !p.iter().all(|x| x.is_finite()) {
                bail!("{name}: must be three finite numbers X,Y,Z");
            }
        }
    }
    if let (Some(e), Some(t)) = (eye, target) {
        if camera::distance(e, t) <= 0.0 {
            bail!("--eye and --target: must be different points");
        }
    }
    if mode == CameraMode::Top && f.fov.is_some() {
        bail!("--fov: the top camera is orthographic; use --camera orbit, fixed or follow");
    }
    let fov = f
        .fov
        .or(s.fov.map(|x| x as f32))
        .unwrap_or(camera::DEFAULT_FOV);
    if !(fov.is_finite() && fov > 1.0 && fov < 170.0) {
        bail!("--fov: must be between 1 and 170 degrees, got {fov}");
    }
    let fog = f.fog.or(s.fog.map(|x| x as f32)).unwrap_or(0.0);
    if !(0.0..=1.0).contains(&fog) {
        bail!("--fog: must be in [0, 1], got {fog}");
    }
    Ok(Some(View3 {
        mode,
        eye,
        target,
        fov,
        fog,
        world_box: f.world_box || s.world_box.unwrap_or(false),
        clip: (0, 1),
    }))
}

/// The recording's scene `render` section, if it has one that parses.
pub fn scene_render(h: &Header) -> Option<scene::Render> {
    let v: serde_json::Value = serde_json::from_str(&h.scene_json).ok()?;
    let r = v.get("render")?;
    serde_json::from_value(r.clone()).ok()
}

/// Flags, else the scene's `render` section, else defaults; validated.
pub fn resolve_look(f: &LookFlags, h: &Header) -> Result<Look> {
    let s = scene_render(h).unwrap_or_default();
    let view3 = resolve_view3(f, &s, h.dim)?;
    let [width, height] = f.size.or(s.size).unwrap_or(defaults::SIZE);
    if width == 0 || height == 0 {
        bail!("--size: must be above zero, got {width}x{height}");
    }
    if width % 2 == 1 || height % 2 == 1 {
        bail!("--size: H.264 in yuv420p needs even sizes, got {width}x{height}");
    }
    let color_name = f
        .color
        .clone()
        .or(s.color.clone())
        .unwrap_or_else(|| defaults::COLOR.into());
    let color = ColorMode::parse(&color_name).ok_or_else(|| {
        anyhow!(
            "--color: unknown colour mode {color_name:?} (one of: {})",
            scene::RENDER_COLORS.join(", ")
        )
    })?;
    let colormap = f
        .colormap
        .clone()
        .or(s.colormap.clone())
        .unwrap_or_else(|| {
            if color == ColorMode::Heading {
                defaults::COLORMAP_HEADING.into()
            } else {
                defaults::COLORMAP.into()
            }
        });
    if !colormap::NAMES.contains(&colormap.as_str()) {
        bail!(
            "--colormap: unknown colour map {colormap:?} (one of: {})",
            colormap::NAMES.join(", ")
        );
    }
    if color == ColorMode::Heading && !colormap::is_cyclic(&colormap) {
        eprintln!(
            "warning: --color heading with the non-cyclic map {colormap}: headings just either side of 180° get far-apart colours (twilight or sinebow wrap)"
        );
    }
    let range = f.range.or(s.range.map(|r| [r[0] as f32, r[1] as f32]));
    if let Some([a, b]) = range {
        if !(a.is_finite() && b.is_finite() && a < b) {
            bail!("--range: must be A..B with A < B, got {a}..{b}");
        }
    }
    let trails = f
        .trails
        .or(s.trails.map(|x| x as f32))
        .unwrap_or(defaults::TRAILS);
    if !(0.0..1.0).contains(&trails) {
        bail!("--trails: must be in [0, 1), got {trails}");
    }
    let nonneg = |name: &str, x: f32| -> Result<f32> {
        if !x.is_finite() || x < 0.0 {
            bail!("--{name}: must be a number >= 0, got {x}");
        }
        Ok(x)
    };
    let bloom = nonneg(
        "bloom",
        f.bloom
            .or(s.bloom.map(|x| x as f32))
            .unwrap_or(defaults::BLOOM),
    )?;
    let exposure = nonneg(
        "exposure",
        f.exposure
            .or(s.exposure.map(|x| x as f32))
            .unwrap_or(defaults::EXPOSURE),
    )?;
    let point_size = nonneg(
        "point-size",
        f.point_size
            .or(s.point_size.map(|x| x as f32))
            .unwrap_or(defaults::POINT_SIZE),
    )?;
    let vignette = nonneg("vignette", f.vignette.unwrap_or(defaults::VIGNETTE))?;
    let bg_text = f
        .background
        .clone()
        .or(s.background.clone())
        .unwrap_or_else(|| defaults::BACKGROUND.into());
    let background = scene::parse_hex_color(&bg_text).ok_or_else(|| {
        anyhow!("--background: must be a colour like \"#0a0a12\", got {bg_text:?}")
    })?;
    Ok(Look {
        width,
        height,
        color,
        colormap,
        range,
        trails,
        bloom,
        exposure,
        background,
        point_size,
        fit: f.fit.unwrap_or(Fit::Letterbox),
        follow: f.follow,
        vignette,
        view3,
    })
}

pub fn world_of(h: &Header) -> World {
    World {
        dim: h.dim as usize,
        size: [h.world_size[0], h.world_size[1]],
        depth: if h.dim == 3 { h.world_size[2] } else { 0.0 },
        wrap: h.boundary == Boundary::Wrap,
        open: h.boundary == Boundary::Open,
    }
}

/// Speed at the map's ends: 5th and 95th percentiles over frames sampled from `frames`.
pub fn speed_range(r: &mut Reader, frames: std::ops::Range<u64>) -> Result<[f32; 2]> {
    let dim = r.header().dim as usize;
    let count = frames.end - frames.start;
    let picks: Vec<u64> = if count <= RANGE_SAMPLE_FRAMES {
        frames.clone().collect()
    } else {
        (0..RANGE_SAMPLE_FRAMES)
            .map(|i| frames.start + i * (count - 1) / (RANGE_SAMPLE_FRAMES - 1))
            .collect()
    };
    let mut speeds = Vec::new();
    let mut f = Frame::empty();
    for k in picks {
        r.read_frame_into(k, &mut f)
            .map_err(|e| anyhow!("frame {k}: {e}"))?;
        let n = f.agents(dim);
        let step = (n / RANGE_SAMPLE_AGENTS).max(1);
        for i in (0..n).step_by(step) {
            let s2: f32 = (0..dim).map(|a| f.vel[a * n + i] * f.vel[a * n + i]).sum();
            let s = s2.sqrt();
            if s.is_finite() {
                speeds.push(s);
            }
        }
    }
    if speeds.is_empty() {
        return Ok([0.0, 1.0]);
    }
    speeds.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| speeds[((speeds.len() - 1) as f64 * p).round() as usize];
    let (lo, hi) = (pct(0.05), pct(0.95));
    if hi - lo <= 1e-6 * hi.abs().max(1.0) {
        // One speed (Vicsek): put it mid-map.
        let s = hi.abs().max(1e-6);
        return Ok([hi - s * 0.5, hi + s * 0.5]);
    }
    Ok([lo, hi])
}

/// Density at the map's ends for a 3D recording: 0 and the 95th percentile of the agents'
/// local density over frames sampled from `frames`, computed on the CPU the way the density
/// pass does on the GPU (the same grid and blur; nearest cell instead of trilinear). Agents
/// fill so little of a 3D world that a multiple of the mean per cell (the 2D rule) saturates.
pub fn density_range_3d(r: &mut Reader, frames: std::ops::Range<u64>) -> Result<[f32; 2]> {
    let h = r.header();
    let size = h.world_size;
    let wrap = h.boundary == Boundary::Wrap;
    let g = crate::render::density::grid_for_3d(size).map(|x| x as usize);
    let cells = g[0] * g[1] * g[2];
    let index = |c: [isize; 3]| -> usize {
        let mut q = [0usize; 3];
        for a in 0..3 {
            let n = g[a] as isize;
            q[a] = if wrap {
                c[a].rem_euclid(n) as usize
            } else {
                c[a].clamp(0, n - 1) as usize
            };
        }
        (q[2] * g[1] + q[1]) * g[0] + q[0]
    };
    const W: [f32; 5] = [0.0625, 0.25, 0.375, 0.25, 0.0625];
    let count = frames.end - frames.start;
    let picks: Vec<u64> = if count <= RANGE_SAMPLE_FRAMES {
        frames.clone().collect()
    } else {
        (0..RANGE_SAMPLE_FRAMES)
            .map(|i| frames.start + i * (count - 1) / (RANGE_SAMPLE_FRAMES - 1))
            .collect()
    };
    let mut values = Vec::new();
    let mut f = Frame::empty();
    let (mut a, mut b) = (vec![0f32; cells], vec![0f32; cells]);
    for k in picks {
        r.read_frame_into(k, &mut f)
            .map_err(|e| anyhow!("frame {k}: {e}"))?;
        let n = f.agents(3);
        let cell_of = |i: usize| -> Option<[isize; 3]> {
            let mut c = [0isize; 3];
            for ax in 0..3 {
                let x = (f.pos[ax * n + i] / size[ax] * g[ax] as f32).floor();
                if !(x >= 0.0 && x < g[ax] as f32) {
                    return None;
                }
                c[ax] = x as isize;
            }
            Some(c)
        };
        a.iter_mut().for_each(|x| *x = 0.0);
        for i in 0..n {
            if let Some(c) = cell_of(i) {
                a[index(c)] += 1.0;
            }
        }
        // Blur along x, y, z (ping-pong between a and b), as shaders/density.wgsl does.
        for axis in 0..3 {
            for z in 0..g[2] {
                for y in 0..g[1] {
                    for x in 0..g[0] {
                        let c = [x as isize, y as isize, z as isize];
                        let mut s = 0.0;
                        for (t, w) in W.iter().enumerate() {
                            let mut q = c;
                            q[axis] += t as isize - 2;
                            s += w * a[index(q)];
                        }
                        b[index(c)] = s;
                    }
                }
            }
            std::mem::swap(&mut a, &mut b);
        }
        let step = (n / RANGE_SAMPLE_AGENTS).max(1);
        for i in (0..n).step_by(step) {
            if let Some(c) = cell_of(i) {
                values.push(a[index(c)]);
            }
        }
    }
    if values.is_empty() {
        return Ok([0.0, 1.0]);
    }
    values.sort_by(|a, b| a.total_cmp(b));
    let hi = values[((values.len() - 1) as f64 * 0.95).round() as usize];
    Ok([0.0, if hi > 1e-6 { hi } else { 1.0 }])
}

// ---------------------------------------------------------------------------------------------
// Frames in: a reader thread keeps a few frames ahead; frames are recycled, so memory stays
// flat however long the recording.

pub struct FrameSource {
    rx: Receiver<Result<Frame>>,
    recycle: SyncSender<Frame>,
    thread: Option<JoinHandle<()>>,
}

impl FrameSource {
    pub fn start(path: &Path, frames: std::ops::Range<u64>) -> Result<FrameSource> {
        let mut reader =
            Reader::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        let (tx, rx) = sync_channel::<Result<Frame>>(READ_AHEAD);
        let (recycle, free) = sync_channel::<Frame>(READ_AHEAD + 4);
        let thread = std::thread::Builder::new()
            .name("forge frame reader".into())
            .spawn(move || {
                for k in frames {
                    let mut f = free.try_recv().unwrap_or_default();
                    let r = reader
                        .read_frame_into(k, &mut f)
                        .map(|_| f)
                        .map_err(|e| anyhow!("frame {k}: {e}"));
                    let stop = r.is_err();
                    if tx.send(r).is_err() || stop {
                        return;
                    }
                }
            })
            .context("cannot start the frame reader thread")?;
        Ok(FrameSource {
            rx,
            recycle,
            thread: Some(thread),
        })
    }

    /// The next frame, `None` at the end.
    pub fn next(&mut self) -> Option<Result<Frame>> {
        self.rx.recv().ok()
    }

    pub fn give_back(&self, f: Frame) {
        let _ = self.recycle.try_send(f);
    }
}

impl Drop for FrameSource {
    fn drop(&mut self) {
        // Unblock the reader (its sends fail once rx is gone), then join it.
        let (_, dead) = sync_channel(1);
        drop(std::mem::replace(&mut self.rx, dead));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Frames out.

/// The FFmpeg program: `FORGE_FFMPEG` if set, else `ffmpeg` on the PATH.
pub fn ffmpeg_program() -> PathBuf {
    std::env::var_os("FORGE_FFMPEG")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("ffmpeg"))
}

fn ffmpeg_missing(prog: &Path) -> anyhow::Error {
    anyhow!(
        "FFmpeg not found ({}): install it (Debian/Ubuntu: apt-get install ffmpeg; macOS: brew install ffmpeg), set FORGE_FFMPEG to its path, or write PNG frames with --png DIR",
        prog.display()
    )
}

/// Video encoding settings.
#[derive(Clone, Debug)]
pub struct Encoding {
    pub encoder: String,
    pub crf: u32,
    pub preset: String,
    pub fps: u32,
}

/// An FFmpeg child reading raw yuv420p on stdin; a writer thread feeds it, so encoding
/// overlaps rendering.
pub struct FfmpegSink {
    tx: Option<SyncSender<Vec<u8>>>,
    free: Receiver<Vec<u8>>,
    writer: Option<JoinHandle<std::io::Result<()>>>,
    child: Child,
    stderr: Option<JoinHandle<VecDeque<String>>>,
    sent: u64,
}

impl FfmpegSink {
    pub fn start(out: &Path, width: u32, height: u32, enc: &Encoding) -> Result<FfmpegSink> {
        let prog = ffmpeg_program();
        let mut cmd = Command::new(&prog);
        cmd.args(["-hide_banner", "-loglevel", "error", "-nostdin", "-y"]);
        cmd.args(["-f", "rawvideo", "-pix_fmt", "yuv420p"]);
        cmd.args([
            "-s",
            &format!("{width}x{height}"),
            "-r",
            &enc.fps.to_string(),
        ]);
        cmd.args([
            "-color_range",
            "tv",
            "-colorspace",
            "bt709",
            "-color_primaries",
            "bt709",
            "-color_trc",
            "bt709",
        ]);
        cmd.args(["-i", "-"]);
        cmd.args(["-c:v", &enc.encoder]);
        if matches!(enc.encoder.as_str(), "libx264" | "libx265") {
            cmd.args(["-crf", &enc.crf.to_string(), "-preset", &enc.preset]);
        }
        if enc.encoder == "libx264" {
            cmd.args([
                "-x264-params",
                "colorprim=bt709:transfer=bt709:colormatrix=bt709:range=tv",
            ]);
        }
        cmd.args(["-pix_fmt", "yuv420p"]);
        cmd.args([
            "-colorspace",
            "bt709",
            "-color_primaries",
            "bt709",
            "-color_trc",
            "bt709",
            "-color_range",
            "tv",
        ]);
        cmd.args(["-movflags", "+faststart", "-f", "mp4"]);
        cmd.arg(out);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                ffmpeg_missing(&prog)
            } else {
                anyhow!("cannot start FFmpeg ({}): {e}", prog.display())
            }
        })?;
        let mut stderr = child.stderr.take().expect("piped");
        let stderr = std::thread::spawn(move || {
            let mut tail = VecDeque::new();
            let mut text = String::new();
            let mut buf = [0u8; 4096];
            while let Ok(k) = stderr.read(&mut buf) {
                if k == 0 {
                    break;
                }
                text.push_str(&String::from_utf8_lossy(&buf[..k]));
                while let Some(i) = text.find('\n') {
                    let line: String = text.drain(..=i).collect();
                    tail.push_back(line.trim_end().to_string());
                    if tail.len() > STDERR_TAIL {
                        tail.pop_front();
                    }
                }
            }
            if !text.trim().is_empty() {
                tail.push_back(text.trim_end().to_string());
            }
            tail
        });
        let mut stdin: ChildStdin = child.stdin.take().expect("piped");
        let (tx, rx) = sync_channel::<Vec<u8>>(2);
        let (give, free) = sync_channel::<Vec<u8>>(4);
        let writer = std::thread::Builder::new()
            .name("forge ffmpeg writer".into())
            .spawn(move || -> std::io::Result<()> {
                for buf in rx {
                    stdin.write_all(&buf)?;
                    let _ = give.try_send(buf);
                }
                stdin.flush()
            })
            .context("cannot start the FFmpeg writer thread")?;
        Ok(FfmpegSink {
            tx: Some(tx),
            free,
            writer: Some(writer),
            child,
            stderr: Some(stderr),
            sent: 0,
        })
    }

    pub fn push(&mut self, frame: &[u8]) -> Result<()> {
        let mut buf = self.free.try_recv().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(frame);
        let ok = self
            .tx
            .as_ref()
            .map(|t| t.send(buf).is_ok())
            .unwrap_or(false);
        if !ok {
            return Err(self.failure());
        }
        self.sent += 1;
        Ok(())
    }

    /// FFmpeg stopped reading: wait for it and explain, with the tail of its stderr.
    fn failure(&mut self) -> anyhow::Error {
        self.tx = None;
        let write_err = self
            .writer
            .take()
            .and_then(|w| w.join().ok())
            .and_then(|r| r.err());
        let status = self.child.wait().ok();
        let tail = self
            .stderr
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        let mut msg = format!(
            "FFmpeg stopped after {} frame{} ({})",
            self.sent,
            if self.sent == 1 { "" } else { "s" },
            match status {
                Some(s) => s.to_string(),
                None => "status unknown".into(),
            }
        );
        if let Some(e) = write_err {
            // Not an io::Error in the chain: a broken pipe here is a failure, not a quiet exit.
            msg.push_str(&format!("; writing to it: {e}"));
        }
        if tail.is_empty() {
            msg.push_str("; it printed nothing");
        } else {
            msg.push_str("; its last output:");
            for l in tail {
                msg.push_str("\n    ");
                msg.push_str(&l);
            }
        }
        anyhow!(msg)
    }

    /// Ends the stream and waits for FFmpeg to write the file.
    pub fn finish(mut self) -> Result<()> {
        self.tx = None;
        let w = self.writer.take().map(|w| w.join());
        let failed_write = !matches!(w, Some(Ok(Ok(()))));
        let status = self.child.wait().context("waiting for FFmpeg")?;
        if failed_write || !status.success() {
            let tail = self
                .stderr
                .take()
                .and_then(|t| t.join().ok())
                .unwrap_or_default();
            let mut msg = format!("FFmpeg failed ({status}) after {} frames", self.sent);
            for l in tail {
                msg.push_str("\n    ");
                msg.push_str(&l);
            }
            bail!(msg);
        }
        Ok(())
    }
}

impl Drop for FfmpegSink {
    fn drop(&mut self) {
        // An abandoned render: stop FFmpeg rather than leave it running.
        self.tx = None;
        if self.writer.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Writes one RGBA8 (sRGB) image as PNG.
pub fn write_png(path: &Path, width: u32, height: u32, rgba: &[u8]) -> Result<()> {
    let file =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), width, height);
    enc.set_color(png::ColorType::Rgba);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_source_srgb(png::SrgbRenderingIntent::Perceptual);
    let mut w = enc
        .write_header()
        .with_context(|| format!("writing {}", path.display()))?;
    w.write_image_data(rgba)
        .with_context(|| format!("writing {}", path.display()))?;
    w.finish()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// A PNG written under a temporary name, then renamed.
fn write_png_atomic(path: &Path, width: u32, height: u32, rgba: &[u8], force: bool) -> Result<()> {
    let (out, file) = OutputFile::create(path, force, "image")?;
    drop(file);
    match write_png(out.writing_path(), width, height, rgba) {
        Ok(()) => out.commit(),
        Err(e) => {
            out.abandon();
            Err(e)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The whole job.

/// Where frames go.
#[derive(Clone, Debug)]
pub enum Destination {
    Mp4 {
        path: PathBuf,
        encoding: Encoding,
    },
    Png {
        dir: PathBuf,
    },
    /// yuv420p frames kept in memory (up to `keep` of them) or dropped: render-only timing
    /// for `forge bench render`.
    Collect {
        frames: std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>,
        keep: usize,
    },
}

#[derive(Clone, Debug)]
pub struct Job {
    pub input: PathBuf,
    pub look: LookFlags,
    pub frames: Option<(Option<u64>, Option<u64>)>,
    pub fps: Option<u32>,
    pub dest: Destination,
    pub force: bool,
    pub quiet: bool,
    pub adapter: Option<String>,
}

pub struct Report {
    pub frames: u64,
    pub width: u32,
    pub height: u32,
    pub secs: f64,
    pub adapter: String,
}

fn frames_range(
    spec: Option<(Option<u64>, Option<u64>)>,
    count: u64,
    file: &Path,
) -> Result<std::ops::Range<u64>> {
    if count == 0 {
        bail!("{} has no frames to render", file.display());
    }
    let (a, b) = spec.unwrap_or((None, None));
    let a = a.unwrap_or(0);
    let b = b.unwrap_or(count);
    if a >= b {
        bail!("--frames: {a}..{b} is empty");
    }
    if a >= count {
        bail!(
            "--frames: starts at frame {a} but {} has {count} frames (0..{count})",
            file.display()
        );
    }
    if b > count {
        bail!(
            "--frames: ends at frame {b} but {} has {count} frames (0..{count})",
            file.display()
        );
    }
    Ok(a..b)
}

fn open_input(path: &Path) -> Result<Reader> {
    let r = Reader::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    for w in r.warnings() {
        eprintln!("warning: {}: {w}", path.display());
    }
    let h = r.header();
    if h.world_inferred {
        eprintln!(
            "note: {} stores no world size; using the inferred {} x {}",
            path.display(),
            h.world_size[0],
            h.world_size[1]
        );
    }
    Ok(r)
}

/// Resolves the look for `r`, filling the speed range from the file where needed; an orbit
/// turns once over `frames`.
fn full_look(
    job_look: &LookFlags,
    r: &mut Reader,
    frames: std::ops::Range<u64>,
    path: &Path,
) -> Result<Look> {
    let mut look = resolve_look(job_look, r.header())?;
    if let Some(v) = look.view3.as_mut() {
        v.clip = (frames.start, frames.end - frames.start);
        if v.mode == CameraMode::Top {
            eprintln!(
                "note: {} is 3D: --camera top renders an orthographic projection onto x, y",
                path.display()
            );
        }
    }
    if look.color == ColorMode::Speed && look.range.is_none() {
        look.range = Some(speed_range(r, frames)?);
    } else if look.color == ColorMode::Density && look.range.is_none() && r.header().dim == 3 {
        look.range = Some(density_range_3d(r, frames)?);
    }
    Ok(look)
}

/// Renders a recording to MP4 or PNG frames.
pub fn render(job: &Job) -> Result<Report> {
    let mut reader = open_input(&job.input)?;
    let count = reader.frame_count();
    let range = frames_range(job.frames, count, &job.input)?;
    let look = full_look(&job.look, &mut reader, range.clone(), &job.input)?;
    let world = world_of(reader.header());
    let capacity = reader.header().agents;
    drop(reader);

    // Outputs are checked before the (slow) GPU start-up.
    let (out, _png_dir) = match &job.dest {
        Destination::Mp4 { path, .. } => {
            let (out, file) = OutputFile::create(path, job.force, "output")?;
            drop(file);
            (Some(out), None)
        }
        Destination::Png { dir } => {
            prepare_png_dir(dir, job.force)?;
            (None, Some(dir.clone()))
        }
        Destination::Collect { .. } => (None, None),
    };
    let result = (|| -> Result<Report> {
        let gpu = Gpu::new(job.adapter.as_deref())?;
        let adapter = crate::render::gpu::describe(&gpu.info);
        if !job.quiet {
            eprintln!("adapter: {adapter}");
        }
        let output = match job.dest {
            Destination::Mp4 { .. } | Destination::Collect { .. } => Output::Yuv420p,
            Destination::Png { .. } => Output::Rgba8,
        };
        let (w, h) = (look.width, look.height);
        let mut renderer = Renderer::new(gpu, look, world, output, capacity)?;
        let mut sink: Box<dyn FnMut(&[u8]) -> Result<()>>;
        let mut ffmpeg = None;
        match &job.dest {
            Destination::Mp4 { encoding, .. } => {
                let f = FfmpegSink::start(out.as_ref().unwrap().writing_path(), w, h, encoding)?;
                ffmpeg = Some(std::rc::Rc::new(std::cell::RefCell::new(f)));
                let f = ffmpeg.clone().unwrap();
                sink = Box::new(move |bytes| f.borrow_mut().push(bytes));
            }
            Destination::Collect { frames, keep } => {
                let (frames, keep) = (frames.clone(), *keep);
                sink = Box::new(move |bytes| {
                    let mut f = frames.lock().unwrap_or_else(|e| e.into_inner());
                    if f.len() < keep {
                        f.push(bytes.to_vec());
                    }
                    Ok(())
                });
            }
            Destination::Png { dir } => {
                let dir = dir.clone();
                let mut k = range.start;
                let force = job.force;
                sink = Box::new(move |bytes| {
                    let p = dir.join(format!("frame_{k:06}.png"));
                    k += 1;
                    write_png_atomic(&p, w, h, bytes, force)
                });
            }
        }
        let bar = crate::progress::bar(range.end - range.start, job.quiet, "frames");
        let t0 = Instant::now();
        let mut source = FrameSource::start(&job.input, range.clone())?;
        let mut done = 0u64;
        while let Some(f) = source.next() {
            let f = f.with_context(|| format!("{}", job.input.display()))?;
            renderer.render(&f, &mut *sink)?;
            source.give_back(f);
            done += 1;
            bar.set_position(done);
        }
        renderer.finish(&mut *sink)?;
        drop(sink);
        if let Some(f) = ffmpeg {
            let f = std::rc::Rc::try_unwrap(f)
                .map_err(|_| anyhow!("internal: FFmpeg sink still shared"))?
                .into_inner();
            f.finish()?;
        }
        bar.finish_and_clear();
        Ok(Report {
            frames: done,
            width: w,
            height: h,
            secs: t0.elapsed().as_secs_f64(),
            adapter,
        })
    })();
    match (result, out) {
        (Ok(r), Some(out)) => {
            out.commit()?;
            Ok(r)
        }
        (Ok(r), None) => Ok(r),
        (Err(e), Some(out)) => {
            out.abandon();
            Err(e)
        }
        (Err(e), None) => Err(e),
    }
}

fn prepare_png_dir(dir: &Path, force: bool) -> Result<()> {
    match std::fs::read_dir(dir) {
        Ok(mut it) => {
            if it.next().is_some() && !force {
                bail!(
                    "--png: folder {} exists and is not empty (use --force to write into it)",
                    dir.display()
                );
            }
        }
        Err(_) => std::fs::create_dir_all(dir)
            .with_context(|| format!("--png: cannot create folder {}", dir.display()))?,
    }
    let probe = dir.join(".forge-write-test");
    std::fs::write(&probe, b"")
        .with_context(|| format!("--png: cannot write in folder {}", dir.display()))?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

/// One frame as a PNG. With trails, the frames before it are rendered first (as many as
/// the trail needs to fade below 1/256), so the still matches the video's frame.
pub fn still(
    input: &Path,
    frame: u64,
    out: &Path,
    look: &LookFlags,
    force: bool,
    quiet: bool,
    adapter: Option<&str>,
) -> Result<Report> {
    let mut reader = open_input(input)?;
    let count = reader.frame_count();
    if count == 0 {
        bail!("{} has no frames to render", input.display());
    }
    if frame >= count {
        bail!(
            "--frame: {frame} is past the end ({} has frames 0..{count})",
            input.display()
        );
    }
    let look = full_look(look, &mut reader, 0..count, input)?;
    let warm = if look.trails > 0.0 {
        ((1.0f32 / 256.0).ln() / look.trails.ln()).ceil() as u64
    } else {
        0
    };
    let start = frame.saturating_sub(warm);
    let world = world_of(reader.header());
    let capacity = reader.header().agents;
    drop(reader);
    let (o, file) = OutputFile::create(out, force, "output")?;
    drop(file);
    let result = (|| -> Result<Report> {
        let gpu = Gpu::new(adapter)?;
        let name = crate::render::gpu::describe(&gpu.info);
        if !quiet {
            eprintln!("adapter: {name}");
        }
        let (w, h) = (look.width, look.height);
        let mut renderer = Renderer::new(gpu, look, world, Output::Rgba8, capacity)?;
        let t0 = Instant::now();
        let mut last = Vec::new();
        let mut sink = |b: &[u8]| -> Result<()> {
            last.clear();
            last.extend_from_slice(b);
            Ok(())
        };
        let mut source = FrameSource::start(input, start..frame + 1)?;
        while let Some(f) = source.next() {
            let f = f.with_context(|| format!("{}", input.display()))?;
            renderer.render(&f, &mut sink)?;
            source.give_back(f);
        }
        renderer.finish(&mut sink)?;
        write_png(o.writing_path(), w, h, &last)?;
        Ok(Report {
            frames: 1,
            width: w,
            height: h,
            secs: t0.elapsed().as_secs_f64(),
            adapter: name,
        })
    })();
    match result {
        Ok(r) => {
            o.commit()?;
            Ok(r)
        }
        Err(e) => {
            o.abandon();
            Err(e)
        }
    }
}
