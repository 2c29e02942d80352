//! The glTF writer (`.glb`, binary glTF 2.0): the recording as one point cloud whose frames are
//! morph targets, for tools that import glTF but not USD (the Blender of Debian 12 and Ubuntu,
//! built without USD, imports it with its bundled glTF add-on).
//!
//! - One node `Agents` with one mesh of one primitive in `POINTS` mode: `POSITION` is the first
//!   exported frame; every later frame is a morph target (its displacement from the first), and
//!   one animation steps the mesh's weights so that at time `K / fps` target K alone is on:
//!   time K / fps shows frame K (fps: the scene's render rate, 30 without one; Blender shows
//!   frame K at frame K when its scene runs at that rate as it imports). The weights are a
//!   sparse accessor: one non-zero per frame, not frames².
//! - glTF is Y-up: forge's (x, y, z) is written (x, z, −y), which importers turn back to Z-up
//!   (Blender's gives (x, y, z) again). A 2D run lies in the ground plane z = 0.
//! - Two passes over the frames: the bounds every `POSITION` accessor must state, then the data.
//!   One frame is held at a time, and the first.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

use anyhow::{bail, Result};
use serde_json::json;

use super::Selection;
use crate::bfs::{Frame, Reader};
use crate::scene::Scene;

/// Passes over the frames: bounds, data.
pub(super) const PASSES: u64 = 2;

/// Most frames in one file: each is a morph target, which importers hold as a shape key.
pub const MAX_FRAMES: u64 = 10_000;

/// Agent i of `frame` (n agents, `dim` dimensions), glTF's Y-up.
fn y_up(frame: &Frame, dim: usize, n: usize, i: usize) -> [f32; 3] {
    let z = if dim == 3 { frame.pos[2 * n + i] } else { 0.0 };
    [frame.pos[i], z, -frame.pos[n + i]]
}

/// Bounds of a set of points.
#[derive(Clone, Copy)]
struct Bounds {
    min: [f32; 3],
    max: [f32; 3],
}

impl Bounds {
    fn of(points: impl Iterator<Item = [f32; 3]>) -> Bounds {
        let mut b = Bounds {
            min: [f32::INFINITY; 3],
            max: [f32::NEG_INFINITY; 3],
        };
        for p in points {
            for ((lo, hi), v) in b.min.iter_mut().zip(&mut b.max).zip(p) {
                *lo = lo.min(v);
                *hi = hi.max(v);
            }
        }
        b
    }
}

/// Writes the selected frames of `r` to `file` as binary glTF; the agent count and the file.
pub(super) fn write(
    r: &mut Reader,
    input: &Path,
    sel: &Selection,
    file: File,
    bar: &indicatif::ProgressBar,
) -> Result<(u64, File)> {
    let h = r.header().clone();
    let dim = usize::from(h.dim);
    let frames = sel.len();
    if frames > MAX_FRAMES {
        bail!(
            "--frames/--every: {frames} frames, a glTF export holds at most {MAX_FRAMES} (each \
             is a morph target); take fewer with --every or --frames"
        );
    }
    let fps = Scene::from_stored_json(&h.scene_json)
        .ok()
        .and_then(|s| s.render.and_then(|l| l.fps))
        .unwrap_or(crate::look::resolve::defaults::FPS);
    let (base, bounds) = first_pass(r, input, sel, bar)?;
    let n = base.len();
    if n == 0 {
        bail!("the exported frames hold no agents: a glTF point cloud needs one at least");
    }
    let (doc, bin_len) = document(&h, input, sel, &bounds, n, fps);
    let mut json = serde_json::to_vec(&doc)?;
    while json.len() % 4 != 0 {
        json.push(b' ');
    }
    let bin_padded = bin_len.div_ceil(4) * 4;
    let total = 12 + 8 + json.len() as u64 + 8 + bin_padded;
    if total > u32::MAX as u64 {
        bail!(
            "{n} agents x {frames} frames make a {total}-byte glTF, over the format's 4 GiB; \
             take fewer frames with --every or --frames"
        );
    }
    let mut w = BufWriter::with_capacity(1 << 20, file);
    w.write_all(&0x4654_6C67u32.to_le_bytes())?; // "glTF"
    w.write_all(&2u32.to_le_bytes())?;
    w.write_all(&(total as u32).to_le_bytes())?;
    w.write_all(&(json.len() as u32).to_le_bytes())?;
    w.write_all(&0x4E4F_534Au32.to_le_bytes())?; // "JSON"
    w.write_all(&json)?;
    w.write_all(&(bin_padded as u32).to_le_bytes())?;
    w.write_all(&0x004E_4942u32.to_le_bytes())?; // "BIN\0"
                                                 // Pass 2: the first frame, each later one's displacement, then the animation's arrays.
    let mut first = true;
    super::each_frame(r, input, sel, bar, |_, frame, n| {
        for (i, b) in base.iter().enumerate() {
            let p = y_up(frame, dim, n, i);
            let v = if first {
                p
            } else {
                [p[0] - b[0], p[1] - b[1], p[2] - b[2]]
            };
            for x in v {
                w.write_all(&x.to_le_bytes())?;
            }
        }
        first = false;
        Ok(())
    })?;
    animation(&mut w, sel, fps)?;
    for _ in bin_len..bin_padded {
        w.write_all(&[0])?;
    }
    w.flush()?;
    let mut file = w.into_inner().map_err(|e| e.into_error())?;
    file.seek(SeekFrom::End(0))?;
    Ok((n as u64, file))
}

/// The animation's arrays: each frame's time, then the sparse weights' indices and values.
fn animation(w: &mut impl Write, sel: &Selection, fps: u32) -> Result<()> {
    let frames = sel.len();
    for k in sel.frames() {
        w.write_all(&(k as f32 / fps as f32).to_le_bytes())?;
    }
    let targets = frames.saturating_sub(1);
    for j in 1..frames {
        // Frame j (in export order) turns target j − 1 on: output index j·targets + j − 1.
        w.write_all(&((j * targets + j - 1) as u32).to_le_bytes())?;
    }
    for _ in 1..frames {
        w.write_all(&1.0f32.to_le_bytes())?;
    }
    Ok(())
}

/// Pass 1: the first frame (Y-up), and each frame's bounds (of its displacement, after the
/// first).
fn first_pass(
    r: &mut Reader,
    input: &Path,
    sel: &Selection,
    bar: &indicatif::ProgressBar,
) -> Result<(Vec<[f32; 3]>, Vec<Bounds>)> {
    let dim = usize::from(r.header().dim);
    let mut base: Vec<[f32; 3]> = Vec::new();
    let mut bounds = Vec::with_capacity(sel.len() as usize);
    super::each_frame(r, input, sel, bar, |k, frame, n| {
        super::every_agent_there(frame, k, "glTF")?;
        if base.is_empty() {
            base = (0..n).map(|i| y_up(frame, dim, n, i)).collect();
        } else if n != base.len() {
            bail!(
                "frame {k} has {n} agents, the first exported {}: glTF's morph targets need \
                 one count",
                base.len()
            );
        }
        let points = (0..n).map(|i| y_up(frame, dim, n, i));
        let b = if bounds.is_empty() {
            Bounds::of(points)
        } else {
            Bounds::of(
                points
                    .zip(&base)
                    .map(|(p, b)| [p[0] - b[0], p[1] - b[1], p[2] - b[2]]),
            )
        };
        if !(b.min.iter().chain(&b.max)).all(|v| v.is_finite()) && n > 0 {
            bail!("frame {k} holds a position that is not a finite number");
        }
        bounds.push(b);
        Ok(())
    })?;
    Ok((base, bounds))
}

/// The glTF JSON for `bounds.len()` frames of `n` agents, and the binary chunk's length.
fn document(
    h: &crate::bfs::Header,
    input: &Path,
    sel: &Selection,
    bounds: &[Bounds],
    n: usize,
    fps: u32,
) -> (serde_json::Value, u64) {
    let frames = bounds.len();
    let mut views = Vec::new();
    let mut accessors = Vec::new();
    let mut offset = 0u64;
    let mut view = |bytes: u64| {
        views.push(json!({"buffer": 0, "byteOffset": offset, "byteLength": bytes}));
        offset += bytes;
        views.len() - 1
    };
    for b in bounds {
        let v = view(n as u64 * 12);
        accessors.push(json!({
            "bufferView": v, "componentType": 5126, "count": n, "type": "VEC3",
            "min": b.min, "max": b.max,
        }));
    }
    let targets: Vec<_> = (1..frames).map(|k| json!({"POSITION": k})).collect();
    let times: Vec<f32> = sel.frames().map(|k| k as f32 / fps as f32).collect();
    let t = view(frames as u64 * 4);
    accessors.push(json!({
        "bufferView": t, "componentType": 5126, "count": frames, "type": "SCALAR",
        "min": [times.first().copied().unwrap_or(0.0)], "max": [times.last().copied().unwrap_or(0.0)],
    }));
    let k = frames - 1;
    let weights = accessors.len();
    if k > 0 {
        let (idx, val) = (view(k as u64 * 4), view(k as u64 * 4));
        accessors.push(json!({
            "componentType": 5126, "count": frames * k, "type": "SCALAR",
            "sparse": {"count": k, "indices": {"bufferView": idx, "componentType": 5125},
                       "values": {"bufferView": val}},
        }));
    }
    let mut mesh = json!({
        "name": "Agents",
        "primitives": [{"attributes": {"POSITION": 0}, "mode": 0, "targets": targets}],
    });
    let mut doc = json!({
        "asset": {"version": "2.0", "generator": format!("forge {}", env!("CARGO_PKG_VERSION"))},
        "extras": {"forge": {"recording": input.display().to_string(), "scene": h.scene_name,
                   "dim": h.dim, "agents": n, "fps": fps}},
        "scene": 0,
        "scenes": [{"name": h.scene_name, "nodes": [0]}],
        "nodes": [{"name": "Agents", "mesh": 0}],
        "buffers": [{"byteLength": offset}],
    });
    if k > 0 {
        mesh["weights"] = json!(vec![0.0; k]);
        doc["animations"] = json!([{
            "name": "frames",
            "samplers": [{"input": weights - 1, "output": weights, "interpolation": "STEP"}],
            "channels": [{"sampler": 0, "target": {"node": 0, "path": "weights"}}],
        }]);
    }
    doc["meshes"] = json!([mesh]);
    doc["bufferViews"] = json!(views);
    doc["accessors"] = json!(accessors);
    (doc, offset)
}
