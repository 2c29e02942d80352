//! Chunked renders (`forge render --chunk I/N`): the I-th of N contiguous frame ranges of the
//! clip, rendered so that its frames are the ones a whole render shows, and tagged with a
//! manifest that `forge concat` checks before it joins the chunks.
//!
//! What makes a chunk's frames equal to the whole render's (and to every other render's of the
//! same frame: a still, a `--frames` clip):
//! - the look is resolved over the whole recording (`super::resolve`): colour range, measured
//!   exposure and point size, and the 3D orbit's period; the orbit's phase and the dither's
//!   seed come from the frame's own index;
//! - a follow camera's eased state is advanced over every frame of the recording before the
//!   chunk ([`crate::render::Renderer::skip`]: the camera is replayed on the CPU from those
//!   frames, not drawn);
//! - trails are warmed up by drawing, unseen, the frames just before the chunk: as many as it
//!   takes for what came before them to fade below 2^-24 ([`WARM_EPS`]). These frames are
//!   drawn into the trails only ([`crate::render::Renderer::warm`]: no bloom, tone map or
//!   read-back), so they cost a fraction of a shown frame.
//!
//! Each chunk is a separate FFmpeg run with the same command line, so each starts with an IDR
//! frame and has the same encoder settings; the manifest rides in the MP4's metadata as the
//! tag `forge_chunk` (JSON; `ffprobe -show_entries format_tags=forge_chunk`).

use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::ffmpeg::Encoding;
use crate::engine::Task;
use crate::look::Look;

/// The MP4 metadata key the manifest is stored under.
pub const MANIFEST_TAG: &str = "forge_chunk";
/// The manifest's format version.
pub const MANIFEST_VERSION: u32 = 1;
/// Trails' warm-up: frames are drawn before the first one shown until what the frame before
/// them left has faded below this fraction. Measured: 1/256 and 1/65536 leave 1-level
/// differences in a few pixels of 3D chunks (bright sprites near the camera); 2^-24 left none
/// in any test (2D, 3D, trails 0.5 to 0.97).
pub const WARM_EPS: f32 = 1.0 / 16_777_216.0;

/// Frames of `clip` in piece `task.index` of `task.count`: contiguous, in order, sizes
/// differing by at most one (`floor(len·i/n) .. floor(len·(i+1)/n)`).
pub fn chunk_range(clip: Range<u64>, task: Task) -> Result<Range<u64>> {
    let len = clip.end - clip.start;
    if task.count > len {
        bail!(
            "--chunk {task}: {} chunks of a clip of {len} frame{} ({}..{}) would leave some empty; use at most {len} chunks",
            task.count,
            if len == 1 { "" } else { "s" },
            clip.start,
            clip.end
        );
    }
    let at = |i: u64| clip.start + ((len as u128 * i as u128) / task.count as u128) as u64;
    Ok(at(task.index)..at(task.index + 1))
}

/// The first output frame to draw for a render showing output frames `frames`: the frames
/// before them warm up the trails, back to the recording's first if need be (none without
/// trails).
pub fn warm_start(frames: &Range<u64>, trails: f32) -> u64 {
    if trails <= 0.0 {
        return frames.start;
    }
    let warm = (WARM_EPS.ln() / trails.min(0.9999).ln()).ceil() as u64;
    frames.start.saturating_sub(warm)
}

/// Which recording a chunk was rendered from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recording {
    /// File name (for messages; not compared).
    pub file: String,
    /// The header's CRC-32, hex (forge files store it; for BFS1, computed over its header
    /// with the frame count left out).
    pub header_crc: String,
    /// File size in bytes.
    pub bytes: u64,
    /// Frames readable.
    pub frames: u64,
}

impl Recording {
    /// Whether two identities name the same recording (the file name may differ).
    pub fn same(&self, other: &Recording) -> bool {
        self.header_crc == other.header_crc
            && self.bytes == other.bytes
            && self.frames == other.frames
    }
}

/// The identity of the recording at `path`, which has `frames` readable frames.
pub fn recording(path: &Path, frames: u64) -> Result<Recording> {
    let mut f =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let bytes = f.metadata()?.len();
    let mut head = [0u8; 32];
    f.read_exact(&mut head)
        .with_context(|| format!("{}: cannot read the header", path.display()))?;
    let crc = if &head[..8] == b"FORGEBFS" {
        // The stored CRC: 8 bytes before the first frame (see bfs/mod.rs).
        let header_len = u32::from_le_bytes(head[12..16].try_into().expect("4 bytes")) as u64;
        if header_len < 16 || header_len > bytes {
            bail!("{}: bad header length {header_len}", path.display());
        }
        let mut c = [0u8; 4];
        f.seek(SeekFrom::Start(header_len - 8))?;
        f.read_exact(&mut c)?;
        u32::from_le_bytes(c)
    } else if &head[..4] == b"BFS1" {
        let mut h = head;
        h[24..28].fill(0); // frame count: -1 while streaming
        crc32fast::hash(&h)
    } else {
        bail!("{}: not a recording forge knows", path.display());
    };
    Ok(Recording {
        file: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        header_crc: format!("{crc:08x}"),
        bytes,
        frames,
    })
}

/// A fingerprint of every resolved setting that affects the pixels or their encoding: the
/// CRC-32 of the resolved look (every field, measured ones and the frame rate included), the
/// encoder settings and `--interpolate` (when above 1).
pub fn settings_crc(look: &Look, enc: &Encoding, interpolate: u64) -> String {
    let mut text = format!("{}|{enc:?}", look.to_json());
    if interpolate > 1 {
        text.push_str(&format!("|interpolate={interpolate}"));
    }
    format!("{:08x}", crc32fast::hash(text.as_bytes()))
}

/// What a chunk carries in its metadata.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The manifest's format version ([`MANIFEST_VERSION`]).
    pub forge_chunk: u32,
    /// The forge version that rendered it.
    pub forge: String,
    pub recording: Recording,
    /// The whole clip the chunks split (`--frames`, else every frame): first, end (excluded).
    pub clip: [u64; 2],
    /// This chunk's frames: first, end (excluded).
    pub frames: [u64; 2],
    /// I, N.
    pub chunk: [u64; 2],
    pub fps: u32,
    pub size: [u32; 2],
    pub encoder: String,
    #[serde(default)]
    pub crf: Option<u32>,
    #[serde(default)]
    pub preset: Option<String>,
    /// FFmpeg's name for the pixel format.
    #[serde(default = "yuv420p")]
    pub pix_fmt: String,
    /// [`settings_crc`].
    pub settings: String,
}

fn yuv420p() -> String {
    "yuv420p".into()
}

impl Manifest {
    /// The manifest of chunk `task` (frames `frames` of `clip`) of a render of `recording`
    /// with the resolved `look`.
    pub fn new(
        recording: Recording,
        clip: &Range<u64>,
        frames: &Range<u64>,
        task: Task,
        look: &Look,
        enc: &Encoding,
        interpolate: u64,
    ) -> Manifest {
        Manifest {
            forge_chunk: MANIFEST_VERSION,
            forge: env!("CARGO_PKG_VERSION").to_string(),
            recording,
            clip: [clip.start, clip.end],
            frames: [frames.start, frames.end],
            chunk: [task.index, task.count],
            fps: look.fps.unwrap_or_default(),
            size: look.size.map(|s| s.0).unwrap_or_default(),
            encoder: enc.encoder.clone(),
            crf: enc.crf,
            preset: enc.preset.clone(),
            pix_fmt: enc.pix_fmts().1.to_string(),
            settings: settings_crc(look, enc, interpolate),
        }
    }

    /// The encoder settings in words: `libx264 crf 18 preset medium yuv420p`.
    pub fn encoding_text(&self) -> String {
        let mut t = self.encoder.clone();
        if let Some(c) = self.crf {
            t.push_str(&format!(" crf {c}"));
        }
        if let Some(p) = &self.preset {
            t.push_str(&format!(" preset {p}"));
        }
        t.push(' ');
        t.push_str(&self.pix_fmt);
        t
    }

    /// The container its encoder's stream belongs in.
    pub fn container(&self) -> super::codec::Container {
        if self.encoder.starts_with("prores") {
            super::codec::Container::Mov
        } else {
            super::codec::Container::Mp4
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a manifest serializes")
    }

    pub fn from_json(s: &str) -> Result<Manifest> {
        serde_json::from_str(s).context("the forge_chunk manifest does not parse")
    }

    /// The frames this chunk holds.
    pub fn len(&self) -> u64 {
        self.frames[1].saturating_sub(self.frames[0])
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The MP4 metadata that carries it.
    pub fn tags(&self) -> Vec<(String, String)> {
        vec![(MANIFEST_TAG.to_string(), self.to_json())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(index: u64, count: u64) -> Task {
        Task { index, count }
    }

    #[test]
    fn chunks_cover_the_clip_once_balanced() {
        for (clip, n) in [
            (0..10, 3),
            (5..105, 7),
            (3..4, 1),
            (0..8, 8),
            (10..1000, 32),
        ] {
            let mut next = clip.start;
            let mut sizes = Vec::new();
            for i in 0..n {
                let r = chunk_range(clip.clone(), t(i, n)).unwrap();
                assert_eq!(r.start, next);
                assert!(r.end > r.start);
                sizes.push(r.end - r.start);
                next = r.end;
            }
            assert_eq!(next, clip.end);
            let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            assert!(hi - lo <= 1, "{sizes:?}");
        }
        assert_eq!(chunk_range(0..10, t(0, 3)).unwrap(), 0..3);
        assert_eq!(chunk_range(0..10, t(2, 3)).unwrap(), 6..10);
        let e = chunk_range(0..5, t(0, 6)).unwrap_err().to_string();
        assert!(e.contains("at most 5 chunks"), "{e}");
    }

    #[test]
    fn warm_up() {
        assert_eq!(warm_start(&(50..60), 0.0), 50);
        assert_eq!(warm_start(&(0..10), 0.9), 0);
        // 0.5^24 = 2^-24: 24 frames (25 if rounding lands just above).
        let w = 50 - warm_start(&(50..60), 0.5);
        assert!((24..=25).contains(&w), "{w}");
        assert_eq!(warm_start(&(10..100), 0.5), 0);
        let w = 500 - warm_start(&(500..600), 0.9) as i32;
        assert!(0.9f64.powi(w) <= WARM_EPS as f64 * 1.0001, "{w}");
        assert!(0.9f64.powi(w - 1) > WARM_EPS as f64, "{w}");
    }

    #[test]
    fn manifest_round_trips() {
        let m = Manifest {
            forge_chunk: 1,
            forge: "0.1.0".into(),
            recording: Recording {
                file: "a \"b\".bfs".into(),
                header_crc: "0badf00d".into(),
                bytes: 123,
                frames: 10,
            },
            clip: [0, 10],
            frames: [3, 6],
            chunk: [1, 3],
            fps: 30,
            size: [160, 90],
            encoder: "libx264".into(),
            crf: Some(18),
            preset: Some("medium".into()),
            pix_fmt: "yuv420p".into(),
            settings: "12345678".into(),
        };
        assert_eq!(Manifest::from_json(&m.to_json()).unwrap(), m);
        assert_eq!(m.len(), 3);
    }
}
