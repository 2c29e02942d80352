//! Writing forge `.bfs` files.

use std::io::{BufWriter, Seek, SeekFrom, Write};

use super::*;

/// Writes a forge `.bfs` file: header first (flushed at once), then frames as they come
/// (buffered; [`Writer::flush`] pushes them out); [`Writer::finalize`] patches the frame count. A writer dropped without `finalize` flushes what it has (best
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
        if !header.species.is_empty() && header.species.len() != header.agents as usize {
            return Err(invalid_input(format!(
                "species ids for {} agents, but the recording has {}",
                header.species.len(),
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
        // The header goes out at once: a file killed before its first frame still opens.
        out.write_all(&bytes)?;
        out.flush()?;
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

pub(super) fn encode_header(h: &Header) -> Vec<u8> {
    let name = h.scene_name.as_bytes();
    let json = h.scene_json.as_bytes();
    // Version 2 only with species: a recording without keeps version 1's bytes.
    let (version, species) = if h.species.is_empty() {
        (VERSION, 0)
    } else {
        (VERSION_SPECIES, 4 + h.species.len())
    };
    let crc_at = pad8(FIXED_HEADER + name.len() + 4 + json.len() + species);
    let header_len = crc_at + 8;
    let mut b = Vec::with_capacity(header_len);
    b.extend_from_slice(&MAGIC);
    b.extend_from_slice(&version.to_le_bytes());
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
    if species > 0 {
        b.extend_from_slice(&(h.species.len() as u32).to_le_bytes());
        b.extend_from_slice(&h.species);
    }
    b.resize(crc_at, 0);
    let crc = header_crc(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    b.resize(header_len, 0);
    b
}
