//! `forge concat`: chunks rendered with `--chunk I/N` joined into one film by stream copy
//! (FFmpeg's concat demuxer, `-c copy`: no re-encode), after checking them.
//!
//! Each part is probed with ffprobe (`FORGE_FFPROBE`, else the `ffprobe` beside
//! `FORGE_FFMPEG`, else `ffprobe` on the PATH): its `forge_chunk` manifest is read from the
//! metadata and its packets are counted (a demux of the whole file, so a truncated part shows).
//! Then the parts must come from one recording, one forge version and one set of settings,
//! split into the same N, and cover the clip exactly once: the parts may be given in any order
//! (a shell sorts `part-10` before `part-2`); they are joined in chunk order. A part that is
//! missing, duplicated, foreign (another recording, settings or split) or damaged (no manifest,
//! fewer packets than frames, an ffprobe error, a stream that is not the manifest's) is refused,
//! naming it. The film is written to `NAME.partial` and renamed when its packets are counted
//! right; the chunks' manifests are not copied into it.
//!
//! ffprobe and the join run under [`crate::process`]: ffprobe must answer, and the join's film
//! must grow, within `FORGE_ENCODER_TIMEOUT`; SIGINT or SIGTERM stops either, and forge removes
//! the partial film, its lock and the list of parts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};

use super::chunk::{chunk_range, Manifest, MANIFEST_TAG};
use super::ffmpeg::ffmpeg_program;
use super::watch::program_failed;
use crate::engine::Task;
use crate::output::OutputFile;
use crate::process::{self, Failed, Limit};

/// The ffprobe program: `FORGE_FFPROBE`, else `ffprobe` in `FORGE_FFMPEG`'s folder, else
/// `ffprobe` on the PATH.
pub fn ffprobe_program() -> PathBuf {
    if let Some(p) = std::env::var_os("FORGE_FFPROBE") {
        return PathBuf::from(p);
    }
    if let Some(f) = std::env::var_os("FORGE_FFMPEG") {
        if let Some(dir) = Path::new(&f).parent().filter(|d| !d.as_os_str().is_empty()) {
            let p = dir.join("ffprobe");
            if p.is_file() {
                return p;
            }
        }
    }
    PathBuf::from("ffprobe")
}

/// One part, probed.
#[derive(Clone, Debug)]
pub struct Part {
    pub path: PathBuf,
    pub manifest: Manifest,
    /// Video packets read (one per frame).
    pub packets: u64,
}

fn display(p: &Path) -> String {
    p.display().to_string()
}

/// Runs ffprobe on `path`: (its JSON, its complaints). Within `FORGE_ENCODER_TIMEOUT`, and
/// stopped by a signal ([`crate::process`]).
fn ffprobe(path: &Path, entries: &str) -> Result<(serde_json::Value, String)> {
    let prog = ffprobe_program();
    let timeout = super::watch::encoder_timeout()?;
    let mut cmd = Command::new(&prog);
    cmd.args(["-v", "error", "-count_packets", "-show_entries", entries])
        .args(["-of", "json"])
        .arg(path);
    let out = process::run(&mut cmd, &Limit::within(timeout)).map_err(|e| match e {
        Failed::Start(io) if io.kind() == std::io::ErrorKind::NotFound => anyhow!(
            "ffprobe not found ({}): it comes with FFmpeg (apt-get install ffmpeg); or set FORGE_FFPROBE to its path",
            prog.display()
        ),
        e => program_failed(
            e,
            &format!("ffprobe ({})", prog.display()),
            &format!("read {}", display(path)),
        ),
    })?;
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    if !out.status.success() {
        let why = err
            .lines()
            .last()
            .unwrap_or("it printed nothing")
            .to_string();
        bail!("{}: not a readable MP4 (ffprobe: {why})", display(path));
    }
    let json = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("{}: ffprobe's output does not parse", display(path)))?;
    Ok((json, err))
}

/// The frame count and length a finished video has (ffprobe's packet count and duration).
pub fn count_packets(path: &Path) -> Result<(u64, f64, String)> {
    let (j, err) = ffprobe(path, "format=duration:stream=codec_type,nb_read_packets")?;
    let v = video_stream(&j).ok_or_else(|| anyhow!("{}: has no video stream", display(path)))?;
    let packets = num(&v["nb_read_packets"]).unwrap_or(0.0) as u64;
    let duration = num(&j["format"]["duration"]).unwrap_or(0.0);
    Ok((packets, duration, err))
}

fn video_stream(j: &serde_json::Value) -> Option<&serde_json::Value> {
    j["streams"]
        .as_array()?
        .iter()
        .find(|s| s["codec_type"] == "video")
}

/// A number ffprobe may print as a string.
fn num(v: &serde_json::Value) -> Option<f64> {
    match v {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// The first line of ffprobe's complaints, without its `[demuxer @ 0x…] ` prefix.
fn first_complaint(err: &str) -> String {
    let line = err.lines().next().unwrap_or_default().trim();
    match (line.starts_with('['), line.find("] ")) {
        (true, Some(i)) => line[i + 2..].to_string(),
        _ => line.to_string(),
    }
}

/// Reads `path`'s manifest and checks the part against it.
pub fn probe(path: &Path) -> Result<Part> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("{}: no such file", display(path))
        }
        Err(e) => bail!("{}: cannot read it: {e}", display(path)),
        Ok(m) => {
            if let Some(what) = crate::sys::not_a_file(m.file_type()) {
                bail!(
                    "{}: {what}, not a video file: a part must be an MP4 or MOV file that \
                     forge render --chunk wrote",
                    display(path)
                );
            }
        }
    }
    let (j, err) = ffprobe(
        path,
        &format!(
            "format=duration:format_tags={MANIFEST_TAG}:stream=codec_type,codec_name,width,height,r_frame_rate,nb_read_packets"
        ),
    )?;
    let tag = j["format"]["tags"][MANIFEST_TAG].as_str().ok_or_else(|| {
        anyhow!(
            "{}: not a forge chunk (no {MANIFEST_TAG} manifest in its metadata; render chunks with forge render --chunk I/N)",
            display(path)
        )
    })?;
    let m = Manifest::from_json(tag).with_context(|| format!("{}: damaged", display(path)))?;
    let what = format!(
        "chunk {}/{}, frames {}..{}",
        m.chunk[0], m.chunk[1], m.frames[0], m.frames[1]
    );
    // The manifest agrees with itself: its frames are the chunk's share of the clip.
    let task = Task {
        index: m.chunk[0],
        count: m.chunk[1],
    };
    let consistent = task.count > 0
        && task.index < task.count
        && m.clip[0] < m.clip[1]
        && chunk_range(m.clip[0]..m.clip[1], task).ok() == Some(m.frames[0]..m.frames[1]);
    if !consistent {
        bail!(
            "{}: damaged manifest ({what} is not that share of the clip {}..{})",
            display(path),
            m.clip[0],
            m.clip[1]
        );
    }
    if !err.is_empty() {
        bail!(
            "{}: damaged ({what}): ffprobe: {}",
            display(path),
            first_complaint(&err)
        );
    }
    let v = video_stream(&j)
        .ok_or_else(|| anyhow!("{}: damaged ({what}): no video stream", display(path)))?;
    let packets = num(&v["nb_read_packets"]).unwrap_or(0.0) as u64;
    if packets != m.len() {
        bail!(
            "{}: damaged ({what}): holds {packets} frame{} of the {} its manifest lists",
            display(path),
            if packets == 1 { "" } else { "s" },
            m.len()
        );
    }
    let size = [
        num(&v["width"]).unwrap_or(0.0) as u32,
        num(&v["height"]).unwrap_or(0.0) as u32,
    ];
    let rate = v["r_frame_rate"].as_str().unwrap_or("");
    if size != m.size || rate != format!("{}/1", m.fps) {
        bail!(
            "{}: damaged ({what}): its stream is {}x{} at {rate} fps, its manifest says {}x{} at {} fps",
            display(path),
            size[0],
            size[1],
            m.size[0],
            m.size[1],
            m.fps
        );
    }
    Ok(Part {
        path: path.to_path_buf(),
        manifest: m,
        packets,
    })
}

/// What every chunk of one film shares.
fn family(m: &Manifest) -> String {
    format!(
        "{}|{}|{}|{}|{:?}|{}|{}",
        m.recording.header_crc,
        m.recording.bytes,
        m.recording.frames,
        m.forge,
        m.clip,
        m.chunk[1],
        m.settings
    )
}

/// How `m` differs from `r` (the film's), in words.
fn difference(m: &Manifest, r: &Manifest) -> String {
    if !m.recording.same(&r.recording) {
        format!(
            "another recording ({}: header CRC {}, {} bytes, {} frames; the others: {}: header CRC {}, {} bytes, {} frames)",
            m.recording.file,
            m.recording.header_crc,
            m.recording.bytes,
            m.recording.frames,
            r.recording.file,
            r.recording.header_crc,
            r.recording.bytes,
            r.recording.frames
        )
    } else if m.forge != r.forge {
        format!(
            "another forge version ({}; the others: {})",
            m.forge, r.forge
        )
    } else if m.clip != r.clip || m.chunk[1] != r.chunk[1] {
        format!(
            "another split (frames {}..{} in {} chunks; the others: {}..{} in {})",
            m.clip[0], m.clip[1], m.chunk[1], r.clip[0], r.clip[1], r.chunk[1]
        )
    } else {
        format!(
            "other settings ({}x{} at {} fps, {}, settings {}; the others: {}x{} at {} fps, {}, settings {})",
            m.size[0], m.size[1], m.fps, m.encoding_text(), m.settings,
            r.size[0], r.size[1], r.fps, r.encoding_text(), r.settings
        )
    }
}

/// Checks that `parts` are every chunk of one film, each once; returns them in chunk order.
pub fn plan(mut parts: Vec<Part>) -> Result<Vec<Part>> {
    if parts.is_empty() {
        bail!("no parts to join");
    }
    // The film is what most parts agree on (the first part's on a tie); the others are foreign.
    let mut votes: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (i, p) in parts.iter().enumerate() {
        let e = votes.entry(family(&p.manifest)).or_insert((0, i));
        e.0 += 1;
    }
    let (_, &(_, first)) = votes
        .iter()
        .max_by_key(|(_, (n, i))| (*n, std::cmp::Reverse(*i)))
        .expect("at least one part");
    let reference = parts[first].clone();
    let foreign: Vec<String> = parts
        .iter()
        .filter(|p| family(&p.manifest) != family(&reference.manifest))
        .map(|p| {
            format!(
                "{} is from {}",
                display(&p.path),
                difference(&p.manifest, &reference.manifest)
            )
        })
        .collect();
    if !foreign.is_empty() {
        bail!(
            "{} part{} foreign to the film of {}:\n  {}",
            foreign.len(),
            if foreign.len() == 1 { " is" } else { "s are" },
            display(&reference.path),
            foreign.join("\n  ")
        );
    }
    let n = reference.manifest.chunk[1];
    let clip = reference.manifest.clip;
    parts.sort_by_key(|p| p.manifest.chunk[0]);
    for w in parts.windows(2) {
        if w[0].manifest.chunk[0] == w[1].manifest.chunk[0] {
            bail!(
                "chunk {}/{n} (frames {}..{}) is given twice: {} and {}",
                w[0].manifest.chunk[0],
                w[0].manifest.frames[0],
                w[0].manifest.frames[1],
                display(&w[0].path),
                display(&w[1].path)
            );
        }
    }
    let have: Vec<u64> = parts.iter().map(|p| p.manifest.chunk[0]).collect();
    let missing: Vec<String> = (0..n)
        .filter(|i| !have.contains(i))
        .map(|i| {
            let r =
                chunk_range(clip[0]..clip[1], Task { index: i, count: n }).expect("a valid split");
            format!("{i}/{n} (frames {}..{})", r.start, r.end)
        })
        .collect();
    if !missing.is_empty() {
        bail!(
            "missing chunk{} {} of frames {}..{}: render {} with forge render --chunk I/{n}",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            clip[0],
            clip[1],
            if missing.len() == 1 { "it" } else { "them" }
        );
    }
    Ok(parts)
}

/// What [`join`] made.
pub struct Joined {
    pub frames: u64,
    pub duration: f64,
    pub secs: f64,
}

/// The concat demuxer's list: one `file '…'` line per part (absolute paths; `'` escaped).
fn list_file(parts: &[Part]) -> Result<String> {
    let mut s = String::from("ffconcat version 1.0\n");
    for p in parts {
        let abs = std::fs::canonicalize(&p.path)
            .with_context(|| format!("{}: cannot resolve its path", display(&p.path)))?;
        let text = abs
            .to_str()
            .ok_or_else(|| anyhow!("{}: the path is not UTF-8", display(&p.path)))?;
        if text.contains('\n') {
            bail!(
                "{}: a path with a line break cannot be listed",
                display(&p.path)
            );
        }
        s.push_str(&format!("file '{}'\n", text.replace('\'', "'\\''")));
    }
    Ok(s)
}

/// Joins `parts` (checked, in order) into `out` by stream copy; atomic.
pub fn join(parts: &[Part], out: &Path, force: bool) -> Result<Joined> {
    let t0 = Instant::now();
    super::ffmpeg::check()?;
    let container = parts
        .first()
        .map(|p| p.manifest.container())
        .unwrap_or(super::codec::Container::Mp4);
    super::codec::check_extension(out, container, "-o")?;
    let out_abs = std::fs::canonicalize(out).ok();
    for p in parts {
        if out_abs.is_some() && std::fs::canonicalize(&p.path).ok() == out_abs {
            bail!("output {} is one of the parts", display(out));
        }
    }
    let total: u64 = parts.iter().map(|p| p.packets).sum();
    let dir = tempfile::Builder::new()
        .prefix("forge-concat-")
        .tempdir()
        .context("cannot create a temporary folder for the list of parts")?;
    let list = dir.path().join("parts.ffconcat");
    std::fs::write(&list, list_file(parts)?)
        .with_context(|| format!("cannot write {}", list.display()))?;
    let (file, handle) = OutputFile::create(out, force, "output")?;
    drop(handle);
    let result = (|| -> Result<(u64, f64)> {
        let prog = ffmpeg_program();
        let mut cmd = Command::new(&prog);
        cmd.args(["-hide_banner", "-loglevel", "error", "-nostdin", "-y"])
            .args(["-f", "concat", "-safe", "0", "-i"])
            .arg(&list)
            .args(["-map", "0:v:0", "-c", "copy", "-map_metadata", "-1"])
            .args(["-movflags", "+faststart", "-f", container.name()])
            .arg(file.writing_path());
        // As long as the film grows, the join is making progress.
        let limit = Limit {
            timeout: super::watch::encoder_timeout()?,
            progress: Some(file.writing_path()),
        };
        let res = process::run(&mut cmd, &limit).map_err(|e| {
            program_failed(
                e,
                &format!("FFmpeg ({})", prog.display()),
                "finish joining the parts",
            )
        })?;
        if !res.status.success() {
            bail!(
                "FFmpeg could not join the parts ({}):\n    {}",
                res.status,
                res.stderr_tail(8).join("\n    ")
            );
        }
        let (packets, duration, err) = count_packets(file.writing_path())?;
        if packets != total || !err.is_empty() {
            bail!(
                "the joined film holds {packets} frames, not the {total} of its parts{}",
                if err.is_empty() {
                    String::new()
                } else {
                    format!(" (ffprobe: {})", first_complaint(&err))
                }
            );
        }
        Ok((packets, duration))
    })();
    match result {
        Ok((frames, duration)) => {
            file.commit()?;
            Ok(Joined {
                frames,
                duration,
                secs: t0.elapsed().as_secs_f64(),
            })
        }
        Err(e) => {
            file.abandon();
            Err(e)
        }
    }
}
