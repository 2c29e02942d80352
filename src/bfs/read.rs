//! Reading forge `.bfs` files (and dispatching BoidForge's `BFS1` to `bfs1.rs`).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use super::*;

pub(super) enum Layout {
    Forge {
        header_len: u64,
        frame_size: u64,
    },
    /// Every complete frame, as runs of consecutive frames with the same agent count.
    Bfs1 {
        runs: Vec<Bfs1Run>,
        max_n: u64,
    },
}

/// Consecutive BFS1 frames with the same agent count: frame `first + i` starts at
/// `at + i * (8 + 16 * n)`.
pub(super) struct Bfs1Run {
    pub(super) first: u64,
    pub(super) at: u64,
    pub(super) n: u64,
}

/// Reads a forge or BFS1 file; frames are read on demand.
pub struct Reader {
    pub(super) file: File,
    pub(super) header: Header,
    pub(super) count: u64,
    pub(super) warnings: Vec<String>,
    pub(super) layout: Layout,
    /// The species the recorded timeline adds or removes (None: every agent is always there).
    pub(super) presence: Option<crate::scene::timeline::Presence>,
}

pub(super) fn le_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
}
pub(super) fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
pub(super) fn le_i32(b: &[u8], at: usize) -> i32 {
    i32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
pub(super) fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}
pub(super) fn le_f32(b: &[u8], at: usize) -> f32 {
    f32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

pub(super) fn corrupt(msg: impl Into<String>) -> BfsError {
    BfsError::CorruptHeader(msg.into())
}

/// A header field that must be a finite number > 0 (dt, a world side).
pub(super) fn check_positive(field: &str, x: f32) -> Result<(), BfsError> {
    if x.is_finite() && x > 0.0 {
        Ok(())
    } else {
        Err(corrupt(format!(
            "{field} is {x}, must be a finite number > 0"
        )))
    }
}

/// Reads as many bytes as the file has, up to `buf.len()`.
pub(super) fn read_up_to(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
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
pub(super) fn read_frame_bytes(
    file: &mut File,
    buf: &mut [u8],
    frame: u64,
) -> Result<(), BfsError> {
    file.read_exact(buf).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            BfsError::Truncated { frame }
        } else {
            BfsError::Io(e)
        }
    })
}

/// Reads the whole header of a forge file: the fixed part first (its version checked even
/// when the file ends inside it), then `header_len` bytes once that is known to be possible.
fn read_forge_header(file: &mut File, len: u64) -> Result<Vec<u8>, BfsError> {
    let mut fixed = [0u8; FIXED_HEADER];
    file.seek(SeekFrom::Start(0))?;
    let got = read_up_to(file, &mut fixed)?;
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
    let header_len = u64::from(le_u32(&fixed, 12));
    if header_len % 8 != 0 || header_len < FIXED_HEADER as u64 + 16 || header_len > MAX_HEADER_LEN {
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
    Ok(b)
}

/// Where a forge header's scene name and JSON lie, and its CRC.
struct TextSpans {
    name_end: usize,
    json_start: usize,
    json_end: usize,
    /// Version 2: the species ids (agents of them).
    species: Option<(usize, usize)>,
}

/// The name and JSON lengths against `header_len` (`b.len()`), then the CRC and the padding.
fn text_spans(b: &[u8]) -> Result<TextSpans, BfsError> {
    let header_len = b.len() as u64;
    let name_len = u64::from(le_u32(b, 60));
    if name_len > MAX_TEXT {
        return Err(corrupt(format!("name_len {name_len} exceeds {MAX_TEXT}")));
    }
    let name_end = FIXED_HEADER + name_len as usize;
    if name_end as u64 + 4 > header_len {
        return Err(corrupt(format!(
            "name_len {name_len} runs past header_len {header_len}"
        )));
    }
    let json_len = u64::from(le_u32(b, name_end));
    if json_len > MAX_TEXT {
        return Err(corrupt(format!("json_len {json_len} exceeds {MAX_TEXT}")));
    }
    let json_start = name_end + 4;
    let json_end = json_start + json_len as usize;
    let mut end = json_end;
    let mut species = None;
    if le_u16(b, 8) == VERSION_SPECIES {
        if json_end as u64 + 4 > header_len {
            return Err(corrupt(format!(
                "json_len {json_len} leaves no room for the species ids in header_len \
                 {header_len}"
            )));
        }
        let count = u64::from(le_u32(b, json_end));
        let agents = u64::from(le_u32(b, 20));
        if count != agents {
            return Err(corrupt(format!(
                "the header holds species ids for {count} agents, but the recording has \
                 {agents}"
            )));
        }
        if json_end as u64 + 4 + count > header_len {
            return Err(corrupt(format!(
                "species ids for {count} agents run past header_len {header_len}"
            )));
        }
        let start = json_end + 4;
        end = start + count as usize;
        species = Some((start, end));
    }
    let crc_at = pad8(end);
    if (crc_at + 8) as u64 != header_len {
        return Err(corrupt(format!(
            "header_len is {header_len} but name and JSON lengths give {}",
            crc_at + 8
        )));
    }
    let stored_crc = le_u32(b, crc_at);
    if header_crc(&b[..crc_at]) != stored_crc {
        return Err(corrupt("header checksum mismatch"));
    }
    if b[end..crc_at]
        .iter()
        .chain(&b[crc_at + 4..])
        .any(|&x| x != 0)
    {
        return Err(corrupt("nonzero header padding"));
    }
    Ok(TextSpans {
        name_end,
        json_start,
        json_end,
        species,
    })
}

/// The header's fields, each checked, in the order of the file.
fn decode_header(b: &[u8], text: &TextSpans) -> Result<Header, BfsError> {
    let flags = le_u16(b, 10);
    if flags != 0 {
        return Err(corrupt(format!("unknown flags {flags:#06x}")));
    }
    let dim = b[16];
    if dim != 2 && dim != 3 {
        return Err(corrupt(format!("dim is {dim}, must be 2 or 3")));
    }
    let model =
        Model::from_code(b[17]).ok_or_else(|| corrupt(format!("unknown model code {}", b[17])))?;
    let boundary = Boundary::from_code(b[18])
        .ok_or_else(|| corrupt(format!("unknown boundary code {}", b[18])))?;
    let agents = le_u32(b, 20);
    if u64::from(agents) > MAX_AGENTS {
        return Err(BfsError::TooLarge(format!(
            "{agents} agents (at most {MAX_AGENTS})"
        )));
    }
    let dt = le_f32(b, 24);
    check_positive("dt", dt)?;
    let record_every = le_u32(b, 36);
    if record_every == 0 {
        return Err(corrupt("record_every is 0"));
    }
    let world_size = [le_f32(b, 40), le_f32(b, 44), le_f32(b, 48)];
    for (k, &w) in world_size.iter().enumerate().take(usize::from(dim)) {
        check_positive(&format!("world_size[{k}]"), w)?;
    }
    let scene_name = String::from_utf8(b[FIXED_HEADER..text.name_end].to_vec())
        .map_err(|_| corrupt("scene name is not UTF-8"))?;
    let scene_json = String::from_utf8(b[text.json_start..text.json_end].to_vec())
        .map_err(|_| corrupt("scene JSON is not UTF-8"))?;
    let raw_count = le_u64(b, FRAME_COUNT_AT);
    Ok(Header {
        version: le_u16(b, 8),
        dim,
        model,
        boundary,
        agents,
        dt,
        seed: le_u64(b, 28),
        record_every,
        world_size,
        scene_name,
        scene_json,
        frame_count: (raw_count != STREAMING).then_some(raw_count),
        source: SourceFormat::Forge,
        world_inferred: false,
        species: text
            .species
            .map(|(a, z)| b[a..z].to_vec())
            .unwrap_or_default(),
    })
}

/// The frames readable from `body` bytes of frames of `frame_size` each, against the header's
/// `frame_count` (`None`: not finalized), with a warning for a short, long or unfinished file.
fn count_frames(body: u64, frame_size: u64, frame_count: Option<u64>) -> (u64, Vec<String>) {
    let complete = body / frame_size;
    let partial = !body.is_multiple_of(frame_size);
    let mut warnings = Vec::new();
    let count = match frame_count {
        None => {
            let mut w =
                format!("recording was not finalized (interrupted?): {complete} complete frames");
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
    (count, warnings)
}

impl Reader {
    /// Opens a forge or BFS1 file, validating its header and counting its complete frames.
    /// Only a regular file is opened (a FIFO would block; see [`crate::sys::open_regular`]).
    pub fn open(path: &Path) -> Result<Reader, BfsError> {
        let mut file = crate::sys::open_regular(path).map_err(|e| {
            if e.kind() == io::ErrorKind::InvalidInput {
                BfsError::NotAFile(e.to_string())
            } else {
                BfsError::Io(e)
            }
        })?;
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
        let b = read_forge_header(&mut file, len)?;
        let header_len = b.len() as u64;
        let text = text_spans(&b)?;
        let header = decode_header(&b, &text)?;
        let frame_size = frame_size(header.dim, u64::from(header.agents)).expect("agents capped");
        let (count, warnings) = count_frames(len - header_len, frame_size, header.frame_count);
        let presence = header
            .scene_json
            .contains("present")
            .then(|| crate::scene::Scene::from_stored_json(&header.scene_json).ok())
            .flatten()
            .and_then(|s| crate::scene::timeline::Presence::of(&s));
        Ok(Reader {
            file,
            header,
            count,
            warnings,
            layout: Layout::Forge {
                header_len,
                frame_size,
            },
            presence,
        })
    }

    /// Whether `path` names the very file this reader has open (not one put in its place
    /// since); false where `path` cannot be looked at.
    pub fn same_file(&self, path: &std::path::Path) -> bool {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            match (self.file.metadata(), std::fs::metadata(path)) {
                (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
                _ => false,
            }
        }
        #[cfg(not(unix))]
        {
            std::fs::metadata(path).is_ok()
        }
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
        self.read_frame_checked(k, f, true)
    }

    /// [`Reader::read_frame_into`], its checksum compared only with `verify` (a forge file;
    /// BFS1 has none): the tag and index are checked either way.
    pub fn read_frame_checked(
        &mut self,
        k: u64,
        f: &mut Frame,
        verify: bool,
    ) -> Result<(), BfsError> {
        self.in_range(k)?;
        match &self.layout {
            Layout::Forge {
                header_len,
                frame_size,
            } => {
                // k < count and count * frame_size fits in the file: no overflow.
                let at = header_len + k * frame_size;
                let values = usize::from(self.header.dim) * self.header.agents as usize;
                let prefix = forge_prefix(&mut self.file, at, k)?;
                let crc = le_u32(&prefix, 4);
                let index = le_u64(&prefix, 8);
                let agents = u64::from(self.header.agents);
                check_frame_memory(f, values, k, agents, self.header.dim)?;
                if verify && 8 * values as u64 > VERIFY_BEFORE_READING {
                    // A frame this large is checked (checksum, index) by streaming it once
                    // before its arrays are allocated: a header that lies over a sparse file
                    // costs a read of zeros, not gigabytes of memory.
                    if streamed_crc(&mut self.file, &prefix[8..], 8 * values as u64, k)? != crc {
                        return Err(BfsError::CorruptFrame { frame: k });
                    }
                    same_index(index, k)?;
                    self.file.seek(SeekFrom::Start(at + FRAME_PREFIX))?;
                }
                reserve_frame(f, values, k, agents, self.header.dim)?;
                f.pos.resize(values, 0.0);
                f.vel.resize(values, 0.0);
                read_frame_bytes(&mut self.file, bytemuck::cast_slice_mut(&mut f.pos), k)?;
                read_frame_bytes(&mut self.file, bytemuck::cast_slice_mut(&mut f.vel), k)?;
                let step = le_u64(&prefix, 16);
                if verify && frame_crc(index, step, &f.pos, &f.vel) != crc {
                    return Err(BfsError::CorruptFrame { frame: k });
                }
                same_index(index, k)?;
                f.index = k;
                f.step = step;
                f.absent = self
                    .presence
                    .as_ref()
                    .map(|p| p.absent(step))
                    .unwrap_or_default();
            }
            Layout::Bfs1 { runs, max_n } => {
                let (_, timestep, n) = bfs1_frame_header(&mut self.file, runs, *max_n, k)?;
                let n = n as usize;
                reserve_frame(f, 2 * n, k, n as u64, 2)?;
                f.pos.resize(2 * n, 0.0);
                f.vel.resize(2 * n, 0.0);
                read_frame_bytes(&mut self.file, bytemuck::cast_slice_mut(&mut f.pos), k)?;
                read_frame_bytes(&mut self.file, bytemuck::cast_slice_mut(&mut f.vel), k)?;
                f.index = k;
                f.step = timestep;
                f.absent.clear();
            }
        }
        Ok(())
    }
}

/// Where frame `k`'s arrays lie in the file (for tools that inspect or patch a file in place):
/// positions at `payload_at`, `dim × agents` little-endian `f32`, component-major, then the
/// velocities, same layout. The offset is a multiple of 8 in both formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameSpan {
    pub index: u64,
    pub step: u64,
    pub agents: u64,
    pub payload_at: u64,
}

impl Reader {
    /// Frame `k`'s place in the file, after the checks that need no copy of its arrays: the
    /// tag and index of a forge frame (and, with `verify`, its checksum, streamed through a
    /// small buffer), the header of a BFS1 frame (which has no checksum).
    pub fn locate_frame(&mut self, k: u64, verify: bool) -> Result<FrameSpan, BfsError> {
        self.in_range(k)?;
        match &self.layout {
            Layout::Forge {
                header_len,
                frame_size,
            } => {
                let at = header_len + k * frame_size;
                let prefix = forge_prefix(&mut self.file, at, k)?;
                let index = le_u64(&prefix, 8);
                if verify {
                    let payload = frame_size - FRAME_PREFIX;
                    if streamed_crc(&mut self.file, &prefix[8..], payload, k)? != le_u32(&prefix, 4)
                    {
                        return Err(BfsError::CorruptFrame { frame: k });
                    }
                }
                same_index(index, k)?;
                Ok(FrameSpan {
                    index: k,
                    step: le_u64(&prefix, 16),
                    agents: u64::from(self.header.agents),
                    payload_at: at + FRAME_PREFIX,
                })
            }
            Layout::Bfs1 { runs, max_n } => {
                let (at, timestep, n) = bfs1_frame_header(&mut self.file, runs, *max_n, k)?;
                Ok(FrameSpan {
                    index: k,
                    step: timestep,
                    agents: n,
                    payload_at: at + 8,
                })
            }
        }
    }
}

impl Reader {
    /// Frame `k` is one of the file's.
    fn in_range(&self, k: u64) -> Result<(), BfsError> {
        if k >= self.count {
            return Err(BfsError::FrameOutOfRange {
                frame: k,
                count: self.count,
            });
        }
        Ok(())
    }
}

/// The 24-byte prefix of the forge frame `k` at `at` (tag, checksum, index, step), its tag
/// checked. The file is left at the frame's arrays.
fn forge_prefix(file: &mut File, at: u64, k: u64) -> Result<[u8; FRAME_PREFIX as usize], BfsError> {
    file.seek(SeekFrom::Start(at))?;
    let mut prefix = [0u8; FRAME_PREFIX as usize];
    read_frame_bytes(file, &mut prefix, k)?;
    if prefix[0..4] != FRAME_TAG {
        return Err(BfsError::CorruptFrame { frame: k });
    }
    Ok(prefix)
}

/// A forge frame's stored index is its place in the file.
fn same_index(index: u64, k: u64) -> Result<(), BfsError> {
    if index != k {
        return Err(BfsError::FrameIndex {
            frame: k,
            found: index,
        });
    }
    Ok(())
}

/// The CRC-32 of `seed` followed by the next `len` bytes of `file` (frame `k`'s), streamed
/// through a small buffer.
fn streamed_crc(file: &mut File, seed: &[u8], len: u64, k: u64) -> Result<u32, BfsError> {
    let mut h = crc32fast::Hasher::new();
    h.update(seed);
    let mut buf = vec![0u8; (1 << 20).min(len as usize)];
    let mut left = len;
    while left > 0 {
        let take = left.min(buf.len() as u64) as usize;
        read_frame_bytes(file, &mut buf[..take], k)?;
        h.update(&buf[..take]);
        left -= take as u64;
    }
    Ok(h.finalize())
}

/// BFS1 frame `k` (< the frame count): where it starts, its timestep and agent count, read
/// and checked (at open too; again in case the file changed since). The file is left at its
/// arrays.
fn bfs1_frame_header(
    file: &mut File,
    runs: &[Bfs1Run],
    max_n: u64,
    k: u64,
) -> Result<(u64, u64, u64), BfsError> {
    // k < count: some run starts at or before it.
    let r = &runs[runs.partition_point(|r| r.first <= k) - 1];
    let at = r.at + (k - r.first) * (8 + 16 * r.n);
    file.seek(SeekFrom::Start(at))?;
    let mut fh = [0u8; 8];
    read_frame_bytes(file, &mut fh, k)?;
    let (timestep, n) = (le_i32(&fh, 0), le_i32(&fh, 4));
    if timestep < 0 || n < 0 || n as u64 > max_n || n as u64 != r.n {
        return Err(BfsError::CorruptFrame { frame: k });
    }
    Ok((at, timestep as u64, n as u64))
}

/// Opens `path` as the recording a command reads (render, still, info, export, view). The
/// error names the file; where `path` is a scene (a built-in name, or a scene file) rather
/// than a recording, it says how to make one.
pub fn open_recording(path: &Path) -> anyhow::Result<Reader> {
    Reader::open(path).map_err(|e| {
        let shown = path.display();
        let what = match &e {
            BfsError::Io(io) if io.kind() == io::ErrorKind::NotFound => {
                let name = path.to_string_lossy();
                let name = name.strip_suffix(".json").unwrap_or(&name);
                crate::scene::builtin::find(name).map(|b| {
                    format!(
                        "cannot open {shown}: no such file; `{0}` is a built-in scene, not a \
                         recording: `forge run {0}` simulates and renders it (or `forge simulate \
                         {0}` writes {0}.bfs)",
                        b.name
                    )
                })
            }
            BfsError::BadMagic if looks_like_json(path) => Some(format!(
                "cannot open {shown}: it is a scene file (JSON), not a recording: `forge run \
                 {shown}` simulates and renders it (or `forge simulate {shown}` writes the \
                 recording)"
            )),
            _ => None,
        };
        let context = what.unwrap_or_else(|| format!("cannot open {shown}"));
        anyhow::Error::new(e).context(context)
    })
}

/// Whether the file's first byte that is not white space opens a JSON object.
fn looks_like_json(path: &Path) -> bool {
    let mut head = [0u8; 256];
    let Ok(mut f) = crate::sys::open_regular(path) else {
        return false;
    };
    let n = read_up_to(&mut f, &mut head).unwrap_or(0);
    head[..n]
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'{')
}
