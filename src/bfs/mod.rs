//! The `.bfs` stream: the only contract between the simulator and the renderer.
//!
//! A `.bfs` file holds a self-describing header and then one fixed-size frame per recorded
//! step. Frame `k` is found without reading frames `0..k`, and a recording cut at any byte
//! (crash, kill, full disk) still opens with every complete frame readable.
//!
//! forge also reads BoidForge's `BFS1` files (see [`write_bfs1`] and the end of this comment).
//!
//! # Layout (forge, version 1)
//!
//! All integers and floats are little-endian. Offsets are from the start of the file.
//!
//! | offset | size | field                                                               |
//! |-------:|-----:|---------------------------------------------------------------------|
//! |      0 |    8 | magic `FORGEBFS`                                                    |
//! |      8 |    2 | `u16` version (1)                                                   |
//! |     10 |    2 | `u16` flags (0)                                                     |
//! |     12 |    4 | `u32` header_len: bytes from file start to the first frame          |
//! |     16 |    1 | `u8` dim (2 or 3)                                                   |
//! |     17 |    1 | `u8` model code (0 boids, 1 vicsek)                                 |
//! |     18 |    1 | `u8` boundary code (0 wrap, 1 reflect, 2 open)                      |
//! |     19 |    1 | `u8` reserved (0)                                                   |
//! |     20 |    4 | `u32` agents `n`                                                    |
//! |     24 |    4 | `f32` dt                                                            |
//! |     28 |    8 | `u64` seed                                                          |
//! |     36 |    4 | `u32` record_every (a frame every k steps, k >= 1)                  |
//! |     40 |   12 | `f32` world_size\[3\] (world is `[0,size)` per axis; z = 0 in 2D)    |
//! |     52 |    8 | `u64` frame_count (`u64::MAX` while streaming; patched by finalize) |
//! |     60 |    4 | `u32` name_len (<= 64 MiB)                                          |
//! |     64 |    N | scene name, UTF-8                                                   |
//! |  64+N  |    4 | `u32` json_len (<= 64 MiB)                                          |
//! |  68+N  |    J | the full resolved scene, JSON text, UTF-8                           |
//! |        |      | zero padding to a multiple of 8                                     |
//! |    C   |    4 | `u32` CRC-32 (IEEE) of bytes `0..52` and `60..C`, i.e. every header |
//! |        |      | byte before it except the frame_count field                         |
//! |   C+4  |    4 | zero padding; header_len = C + 8 (a multiple of 8)                  |
//!
//! **Version 2** (recordings with species; without, the writer writes version 1): after the
//! scene JSON, a `u32` count (= `n`) and `n` bytes, each agent's species index in agent order
//! ([`Header::species`]); then the zero padding to a multiple of 8, the CRC (over these bytes
//! too) and its padding, as above.
//!
//! Then frames, each `frame_size = 24 + 8 * dim * n` bytes, frame `k` at
//! `header_len + k * frame_size`:
//!
//! | offset | size          | field                                                      |
//! |-------:|--------------:|------------------------------------------------------------|
//! |      0 |             4 | tag `FRM1`                                                 |
//! |      4 |             4 | `u32` CRC-32 of bytes 8..frame_size (index, step, payload) |
//! |      8 |             8 | `u64` index (= k)                                          |
//! |     16 |             8 | `u64` step (simulation step the frame was taken at)        |
//! |     24 | 4 * dim * n   | `f32` positions, component-major: x\[0..n\], y\[0..n\], (z\[0..n\]) |
//! | 24+4dn | 4 * dim * n   | `f32` velocities, same layout                              |
//!
//! Reading rules: the magic is checked, then the version against [`SUPPORTED_VERSIONS`];
//! every size is checked (and capped) before anything sized by the file is allocated; the
//! header CRC must match. The number of readable frames is:
//! - `frame_count` if the file holds at least that many complete frames;
//! - while streaming (`u64::MAX`, the recording was never finalized): every complete frame
//!   in the file, with a warning;
//! - if the file is shorter than `frame_count` says: every complete frame, with a warning
//!   naming the first incomplete one.
//!
//! The header's dt must be a finite number > 0, and so must the world size on each of the `dim`
//! axes ([`BfsError::CorruptHeader`] names the field).
//!
//! Each frame read checks its tag and CRC ([`BfsError::CorruptFrame`]), then its index
//! ([`BfsError::FrameIndex`]: a frame with a valid checksum in the wrong place).
//!
//! # Memory
//!
//! Nothing sized by a field is allocated before the field is checked against the file's
//! length; a frame's arrays (`8 * dim * n` bytes) are then reserved fallibly, and only if they
//! fit in nine tenths of the memory available (MemAvailable). A frame over 256 MiB is first
//! streamed once through its checksum, so a header that declares 2^28 agents over a sparse
//! (or any lying) file is a checksum error after a read, not 4 GB taken; one that cannot fit
//! (2^31 agents in 3D) is an error naming the frame and the size ([`BfsError::TooLarge`]),
//! never an abort. Only regular files are read ([`BfsError::NotAFile`]): a FIFO would block
//! the open.
//!
//! # BoidForge `BFS1` (read support)
//!
//! 32-byte header: magic `BFS1`, `u16` version (1), `u16` flags, `u8` dim (2), `u8` dtype
//! (0 = f32), 2 reserved bytes, `i32` max_boids, `f32` dt, `u32` seed, `i32` frame_count
//! (−1 while streaming), 4 reserved bytes. Then per frame: `i32` timestep, `i32` n, and `f32`
//! px\[n\], py\[n\], vx\[n\], vy\[n\]. Frames carry no checksum. BFS1 stores no world size:
//! the reader infers it from the first frame's positions (BoidForge's 1920 × 1080 if they
//! fit, otherwise the per-axis maximum rounded up) and says so in a warning.
//!
//! Opening walks the frame headers once (BFS1 has no fixed frame size) and keeps a compact
//! index: one entry per run of consecutive frames with the same `n`, so a file of a million
//! frames of a constant flock is indexed in a few bytes whatever its frame count says. BoidForge's
//! timesteps only grow: a frame whose timestep does not exceed the previous frame's ends the
//! readable frames, with a warning. This is also what a stretch of zeros (a sparse or
//! preallocated file) reads as — one frame with n = 0 at timestep 0 at most, never millions.

use std::io;

use crate::scene::{Boundary, Model, Scene};

mod bfs1;
mod direct;
mod frame;
mod range;
mod read;
mod write;

pub use bfs1::{write_bfs1, Bfs1Frame};
pub use direct::DirectFile;
pub use frame::{is_in, present_of, Frame, NonFinite};
pub use range::{FrameRange, RangeError};
pub use read::{open_recording, FrameSpan, Reader};
pub use write::Writer;

#[cfg(target_endian = "big")]
compile_error!("forge::bfs writes frames with bytemuck casts and assumes a little-endian target");

/// Magic bytes at the start of a forge `.bfs` file.
pub const MAGIC: [u8; 8] = *b"FORGEBFS";
/// The version this build writes for a recording without species (version 1: byte for byte
/// what builds before species wrote).
pub const VERSION: u16 = 1;
/// The version this build writes for a recording with species: version 1 plus the species id
/// of every agent after the scene JSON.
pub const VERSION_SPECIES: u16 = 2;
/// The versions this build reads.
pub const SUPPORTED_VERSIONS: &[u16] = &[1, 2];
/// Largest agent count accepted, checked before any allocation sized by the file.
pub const MAX_AGENTS: u64 = 1 << 31;

/// Largest scene name or scene JSON accepted (bytes).
pub(super) const MAX_TEXT: u64 = 64 << 20;
/// Magic bytes of a BoidForge file.
pub(super) const BFS1_MAGIC: [u8; 4] = *b"BFS1";
pub(super) const BFS1_HEADER_LEN: u64 = 32;
pub(super) const BFS1_VERSION: u16 = 1;
/// Frame tag of a forge frame.
pub(super) const FRAME_TAG: [u8; 4] = *b"FRM1";
/// Bytes before the payload in a forge frame.
pub(super) const FRAME_PREFIX: u64 = 24;
/// frame_count value while streaming.
pub(super) const STREAMING: u64 = u64::MAX;
/// Offset of the frame_count field (excluded from the header CRC).
pub(super) const FRAME_COUNT_AT: usize = 52;
/// Bytes of the fixed part of the forge header (through name_len).
pub(super) const FIXED_HEADER: usize = 64;
/// Largest header_len accepted: fixed part, two capped texts, lengths, padding, CRC.
pub(super) const MAX_HEADER_LEN: u64 = FIXED_HEADER as u64 + 4 + 2 * MAX_TEXT + 4 + MAX_AGENTS + 16;
/// Buffer of the writer; bulk arrays bigger than this bypass it.
pub(super) const WRITE_BUFFER: usize = 64 << 10;
/// BoidForge's default world.
pub(super) const BOIDFORGE_WORLD: [f32; 2] = [1920.0, 1080.0];

/// Which format a file was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceFormat {
    /// forge's own format.
    Forge,
    /// BoidForge's `BFS1`.
    Bfs1,
}

/// Everything a file says about its recording.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// Format version read from the file ([`Writer`] always writes [`VERSION`]).
    pub version: u16,
    /// 2 or 3.
    pub dim: u8,
    pub model: Model,
    pub boundary: Boundary,
    /// Agents per frame (for BFS1, those of the first frame).
    pub agents: u32,
    pub dt: f32,
    pub seed: u64,
    /// A frame every `record_every` steps.
    pub record_every: u32,
    /// The world is `[0, size)` per axis; z = 0 in 2D.
    pub world_size: [f32; 3],
    pub scene_name: String,
    /// The full resolved scene, as JSON text.
    pub scene_json: String,
    /// `None` while streaming (not finalized).
    pub frame_count: Option<u64>,
    pub source: SourceFormat,
    /// True for BFS1, which stores no world size.
    pub world_inferred: bool,
    /// The species index of each agent, in agent order (version 2); empty for a recording
    /// without species (version 1, and BFS1).
    pub species: Vec<u8>,
}

/// Everything that can go wrong reading or writing a `.bfs` file.
#[derive(Debug, thiserror::Error)]
pub enum BfsError {
    #[error("i/o error: {0}")]
    Io(#[from] io::Error),
    #[error("not a .bfs file (unknown magic; expected \"FORGEBFS\" or \"BFS1\")")]
    BadMagic,
    #[error("unsupported .bfs version {found} (this build reads versions 1 and 2)")]
    UnsupportedVersion { found: u16 },
    #[error("corrupt .bfs header: {0}")]
    CorruptHeader(String),
    #[error("file is truncated: frame {frame} is incomplete")]
    Truncated { frame: u64 },
    #[error("frame {frame} is corrupt (checksum mismatch)")]
    CorruptFrame { frame: u64 },
    /// A frame whose checksum matches but whose index field is not its place in the file
    /// (frames spliced, duplicated or reordered).
    #[error(
        "frame {frame} is corrupt: its index field says {found} (a frame out of place; its \
         checksum matches)"
    )]
    FrameIndex { frame: u64, found: u64 },
    /// A file that is not a regular file (a FIFO, a directory, a device).
    #[error("{0}")]
    NotAFile(String),
    #[error("frame {frame} is out of range (the file has {count} frames)")]
    FrameOutOfRange { frame: u64, count: u64 },
    #[error("too large: {0}")]
    TooLarge(String),
    /// A value that is not a finite number (forge's solver never records one).
    #[error("frame {frame}: {what}: not a recording forge's solver wrote, or damaged")]
    NonFinite { frame: u64, what: String },
}

pub(super) fn invalid_input(msg: String) -> BfsError {
    BfsError::Io(io::Error::new(io::ErrorKind::InvalidInput, msg))
}

/// Bytes of one forge frame with `agents` agents in `dim` dimensions.
pub(super) fn frame_size(dim: u8, agents: u64) -> Option<u64> {
    agents
        .checked_mul(8 * u64::from(dim))
        .and_then(|p| p.checked_add(FRAME_PREFIX))
}

/// Frames whose arrays are larger than this are checked (checksum, index) by streaming them
/// once before the arrays are allocated (see [`Reader::read_frame_into`]).
pub(super) const VERIFY_BEFORE_READING: u64 = 256 << 20;

/// Bytes that growing `f`'s two arrays to `values` floats each would add.
fn frame_growth(f: &Frame, values: usize) -> u64 {
    let grow = |v: &Vec<f32>| values.saturating_sub(v.capacity()) as u64 * 4;
    grow(&f.pos) + grow(&f.vel)
}

fn frame_too_large(frame: u64, values: usize, agents: u64, dim: u8, what: String) -> BfsError {
    BfsError::TooLarge(format!(
        "frame {frame} needs {} of memory ({agents} agents in {dim}D), {what}",
        crate::units::bytes(8 * values as u64)
    ))
}

/// Refuses to grow `f` to `values` floats a array (frame `frame` of a file with `agents`
/// agents in `dim` dimensions) beyond nine tenths of the memory available (MemAvailable).
pub(super) fn check_frame_memory(
    f: &Frame,
    values: usize,
    frame: u64,
    agents: u64,
    dim: u8,
) -> Result<(), BfsError> {
    let extra = frame_growth(f, values);
    if extra == 0 {
        return Ok(());
    }
    if let Some(avail) = crate::sys::available_memory() {
        if extra > avail / 10 * 9 {
            let what = format!("more than the {} available", crate::units::bytes(avail));
            return Err(frame_too_large(frame, values, agents, dim, what));
        }
    }
    Ok(())
}

/// Makes room for `values` floats in each of `f`'s two arrays: only if the memory is there
/// ([`check_frame_memory`]), and fallibly, so that a lying header is an error, never an abort.
pub(super) fn reserve_frame(
    f: &mut Frame,
    values: usize,
    frame: u64,
    agents: u64,
    dim: u8,
) -> Result<(), BfsError> {
    check_frame_memory(f, values, frame, agents, dim)?;
    for v in [&mut f.pos, &mut f.vel] {
        if v.try_reserve_exact(values.saturating_sub(v.len())).is_err() {
            let what = "and that much could not be allocated".to_string();
            return Err(frame_too_large(frame, values, agents, dim, what));
        }
    }
    Ok(())
}

pub(super) fn pad8(len: usize) -> usize {
    len.div_ceil(8) * 8
}

pub(super) fn header_crc(bytes: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&bytes[..FRAME_COUNT_AT]);
    h.update(&bytes[FRAME_COUNT_AT + 8..]);
    h.finalize()
}

/// A frame's CRC-32 (index, step, payload). Large payloads are checksummed in pieces on
/// several threads and the pieces' CRCs combined (the same value as one pass): one thread does
/// about 10 GB/s, and a million agents recorded every step is 16 MB a step.
pub(super) fn frame_crc(index: u64, step: u64, pos: &[f32], vel: &[f32]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&index.to_le_bytes());
    h.update(&step.to_le_bytes());
    crc_update(&mut h, bytemuck::cast_slice(pos));
    crc_update(&mut h, bytemuck::cast_slice(vel));
    h.finalize()
}

/// Bytes each thread of a parallel checksum takes at least.
const CRC_PIECE: usize = 2 << 20;

/// Most threads one checksum uses.
const CRC_THREADS: usize = 8;

/// `h.update(bytes)`, on several threads where `bytes` is large and cores are free.
fn crc_update(h: &mut crc32fast::Hasher, bytes: &[u8]) {
    // Asked once: the answer reads cgroup files, which allocates (and a frame too small to
    // split must cost the writer no allocation).
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let pieces = bytes.len() / CRC_PIECE;
    let threads = if pieces < 2 {
        1
    } else {
        let cores = *CORES.get_or_init(|| {
            std::thread::available_parallelism()
                .map(|t| t.get())
                .unwrap_or(1)
        });
        cores.min(CRC_THREADS).min(pieces)
    };
    if threads < 2 {
        h.update(bytes);
        return;
    }
    let piece = bytes.len().div_ceil(threads);
    let parts: Vec<crc32fast::Hasher> = std::thread::scope(|s| {
        let handles: Vec<_> = bytes
            .chunks(piece)
            .map(|c| {
                s.spawn(move || {
                    let mut p = crc32fast::Hasher::new();
                    p.update(c);
                    p
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|t| t.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    for p in &parts {
        h.combine(p);
    }
}

impl Header {
    /// Bytes of a forge recording of this header with `frames` frames (saturating).
    pub fn recording_size(&self, frames: u64) -> u64 {
        let header = pad8(FIXED_HEADER + self.scene_name.len() + 4 + self.scene_json.len()) + 8;
        frame_size(self.dim, u64::from(self.agents))
            .and_then(|f| f.checked_mul(frames))
            .and_then(|b| b.checked_add(header as u64))
            .unwrap_or(u64::MAX)
    }

    /// The header of a recording of `scene` (its resolved scene travels in the header).
    pub fn for_scene(scene: &Scene) -> Header {
        Header {
            version: VERSION,
            dim: scene.dim as u8,
            model: scene.model,
            boundary: scene.boundary,
            agents: scene.agents,
            dt: scene.dt,
            seed: scene.seed,
            record_every: scene.record_every,
            world_size: scene.world,
            scene_name: scene.name.clone(),
            scene_json: scene.to_json(),
            frame_count: None,
            source: SourceFormat::Forge,
            world_inferred: false,
            species: species_ids(scene),
        }
    }
}

/// Each agent's species index, as `sim::species` numbers them (empty without species).
fn species_ids(scene: &Scene) -> Vec<u8> {
    let mut ids: Vec<u8> = scene
        .species
        .iter()
        .enumerate()
        .flat_map(|(i, s)| std::iter::repeat_n(i as u8, s.agents as usize))
        .collect();
    if let Some(&last) = ids.last() {
        ids.resize(scene.agents as usize, last);
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::read::{le_u32, le_u64};
    use super::write::encode_header;
    use super::*;

    fn header(dim: u8, agents: u32) -> Header {
        Header {
            version: VERSION,
            dim,
            model: Model::Vicsek,
            boundary: Boundary::Wrap,
            agents,
            dt: 1.0,
            seed: 42,
            record_every: 3,
            world_size: [10.0, 20.0, if dim == 3 { 30.0 } else { 0.0 }],
            scene_name: "unit".into(),
            scene_json: "{\"a\":1}".into(),
            frame_count: None,
            source: SourceFormat::Forge,
            world_inferred: false,
            species: Vec::new(),
        }
    }

    #[test]
    fn header_layout_is_aligned_and_checksummed() {
        let b = encode_header(&header(2, 5));
        assert_eq!(b.len() % 8, 0);
        assert_eq!(le_u32(&b, 12) as usize, b.len());
        assert_eq!(le_u64(&b, FRAME_COUNT_AT), STREAMING);
        let crc_at = b.len() - 8;
        assert_eq!(header_crc(&b[..crc_at]), le_u32(&b, crc_at));
    }

    #[test]
    fn parallel_checksum_is_the_serial_one() {
        // Pieces of CRC_PIECE and an odd tail; a payload too small to split.
        for len in [3 * CRC_PIECE / 4 + 3, 5 * CRC_PIECE / 4 + 7, 10] {
            let pos: Vec<f32> = (0..len).map(|i| (i as f32).sin()).collect();
            let vel: Vec<f32> = (0..len).map(|i| i as f32 * 0.5).collect();
            let mut h = crc32fast::Hasher::new();
            h.update(&7u64.to_le_bytes());
            h.update(&70u64.to_le_bytes());
            h.update(bytemuck::cast_slice(&pos));
            h.update(bytemuck::cast_slice(&vel));
            assert_eq!(frame_crc(7, 70, &pos, &vel), h.finalize(), "{len}");
        }
    }

    #[test]
    fn frame_size_formula() {
        assert_eq!(frame_size(2, 3), Some(24 + 48));
        assert_eq!(frame_size(3, MAX_AGENTS), Some(24 + 24 * MAX_AGENTS));
        assert_eq!(frame_size(3, u64::MAX), None);
    }

    #[test]
    fn writer_rejects_bad_lengths_and_finalize_patches_count() {
        let mut w = Writer::new(io::Cursor::new(Vec::new()), &header(3, 2)).unwrap();
        assert!(w.write_frame(0, &[0.0; 5], &[0.0; 6]).is_err());
        w.write_frame(0, &[1.0; 6], &[2.0; 6]).unwrap();
        let (n, cur) = w.finalize().unwrap();
        assert_eq!(n, 1);
        let b = cur.into_inner();
        assert_eq!(le_u64(&b, FRAME_COUNT_AT), 1);
        assert_eq!(
            b.len() as u64,
            le_u32(&b, 12) as u64 + frame_size(3, 2).unwrap()
        );
        assert_eq!(header(3, 2).recording_size(1), b.len() as u64);
    }

    #[test]
    fn locate_frame_points_at_the_arrays_and_checks_the_checksum() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.bfs");
        let file = std::fs::File::create(&path).unwrap();
        let mut w = Writer::new(file, &header(2, 3)).unwrap();
        for k in 0..3u64 {
            let pos: Vec<f32> = (0..6).map(|i| (10 * k + i) as f32).collect();
            let vel: Vec<f32> = (0..6).map(|i| -((10 * k + i) as f32)).collect();
            w.write_frame(3 * k, &pos, &vel).unwrap();
        }
        w.finalize().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let mut r = Reader::open(&path).unwrap();
        let span = r.locate_frame(2, true).unwrap();
        assert_eq!((span.index, span.step, span.agents), (2, 6, 3));
        assert_eq!(span.payload_at % 8, 0);
        let at = span.payload_at as usize;
        let f = r.read_frame(2).unwrap();
        assert_eq!(&bytes[at..at + 24], bytemuck::cast_slice::<f32, u8>(&f.pos));
        assert_eq!(
            &bytes[at + 24..at + 48],
            bytemuck::cast_slice::<f32, u8>(&f.vel)
        );
        assert!(matches!(
            r.locate_frame(3, false),
            Err(BfsError::FrameOutOfRange { frame: 3, count: 3 })
        ));
        // One payload byte flipped: the checksum finds it; without `verify` only the tag and
        // index are checked.
        let mut bad = bytes.clone();
        bad[at + 5] ^= 0x40;
        std::fs::write(&path, &bad).unwrap();
        let mut r = Reader::open(&path).unwrap();
        assert!(matches!(
            r.locate_frame(2, true),
            Err(BfsError::CorruptFrame { frame: 2 })
        ));
        assert!(r.locate_frame(2, false).is_ok());
    }
}
