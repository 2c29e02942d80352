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
//! Each frame read checks its tag, index and CRC ([`BfsError::CorruptFrame`]).
//!
//! # BoidForge `BFS1` (read support)
//!
//! 32-byte header: magic `BFS1`, `u16` version (1), `u16` flags, `u8` dim (2), `u8` dtype
//! (0 = f32), 2 reserved bytes, `i32` max_boids, `f32` dt, `u32` seed, `i32` frame_count
//! (−1 while streaming), 4 reserved bytes. Then per frame: `i32` timestep, `i32` n, and `f32`
//! px\[n\], py\[n\], vx\[n\], vy\[n\]. Frames carry no checksum. BFS1 stores no world size:
//! the reader infers it from the first frame's positions (BoidForge's 1920 × 1080 if they
//! fit, otherwise the per-axis maximum rounded up) and says so in a warning.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::scene::{Boundary, Model};

#[cfg(target_endian = "big")]
compile_error!("forge::bfs writes frames with bytemuck casts and assumes a little-endian target");

/// Magic bytes at the start of a forge `.bfs` file.
pub const MAGIC: [u8; 8] = *b"FORGEBFS";
/// The version this build writes.
pub const VERSION: u16 = 1;
/// The versions this build reads.
pub const SUPPORTED_VERSIONS: &[u16] = &[1];
/// Largest agent count accepted, checked before any allocation sized by the file.
pub const MAX_AGENTS: u64 = 1 << 31;

/// Largest scene name or scene JSON accepted (bytes).
const MAX_TEXT: u64 = 64 << 20;
/// Magic bytes of a BoidForge file.
const BFS1_MAGIC: [u8; 4] = *b"BFS1";
const BFS1_HEADER_LEN: u64 = 32;
const BFS1_VERSION: u16 = 1;
/// Frame tag of a forge frame.
const FRAME_TAG: [u8; 4] = *b"FRM1";
/// Bytes before the payload in a forge frame.
const FRAME_PREFIX: u64 = 24;
/// frame_count value while streaming.
const STREAMING: u64 = u64::MAX;
/// Offset of the frame_count field (excluded from the header CRC).
const FRAME_COUNT_AT: usize = 52;
/// Bytes of the fixed part of the forge header (through name_len).
const FIXED_HEADER: usize = 64;
/// Largest header_len accepted: fixed part, two capped texts, lengths, padding, CRC.
const MAX_HEADER_LEN: u64 = FIXED_HEADER as u64 + 4 + 2 * MAX_TEXT + 16;
/// Buffer of the writer; bulk arrays bigger than this bypass it.
const WRITE_BUFFER: usize = 64 << 10;
/// BoidForge's default world.
const BOIDFORGE_WORLD: [f32; 2] = [1920.0, 1080.0];

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
}

/// One recorded frame.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Frame {
    /// Frame number in the file.
    pub index: u64,
    /// Simulation step it was taken at.
    pub step: u64,
    /// `dim * n` values, component-major: x\[0..n\], y\[0..n\], (z\[0..n\]).
    pub pos: Vec<f32>,
    /// Same layout as `pos`.
    pub vel: Vec<f32>,
}

impl Frame {
    /// A frame with no agents, to be filled by [`Reader::read_frame_into`].
    pub fn empty() -> Frame {
        Frame::default()
    }

    /// Number of agents in this frame.
    pub fn agents(&self, dim: usize) -> usize {
        self.pos.len().checked_div(dim).unwrap_or(0)
    }
}

/// Everything that can go wrong reading or writing a `.bfs` file.
#[derive(Debug, thiserror::Error)]
pub enum BfsError {
    #[error("i/o error: {0}")]
    Io(#[from] io::Error),
    #[error("not a .bfs file (unknown magic; expected \"FORGEBFS\" or \"BFS1\")")]
    BadMagic,
    #[error("unsupported .bfs version {found} (this build reads version 1)")]
    UnsupportedVersion { found: u16 },
    #[error("corrupt .bfs header: {0}")]
    CorruptHeader(String),
    #[error("file is truncated: frame {frame} is incomplete")]
    Truncated { frame: u64 },
    #[error("frame {frame} is corrupt (checksum mismatch)")]
    CorruptFrame { frame: u64 },
    #[error("frame {frame} is out of range (the file has {count} frames)")]
    FrameOutOfRange { frame: u64, count: u64 },
    #[error("too large: {0}")]
    TooLarge(String),
}

fn invalid_input(msg: String) -> BfsError {
    BfsError::Io(io::Error::new(io::ErrorKind::InvalidInput, msg))
}

/// Bytes of one forge frame with `agents` agents in `dim` dimensions.
fn frame_size(dim: u8, agents: u64) -> Option<u64> {
    agents
        .checked_mul(8 * u64::from(dim))
        .and_then(|p| p.checked_add(FRAME_PREFIX))
}

fn pad8(len: usize) -> usize {
    len.div_ceil(8) * 8
}

fn header_crc(bytes: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&bytes[..FRAME_COUNT_AT]);
    h.update(&bytes[FRAME_COUNT_AT + 8..]);
    h.finalize()
}

fn frame_crc(index: u64, step: u64, pos: &[f32], vel: &[f32]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&index.to_le_bytes());
    h.update(&step.to_le_bytes());
    h.update(bytemuck::cast_slice(pos));
    h.update(bytemuck::cast_slice(vel));
    h.finalize()
}

// ---------------------------------------------------------------------------------------
// Writer
// ---------------------------------------------------------------------------------------

/// Writes a forge `.bfs` file: header first, then frames as they come; [`Writer::finalize`]
/// patches the frame count. A writer dropped without `finalize` flushes what it has (best
/// effort) and leaves a streaming file that still opens with every complete frame.
pub struct Writer<W: Write + Seek> {
    out: Option<BufWriter<W>>,
    /// Position of the file start in `out` (a writer may start mid-stream).
    start: u64,
    header_len: u64,
    frame_size: u64,
    values: usize,
    frames: u64,
    failed: bool,
    /// False for pipes: the header keeps the streaming frame count.
    seekable: bool,
}

impl<W: Write + Seek> Writer<W> {
    /// Writes the header (with `frame_count` = streaming). `header.version`, `source`,
    /// `frame_count` and `world_inferred` are ignored: the writer writes [`VERSION`].
    pub fn new(mut out: W, header: &Header) -> Result<Self, BfsError> {
        if header.dim != 2 && header.dim != 3 {
            return Err(invalid_input(format!(
                "dim must be 2 or 3, got {}",
                header.dim
            )));
        }
        if u64::from(header.agents) > MAX_AGENTS {
            return Err(BfsError::TooLarge(format!(
                "{} agents (at most {MAX_AGENTS})",
                header.agents
            )));
        }
        if header.record_every == 0 {
            return Err(invalid_input("record_every must be at least 1".into()));
        }
        if header.scene_name.len() as u64 > MAX_TEXT {
            return Err(BfsError::TooLarge(format!(
                "scene name of {} bytes (at most {MAX_TEXT})",
                header.scene_name.len()
            )));
        }
        if header.scene_json.len() as u64 > MAX_TEXT {
            return Err(BfsError::TooLarge(format!(
                "scene JSON of {} bytes (at most {MAX_TEXT})",
                header.scene_json.len()
            )));
        }
        let bytes = encode_header(header);
        let frame_size = frame_size(header.dim, u64::from(header.agents))
            .ok_or_else(|| BfsError::TooLarge("frame size overflows".into()))?;
        let values = usize::from(header.dim)
            .checked_mul(header.agents as usize)
            .ok_or_else(|| BfsError::TooLarge("frame size overflows".into()))?;
        // A pipe cannot seek: it gets a streaming recording (frame_count never patched,
        // which readers handle: they count the complete frames).
        let (start, seekable) = match out.stream_position() {
            Ok(p) => (p, true),
            Err(e) if e.raw_os_error() == Some(29) => (0, false), // ESPIPE
            Err(e) => return Err(e.into()),
        };
        let mut out = BufWriter::with_capacity(WRITE_BUFFER, out);
        out.write_all(&bytes)?;
        Ok(Writer {
            out: Some(out),
            start,
            header_len: bytes.len() as u64,
            frame_size,
            values,
            frames: 0,
            failed: false,
            seekable,
        })
    }

    /// Appends one frame. `pos` and `vel` must each hold `dim * agents` values.
    pub fn write_frame(&mut self, step: u64, pos: &[f32], vel: &[f32]) -> Result<(), BfsError> {
        if pos.len() != self.values || vel.len() != self.values {
            return Err(invalid_input(format!(
                "frame {} has {} position and {} velocity values, expected {} each (dim * agents)",
                self.frames,
                pos.len(),
                vel.len(),
                self.values
            )));
        }
        if self.failed {
            return Err(invalid_input(
                "an earlier write failed; the recording cannot continue".into(),
            ));
        }
        let out = self.out.as_mut().expect("writer used after finalize");
        let index = self.frames;
        let mut prefix = [0u8; FRAME_PREFIX as usize];
        prefix[0..4].copy_from_slice(&FRAME_TAG);
        prefix[4..8].copy_from_slice(&frame_crc(index, step, pos, vel).to_le_bytes());
        prefix[8..16].copy_from_slice(&index.to_le_bytes());
        prefix[16..24].copy_from_slice(&step.to_le_bytes());
        let r = out
            .write_all(&prefix)
            .and_then(|_| out.write_all(bytemuck::cast_slice(pos)))
            .and_then(|_| out.write_all(bytemuck::cast_slice(vel)));
        if let Err(e) = r {
            self.failed = true;
            return Err(e.into());
        }
        self.frames += 1;
        Ok(())
    }

    /// Frames written so far.
    pub fn frames_written(&self) -> u64 {
        self.frames
    }

    /// Pushes everything written so far to the underlying writer (for a file: to the OS), so
    /// a crash or SIGKILL after it loses none of it.
    pub fn flush(&mut self) -> Result<(), BfsError> {
        match self.out.as_mut() {
            Some(out) => Ok(out.flush()?),
            None => Ok(()),
        }
    }

    /// Patches `frame_count` in the header, flushes, and returns the count and the inner
    /// writer (positioned at the end of the recording).
    pub fn finalize(mut self) -> Result<(u64, W), BfsError> {
        let mut out = self.out.take().expect("writer finalized twice");
        if self.failed {
            return Err(invalid_input(
                "an earlier write failed; the recording cannot be finalized".into(),
            ));
        }
        if self.seekable {
            let end = self.start + self.header_len + self.frames * self.frame_size;
            out.seek(SeekFrom::Start(self.start + FRAME_COUNT_AT as u64))?;
            out.write_all(&self.frames.to_le_bytes())?;
            out.seek(SeekFrom::Start(end))?;
        }
        out.flush()?;
        let inner = out.into_inner().map_err(|e| e.into_error())?;
        Ok((self.frames, inner))
    }
}

impl<W: Write + Seek> Drop for Writer<W> {
    fn drop(&mut self) {
        if let Some(out) = self.out.as_mut() {
            let _ = out.flush();
        }
    }
}

fn encode_header(h: &Header) -> Vec<u8> {
    let name = h.scene_name.as_bytes();
    let json = h.scene_json.as_bytes();
    let crc_at = pad8(FIXED_HEADER + name.len() + 4 + json.len());
    let header_len = crc_at + 8;
    let mut b = Vec::with_capacity(header_len);
    b.extend_from_slice(&MAGIC);
    b.extend_from_slice(&VERSION.to_le_bytes());
    b.extend_from_slice(&0u16.to_le_bytes());
    b.extend_from_slice(&(header_len as u32).to_le_bytes());
    b.extend_from_slice(&[h.dim, h.model.code(), h.boundary.code(), 0]);
    b.extend_from_slice(&h.agents.to_le_bytes());
    b.extend_from_slice(&h.dt.to_le_bytes());
    b.extend_from_slice(&h.seed.to_le_bytes());
    b.extend_from_slice(&h.record_every.to_le_bytes());
    for w in h.world_size {
        b.extend_from_slice(&w.to_le_bytes());
    }
    debug_assert_eq!(b.len(), FRAME_COUNT_AT);
    b.extend_from_slice(&STREAMING.to_le_bytes());
    b.extend_from_slice(&(name.len() as u32).to_le_bytes());
    b.extend_from_slice(name);
    b.extend_from_slice(&(json.len() as u32).to_le_bytes());
    b.extend_from_slice(json);
    b.resize(crc_at, 0);
    let crc = header_crc(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    b.resize(header_len, 0);
    b
}

// ---------------------------------------------------------------------------------------
// Reader
// ---------------------------------------------------------------------------------------

enum Layout {
    Forge {
        header_len: u64,
        frame_size: u64,
    },
    /// Offsets of the frame headers (timestep, n) of every complete frame.
    Bfs1 {
        frames: Vec<u64>,
        max_n: u64,
    },
}

/// Reads a forge or BFS1 file; frames are read on demand.
pub struct Reader {
    file: File,
    header: Header,
    count: u64,
    warnings: Vec<String>,
    layout: Layout,
}

fn le_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
}
fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn le_i32(b: &[u8], at: usize) -> i32 {
    i32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}
fn le_f32(b: &[u8], at: usize) -> f32 {
    f32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn corrupt(msg: impl Into<String>) -> BfsError {
    BfsError::CorruptHeader(msg.into())
}

/// Reads as many bytes as the file has, up to `buf.len()`.
fn read_up_to(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Reads exactly `buf.len()` bytes; an early end of file is `Truncated { frame }`.
fn read_frame_bytes(file: &mut File, buf: &mut [u8], frame: u64) -> Result<(), BfsError> {
    file.read_exact(buf).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            BfsError::Truncated { frame }
        } else {
            BfsError::Io(e)
        }
    })
}

impl Reader {
    /// Opens a forge or BFS1 file, validating its header and counting its complete frames.
    pub fn open(path: &Path) -> Result<Reader, BfsError> {
        let mut file = File::open(path)?;
        let len = file.metadata()?.len();
        let mut magic = [0u8; 8];
        let got = read_up_to(&mut file, &mut magic)?;
        if got >= 4 && magic[..4] == BFS1_MAGIC {
            return Reader::open_bfs1(file, len);
        }
        if got == 8 && magic == MAGIC {
            return Reader::open_forge(file, len);
        }
        if got < 8
            && got > 0
            && (MAGIC.starts_with(&magic[..got]) || BFS1_MAGIC.starts_with(&magic[..got]))
        {
            return Err(corrupt(format!("file ends inside the magic ({got} bytes)")));
        }
        Err(BfsError::BadMagic)
    }

    fn open_forge(mut file: File, len: u64) -> Result<Reader, BfsError> {
        let mut fixed = [0u8; FIXED_HEADER];
        file.seek(SeekFrom::Start(0))?;
        let got = read_up_to(&mut file, &mut fixed)?;
        if got >= 10 {
            let version = le_u16(&fixed, 8);
            if !SUPPORTED_VERSIONS.contains(&version) {
                return Err(BfsError::UnsupportedVersion { found: version });
            }
        }
        if got < FIXED_HEADER {
            return Err(corrupt(format!(
                "file ends inside the header ({len} bytes, the fixed part alone is {FIXED_HEADER})"
            )));
        }
        let version = le_u16(&fixed, 8);
        let header_len = u64::from(le_u32(&fixed, 12));
        if header_len % 8 != 0
            || header_len < FIXED_HEADER as u64 + 16
            || header_len > MAX_HEADER_LEN
        {
            return Err(corrupt(format!("header_len {header_len} is impossible")));
        }
        if header_len > len {
            return Err(corrupt(format!(
                "file ends inside the header ({len} bytes, header_len is {header_len})"
            )));
        }
        // header_len <= file length and <= MAX_HEADER_LEN: safe to allocate.
        let mut b = vec![0u8; header_len as usize];
        file.seek(SeekFrom::Start(0))?;
        file.read_exact(&mut b)?;

        let name_len = u64::from(le_u32(&b, 60));
        if name_len > MAX_TEXT {
            return Err(corrupt(format!("name_len {name_len} exceeds {MAX_TEXT}")));
        }
        let name_end = FIXED_HEADER + name_len as usize;
        if name_end as u64 + 4 > header_len {
            return Err(corrupt(format!(
                "name_len {name_len} runs past header_len {header_len}"
            )));
        }
        let json_len = u64::from(le_u32(&b, name_end));
        if json_len > MAX_TEXT {
            return Err(corrupt(format!("json_len {json_len} exceeds {MAX_TEXT}")));
        }
        let json_start = name_end + 4;
        let json_end = json_start + json_len as usize;
        let crc_at = pad8(json_end);
        if (crc_at + 8) as u64 != header_len {
            return Err(corrupt(format!(
                "header_len is {header_len} but name and JSON lengths give {}",
                crc_at + 8
            )));
        }
        let stored_crc = le_u32(&b, crc_at);
        if header_crc(&b[..crc_at]) != stored_crc {
            return Err(corrupt("header checksum mismatch"));
        }
        if b[json_end..crc_at]
            .iter()
            .chain(&b[crc_at + 4..])
            .any(|&x| x != 0)
        {
            return Err(corrupt("nonzero header padding"));
        }
        let flags = le_u16(&b, 10);
        if flags != 0 {
            return Err(corrupt(format!("unknown flags {flags:#06x}")));
        }
        let dim = b[16];
        if dim != 2 && dim != 3 {
            return Err(corrupt(format!("dim is {dim}, must be 2 or 3")));
        }
        let model = Model::from_code(b[17])
            .ok_or_else(|| corrupt(format!("unknown model code {}", b[17])))?;
        let boundary = Boundary::from_code(b[18])
            .ok_or_else(|| corrupt(format!("unknown boundary code {}", b[18])))?;
        let agents = le_u32(&b, 20);
        if u64::from(agents) > MAX_AGENTS {
            return Err(BfsError::TooLarge(format!(
                "{agents} agents (at most {MAX_AGENTS})"
            )));
        }
        let dt = le_f32(&b, 24);
        let seed = le_u64(&b, 28);
        let record_every = le_u32(&b, 36);
        if record_every == 0 {
            return Err(corrupt("record_every is 0"));
        }
        let world_size = [le_f32(&b, 40), le_f32(&b, 44), le_f32(&b, 48)];
        let raw_count = le_u64(&b, FRAME_COUNT_AT);
        let scene_name = String::from_utf8(b[FIXED_HEADER..name_end].to_vec())
            .map_err(|_| corrupt("scene name is not UTF-8"))?;
        let scene_json = String::from_utf8(b[json_start..json_end].to_vec())
            .map_err(|_| corrupt("scene JSON is not UTF-8"))?;

        let frame_size = frame_size(dim, u64::from(agents)).expect("agents capped");
        let body = len - header_len;
        let complete = body / frame_size;
        let partial = !body.is_multiple_of(frame_size);
        let mut warnings = Vec::new();
        let frame_count = (raw_count != STREAMING).then_some(raw_count);
        let count = match frame_count {
            None => {
                let mut w = format!(
                    "recording was not finalized (interrupted?): {complete} complete frames"
                );
                if partial {
                    w += &format!(" (frame {complete} is incomplete)");
                }
                warnings.push(w);
                complete
            }
            Some(c) if complete >= c => {
                if body > c * frame_size {
                    warnings.push(format!(
                        "{} bytes after the last of {c} frames ignored",
                        body - c * frame_size
                    ));
                }
                c
            }
            Some(c) => {
                warnings.push(format!(
                    "file cut inside frame {complete}: {complete} complete frames readable \
                     (the header says {c})"
                ));
                complete
            }
        };
        let header = Header {
            version,
            dim,
            model,
            boundary,
            agents,
            dt,
            seed,
            record_every,
            world_size,
            scene_name,
            scene_json,
            frame_count,
            source: SourceFormat::Forge,
            world_inferred: false,
        };
        Ok(Reader {
            file,
            header,
            count,
            warnings,
            layout: Layout::Forge {
                header_len,
                frame_size,
            },
        })
    }

    fn open_bfs1(mut file: File, len: u64) -> Result<Reader, BfsError> {
        let mut b = [0u8; BFS1_HEADER_LEN as usize];
        file.seek(SeekFrom::Start(0))?;
        let got = read_up_to(&mut file, &mut b)?;
        if got >= 6 {
            let version = le_u16(&b, 4);
            if version != BFS1_VERSION {
                return Err(BfsError::UnsupportedVersion { found: version });
            }
        }
        if got < b.len() {
            return Err(corrupt(format!(
                "file ends inside the 32-byte BFS1 header ({len} bytes)"
            )));
        }
        let version = le_u16(&b, 4);
        let dim = b[8];
        if dim != 2 {
            return Err(corrupt(format!("BFS1 dim is {dim}, only 2 is supported")));
        }
        let dtype = b[9];
        if dtype != 0 {
            return Err(corrupt(format!(
                "BFS1 dtype is {dtype}, only 0 (f32) is supported"
            )));
        }
        let max_boids = le_i32(&b, 12);
        if max_boids < 0 {
            return Err(corrupt(format!("BFS1 max_boids is negative ({max_boids})")));
        }
        let max_n = (max_boids as u64).min(MAX_AGENTS);
        let dt = le_f32(&b, 16);
        let seed = u64::from(le_u32(&b, 20));
        let raw_count = le_i32(&b, 24);
        let frame_count = match raw_count {
            -1 => None,
            c if c >= 0 => Some(c as u64),
            c => return Err(corrupt(format!("BFS1 frame_count is {c}"))),
        };

        // Walk the frame headers, skipping payloads, to index every complete frame.
        let mut warnings = Vec::new();
        let mut frames = Vec::new();
        let mut at = BFS1_HEADER_LEN;
        let mut rd = BufReader::with_capacity(8 << 10, &file);
        rd.seek(SeekFrom::Start(at))?;
        let limit = frame_count.unwrap_or(u64::MAX);
        while (frames.len() as u64) < limit {
            let k = frames.len() as u64;
            let left = len - at;
            if left == 0 {
                break;
            }
            if left < 8 {
                warnings.push(format!(
                    "file cut inside frame {k}: {k} complete frames readable"
                ));
                break;
            }
            let mut fh = [0u8; 8];
            rd.read_exact(&mut fh)?;
            let timestep = le_i32(&fh, 0);
            let n = le_i32(&fh, 4);
            if timestep < 0 || n < 0 || n as u64 > max_n {
                warnings.push(format!(
                    "frame {k} is corrupt (timestep {timestep}, n {n}, max_boids {max_boids}): \
                     {k} frames readable"
                ));
                break;
            }
            let payload = 16 * n as u64;
            if left - 8 < payload {
                warnings.push(format!(
                    "file cut inside frame {k}: {k} complete frames readable"
                ));
                break;
            }
            frames.push(at);
            at += 8 + payload;
            rd.seek_relative(payload as i64)?;
        }
        drop(rd);
        let count = frames.len() as u64;
        match frame_count {
            None => warnings.push(format!(
                "recording was not finalized (interrupted?): {count} complete frames"
            )),
            // (a cut or corrupt frame met while walking has already been reported)
            Some(c) if count < c && warnings.is_empty() => {
                warnings.push(format!(
                    "file cut inside frame {count}: {count} complete frames readable"
                ));
            }
            _ => {}
        }

        let mut reader = Reader {
            file,
            header: Header {
                version,
                dim: 2,
                model: Model::Boids,
                boundary: Boundary::Open,
                agents: 0,
                dt,
                seed,
                record_every: 1,
                world_size: [BOIDFORGE_WORLD[0], BOIDFORGE_WORLD[1], 0.0],
                scene_name: "bfs1".into(),
                scene_json: "{}".into(),
                frame_count,
                source: SourceFormat::Bfs1,
                world_inferred: true,
            },
            count,
            warnings,
            layout: Layout::Bfs1 { frames, max_n },
        };
        if count == 0 {
            reader.warnings.push(
                "BFS1 stores no world size and the file has no frames: assumed 1920 x 1080".into(),
            );
            return Ok(reader);
        }
        let first = reader.read_frame(0)?;
        let n = first.agents(2);
        reader.header.agents = n as u32;
        let (xs, ys) = first.pos.split_at(n);
        let inside = |v: &[f32], hi: f32| v.iter().all(|&p| (0.0..=hi).contains(&p));
        let world = if inside(xs, BOIDFORGE_WORLD[0]) && inside(ys, BOIDFORGE_WORLD[1]) {
            BOIDFORGE_WORLD
        } else {
            let extent = |v: &[f32]| {
                let m = v
                    .iter()
                    .copied()
                    .filter(|p| p.is_finite())
                    .fold(0.0f32, f32::max);
                m.ceil().max(1.0)
            };
            [extent(xs), extent(ys)]
        };
        reader.header.world_size = [world[0], world[1], 0.0];
        reader.warnings.push(format!(
            "BFS1 stores no world size: inferred {} x {} from positions",
            world[0], world[1]
        ));
        Ok(reader)
    }

    /// The file's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Number of complete frames readable.
    pub fn frame_count(&self) -> u64 {
        self.count
    }

    /// What was odd about the file but did not stop it from opening.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Reads frame `k` (a direct seek, frames `0..k` are not read).
    pub fn read_frame(&mut self, k: u64) -> Result<Frame, BfsError> {
        let mut f = Frame::empty();
        self.read_frame_into(k, &mut f)?;
        Ok(f)
    }

    /// Reads frame `k` into `f`, reusing its buffers.
    pub fn read_frame_into(&mut self, k: u64, f: &mut Frame) -> Result<(), BfsError> {
        if k >= self.count {
            return Err(BfsError::FrameOutOfRange {
                frame: k,
                count: self.count,
            });
        }
        match &self.layout {
            Layout::Forge {
                header_len,
                frame_size,
            } => {
                // k < count and count * frame_size fits in the file: no overflow.
                let at = header_len + k * frame_size;
                let values = usize::from(self.header.dim) * self.header.agents as usize;
                self.file.seek(SeekFrom::Start(at))?;
                let mut prefix = [0u8; FRAME_PREFIX as usize];
                read_frame_bytes(&mut self.file, &mut prefix, k)?;
                if prefix[0..4] != FRAME_TAG {
                    return Err(BfsError::CorruptFrame { frame: k });
                }
                f.pos.resize(values, 0.0);
                f.vel.resize(values, 0.0);
                read_frame_bytes(&mut self.file, bytemuck::cast_slice_mut(&mut f.pos), k)?;
                read_frame_bytes(&mut self.file, bytemuck::cast_slice_mut(&mut f.vel), k)?;
                let crc = le_u32(&prefix, 4);
                let index = le_u64(&prefix, 8);
                let step = le_u64(&prefix, 16);
                if index != k || frame_crc(index, step, &f.pos, &f.vel) != crc {
                    return Err(BfsError::CorruptFrame { frame: k });
                }
                f.index = k;
                f.step = step;
            }
            Layout::Bfs1 { frames, max_n } => {
                let at = frames[k as usize];
                self.file.seek(SeekFrom::Start(at))?;
                let mut fh = [0u8; 8];
                read_frame_bytes(&mut self.file, &mut fh, k)?;
                let timestep = le_i32(&fh, 0);
                let n = le_i32(&fh, 4);
                // Checked at open; checked again in case the file changed since.
                if timestep < 0 || n < 0 || n as u64 > *max_n {
                    return Err(BfsError::CorruptFrame { frame: k });
                }
                let n = n as usize;
                f.pos.resize(2 * n, 0.0);
                f.vel.resize(2 * n, 0.0);
                read_frame_bytes(&mut self.file, bytemuck::cast_slice_mut(&mut f.pos), k)?;
                read_frame_bytes(&mut self.file, bytemuck::cast_slice_mut(&mut f.vel), k)?;
                f.index = k;
                f.step = timestep as u64;
            }
        }
        Ok(())
    }
}

/// One BFS1 frame as [`write_bfs1`] takes it: `(timestep, px, py, vx, vy)`.
pub type Bfs1Frame = (i32, Vec<f32>, Vec<f32>, Vec<f32>, Vec<f32>);

/// Writes a BoidForge BFS1 file (for tests and interop): frames given as
/// `(timestep, px, py, vx, vy)`. A file not `finalized` has frame_count −1 (streaming).
pub fn write_bfs1<W: Write>(
    out: W,
    dt: f32,
    seed: u32,
    max_boids: i32,
    frames: &[Bfs1Frame],
    finalized: bool,
) -> io::Result<()> {
    let mut out = BufWriter::with_capacity(WRITE_BUFFER, out);
    let count: i32 = if finalized {
        i32::try_from(frames.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "too many BFS1 frames"))?
    } else {
        -1
    };
    let mut h = [0u8; BFS1_HEADER_LEN as usize];
    h[0..4].copy_from_slice(&BFS1_MAGIC);
    h[4..6].copy_from_slice(&BFS1_VERSION.to_le_bytes());
    // flags (6..8) = 0
    h[8] = 2; // dim
    h[9] = 0; // dtype f32
    h[12..16].copy_from_slice(&max_boids.to_le_bytes());
    h[16..20].copy_from_slice(&dt.to_le_bytes());
    h[20..24].copy_from_slice(&seed.to_le_bytes());
    h[24..28].copy_from_slice(&count.to_le_bytes());
    out.write_all(&h)?;
    for (i, (ts, px, py, vx, vy)) in frames.iter().enumerate() {
        let n = px.len();
        if py.len() != n || vx.len() != n || vy.len() != n {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("BFS1 frame {i}: px, py, vx, vy lengths differ"),
            ));
        }
        let n32 = i32::try_from(n)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "too many BFS1 agents"))?;
        out.write_all(&ts.to_le_bytes())?;
        out.write_all(&n32.to_le_bytes())?;
        for a in [px, py, vx, vy] {
            out.write_all(bytemuck::cast_slice(a))?;
        }
    }
    out.flush()
}

#[cfg(test)]
mod tests {
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
    }
}
