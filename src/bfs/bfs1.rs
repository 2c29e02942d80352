//! BoidForge's `BFS1` files: read (world size inferred) and written (for tests and interop).

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};

use super::read::{
    check_positive, corrupt, le_f32, le_i32, le_u16, le_u32, read_up_to, Bfs1Run, Layout, Reader,
};
use super::*;

/// What a BFS1 header holds, checked.
struct Bfs1Header {
    version: u16,
    max_boids: i32,
    /// `max_boids`, capped at `MAX_AGENTS`: the most agents a frame may have.
    max_n: u64,
    dt: f32,
    seed: u64,
    /// `None`: not finalized (streaming).
    frame_count: Option<u64>,
}

/// The complete frames of a BFS1 file, found by walking their headers.
struct Bfs1Index {
    runs: Vec<Bfs1Run>,
    count: u64,
    warnings: Vec<String>,
}

impl Reader {
    pub(super) fn open_bfs1(mut file: File, len: u64) -> Result<Reader, BfsError> {
        let h = read_bfs1_header(&mut file, len)?;
        let Bfs1Index {
            runs,
            count,
            warnings,
        } = index_bfs1_frames(&file, len, &h)?;
        let mut reader = Reader {
            file,
            header: Header {
                version: h.version,
                dim: 2,
                model: Model::Boids,
                boundary: Boundary::Open,
                agents: 0,
                dt: h.dt,
                seed: h.seed,
                record_every: 1,
                world_size: [BOIDFORGE_WORLD[0], BOIDFORGE_WORLD[1], 0.0],
                scene_name: "bfs1".into(),
                scene_json: "{}".into(),
                frame_count: h.frame_count,
                source: SourceFormat::Bfs1,
                world_inferred: true,
                species: Vec::new(),
            },
            count,
            warnings,
            layout: Layout::Bfs1 {
                runs,
                max_n: h.max_n,
            },
            presence: None,
        };
        if count == 0 {
            reader.warnings.push(
                "BFS1 stores no world size and the file has no frames: assumed 1920 x 1080".into(),
            );
            return Ok(reader);
        }
        reader.infer_bfs1_world()?;
        Ok(reader)
    }

    /// BFS1 stores no world size: BoidForge's own when frame 0 lies inside it, else the
    /// extent of frame 0's positions (agents from frame 0 too).
    fn infer_bfs1_world(&mut self) -> Result<(), BfsError> {
        let first = self.read_frame(0)?;
        let n = first.agents(2);
        self.header.agents = n as u32;
        let (xs, ys) = first.pos.split_at(n);
        let finite = |v: &[f32]| v.iter().any(|p| p.is_finite());
        if !finite(xs) || !finite(ys) {
            // Nothing to infer from (all NaN, say): the frame itself is refused by whoever
            // draws it.
            self.warnings.push(format!(
                "BFS1 stores no world size and frame 0 has no finite position to infer it \
                 from: assumed {} x {}",
                BOIDFORGE_WORLD[0], BOIDFORGE_WORLD[1]
            ));
            return Ok(());
        }
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
        self.header.world_size = [world[0], world[1], 0.0];
        self.warnings.push(format!(
            "BFS1 stores no world size: inferred {} x {} from positions",
            world[0], world[1]
        ));
        Ok(())
    }
}

/// Reads and checks the 32-byte header (the version first, even of a file cut inside it).
fn read_bfs1_header(file: &mut File, len: u64) -> Result<Bfs1Header, BfsError> {
    let mut b = [0u8; BFS1_HEADER_LEN as usize];
    file.seek(SeekFrom::Start(0))?;
    let got = read_up_to(file, &mut b)?;
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
    let dt = le_f32(&b, 16);
    check_positive("BFS1 dt", dt)?;
    let seed = u64::from(le_u32(&b, 20));
    let frame_count = match le_i32(&b, 24) {
        -1 => None,
        c if c >= 0 => Some(c as u64),
        c => return Err(corrupt(format!("BFS1 frame_count is {c}"))),
    };
    Ok(Bfs1Header {
        version,
        max_boids,
        max_n: (max_boids as u64).min(MAX_AGENTS),
        dt,
        seed,
        frame_count,
    })
}

/// Walks the frame headers, skipping payloads, to index every complete frame: as runs of
/// frames with the same n (one run for a constant flock, whatever the count). The walk stops
/// at the first cut, corrupt or out-of-order frame, with a warning saying so.
fn index_bfs1_frames(file: &File, len: u64, h: &Bfs1Header) -> Result<Bfs1Index, BfsError> {
    let (max_boids, max_n) = (h.max_boids, h.max_n);
    let mut warnings = Vec::new();
    let mut runs: Vec<Bfs1Run> = Vec::new();
    let mut count = 0u64;
    let mut last_timestep = -1i64;
    let mut at = BFS1_HEADER_LEN;
    let mut rd = BufReader::with_capacity(8 << 10, file);
    rd.seek(SeekFrom::Start(at))?;
    let limit = h.frame_count.unwrap_or(u64::MAX);
    while count < limit {
        let k = count;
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
        if i64::from(timestep) <= last_timestep {
            warnings.push(format!(
                "frame {k} is out of order (timestep {timestep} after {last_timestep}; \
                 zeros where frames should be?): {k} frames readable"
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
        let n = n as u64;
        if runs.last().is_none_or(|r| r.n != n) {
            runs.try_reserve(1).map_err(|_| {
                BfsError::TooLarge(format!(
                    "the index of {} runs of frames could not be allocated",
                    runs.len() + 1
                ))
            })?;
            runs.push(Bfs1Run { first: k, at, n });
        }
        count += 1;
        last_timestep = i64::from(timestep);
        at += 8 + payload;
        rd.seek_relative(payload as i64)?;
    }
    match h.frame_count {
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
    Ok(Bfs1Index {
        runs,
        count,
        warnings,
    })
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
