//! `forge bench render --only encoder`: the whole `forge render` command against x264 alone
//! on the same frames. The renderer's job is to keep the encoder busy: a video costs what its
//! encoding costs when the renderer is fast enough. Each row renders a recording at a size
//! (the command as a user runs it, start-up included), decodes the video to raw frames, and
//! encodes those with FFmpeg at the same codec, preset and CRF (forge's defaults: x264
//! veryfast, CRF 18), read from a file through the same pipe forge writes to; the two
//! alternate, twice each, and the faster run of each is kept.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use super::{bench_recording, is_recording, run_forge as forge};

/// What the encoder table measures.
pub struct Encoder {
    /// Output sizes.
    pub sizes: Vec<[u32; 2]>,
    /// Agent counts of the synthetic 2D recordings (the solver benchmark's density).
    pub agents: Vec<u64>,
    /// `.bfs` recordings rendered as they are, and built-in scenes simulated at their own
    /// agent count (`forge simulate NAME`).
    pub scenes: Vec<String>,
}

/// Frames of each row: enough to time, few enough that 1M agents at 4K finish.
fn frames_for(agents: u64, size: [u32; 2]) -> u64 {
    let pixels = size[0] as u64 * size[1] as u64;
    if agents >= 1_000_000 || pixels > 2_100_000 {
        30
    } else {
        60
    }
}

/// `video` decoded to raw 8-bit 4:2:0 frames in `raw`.
fn decode(video: &Path, raw: &Path) -> Result<()> {
    let o = std::process::Command::new(crate::video::ffmpeg::ffmpeg_program())
        .args(["-v", "error", "-y", "-i"])
        .arg(video)
        .args(["-f", "rawvideo", "-pix_fmt", "yuv420p"])
        .arg(raw)
        .output()
        .context("running FFmpeg to decode the rendered video")?;
    if !o.status.success() {
        bail!(
            "decoding {}: {}",
            video.display(),
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    Ok(())
}

/// x264 alone: the raw frames of `raw` encoded into `out` as forge encodes (the same encoder,
/// preset, CRF and pipe); the wall time and the frames encoded.
fn encode_alone(raw: &Path, out: &Path, size: [u32; 2]) -> Result<(f64, u64)> {
    use crate::video::codec::Encoding;
    use crate::video::ffmpeg::FfmpegSink;
    let frame = size[0] as usize * size[1] as usize * 3 / 2;
    let mut file = std::io::BufReader::new(std::fs::File::open(raw)?);
    let mut buf = vec![0u8; frame];
    let t0 = Instant::now();
    let mut sink = FfmpegSink::start(out, size[0], size[1], 30, &Encoding::h264())?;
    let mut frames = 0;
    loop {
        match file.read_exact(&mut buf) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e.into()),
        }
        sink.push(&buf)?;
        frames += 1;
    }
    sink.finish()?;
    Ok((t0.elapsed().as_secs_f64(), frames))
}

/// A recording for each scene name and agent count, with the frames the rows need: (label,
/// agents, path).
fn recordings(e: &Encoder, dir: &Path) -> Result<Vec<(String, u64, PathBuf)>> {
    let mut out = Vec::new();
    let most = |agents: u64| {
        e.sizes
            .iter()
            .map(|&s| frames_for(agents, s))
            .max()
            .unwrap_or(1)
    };
    for name in &e.scenes {
        if is_recording(name) {
            let r = crate::bfs::open_recording(Path::new(name))
                .with_context(|| format!("--render-scenes: {name}"))?;
            let agents = r.header().agents as u64;
            out.push((name.clone(), agents, PathBuf::from(name)));
        } else {
            let path = dir.join(format!("{name}.bfs"));
            let s = crate::scene::Scene::load(name)?;
            let steps = most(s.agents as u64).to_string();
            let p = path.to_string_lossy().into_owned();
            forge(&[
                "simulate", name, "--steps", &steps, "-o", &p, "-q", "--force",
            ])?;
            out.push((name.clone(), s.agents as u64, path));
        }
    }
    for &n in &e.agents {
        let path = dir.join(format!("encoder-{n}.bfs"));
        bench_recording(&path, n, 2, most(n))?;
        out.push((format!("bench, {n} agents"), n, path));
    }
    Ok(out)
}

impl Encoder {
    /// The table to `out`, a row at a time.
    pub fn run(&self, dir: &Path, out: &mut impl Write) -> Result<()> {
        writeln!(
            out,
            "The whole `forge render` command (start-up included) against x264 alone encoding \
             the same frames (decoded from forge's video) at the same preset and CRF (veryfast, \
             18), through the same pipe; frames/s, the faster of two runs each, alternated.\n"
        )?;
        writeln!(
            out,
            "| recording | agents | size | frames | forge render fps | x264 alone fps | forge / x264 |"
        )?;
        writeln!(out, "|---|---:|---|---:|---:|---:|---:|")?;
        out.flush()?;
        let mp4 = dir.join("encoder.mp4");
        let raw = dir.join("encoder.yuv");
        let alone = dir.join("encoder-alone.mp4");
        let mp4_s = mp4.to_string_lossy().into_owned();
        for (label, agents, path) in recordings(self, dir)? {
            let rec = path.to_string_lossy().into_owned();
            let available = crate::bfs::open_recording(&path)?.frame_count();
            for &size in &self.sizes {
                let frames = frames_for(agents, size).min(available);
                let size_s = format!("{}x{}", size[0], size[1]);
                let range = format!("0..{frames}");
                let render = || {
                    forge(&[
                        "render", &rec, "--size", &size_s, "--frames", &range, "-o", &mp4_s, "-q",
                        "--force",
                    ])
                };
                let mut best_forge = render()?;
                decode(&mp4, &raw)?;
                let (mut best_x264, encoded) = encode_alone(&raw, &alone, size)?;
                best_forge = best_forge.min(render()?);
                best_x264 = best_x264.min(encode_alone(&raw, &alone, size)?.0);
                let (f, x) = (frames as f64 / best_forge, encoded as f64 / best_x264);
                writeln!(
                    out,
                    "| {label} | {agents} | {size_s} | {frames} | {f:.1} | {x:.1} | {:.2} |",
                    f / x
                )?;
                out.flush()?;
            }
        }
        let _ = std::fs::remove_file(&raw);
        writeln!(out)?;
        Ok(())
    }
}
