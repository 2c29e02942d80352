//! The glTF writer (`.glb`, binary glTF 2.0): the recording as a point cloud whose frames are
//! morph targets, for tools that import glTF but not USD (the Blender of Debian 12 and Ubuntu,
//! built without USD, imports it with its bundled glTF add-on).
//!
//! - One node `Agents` with one mesh of one primitive in `POINTS` mode: `POSITION` is the first
//!   exported frame; every later frame is a morph target (its displacement from the first), and
//!   one animation steps the mesh's weights so that at time `K / fps` target K alone is on:
//!   time K / fps shows frame K (fps: the scene's render rate, 30 without one; Blender shows
//!   frame K at frame K when its scene runs at that rate as it imports). The weights are a
//!   sparse accessor: one non-zero per frame, not frames².
//! - With two species or more, `Agents` holds a child node per species instead, named as the
//!   scene names it, each its own point cloud animated as above, with the species' colour as
//!   its material: an object per species in Blender, to put a different bird on each. Where
//!   the recording's timeline takes a species out of the world in an exported frame, its node
//!   is scaled to nothing (a `STEP` scale channel) in those frames.
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
use crate::render::srgb_to_linear as linear;
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

/// The points of one node: agents `lo..hi` of every frame, and their colour (linear RGB).
struct Group {
    name: String,
    lo: usize,
    hi: usize,
    colour: Option<[f32; 3]>,
}

/// All `n` agents as one group.
fn all(n: usize) -> Vec<Group> {
    vec![Group {
        name: "Agents".into(),
        lo: 0,
        hi: n,
        colour: None,
    }]
}

/// A group per species where the recording's scene has two or more (the ids each holds, as
/// the solver and the timeline give them: [`crate::scene::species::id_ranges`]), named and
/// coloured as the scene names and colours it; else one of every agent (its count set by the
/// first frame).
fn species_groups(h: &crate::bfs::Header, scene: Option<&Scene>) -> Vec<Group> {
    let species = scene.map_or(&[][..], |sc| &sc.species[..]);
    if species.len() < 2 {
        return all(0);
    }
    let colours = crate::scene::species::colours(species);
    let ranges = crate::scene::species::id_ranges(species, h.agents);
    let groups: Vec<Group> = (species.iter().zip(colours).zip(ranges))
        .filter(|(_, (lo, hi))| lo < hi)
        .map(|((sp, c), (lo, hi))| Group {
            name: sp.name.clone(),
            lo: lo as usize,
            hi: hi as usize,
            // Materials are linear; the species colours sRGB.
            colour: Some(c.map(|v| linear(f32::from(v) / 255.0))),
        })
        .collect();
    if groups.len() < 2 {
        return all(0);
    }
    groups
}

/// What the first pass finds: the first frame (Y-up), and for each frame and group the bounds
/// of its points (of their displacement, after the first frame) and whether it is there.
struct Survey {
    base: Vec<[f32; 3]>,
    bounds: Vec<Vec<Bounds>>,
    shown: Vec<Vec<bool>>,
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
    let scene = Scene::from_stored_json(&h.scene_json).ok();
    let fps = scene
        .as_ref()
        .and_then(|s| s.render.as_ref())
        .and_then(|l| l.fps)
        .unwrap_or(crate::video::resolve::defaults::FPS);
    let mut groups = species_groups(&h, scene.as_ref());
    let survey = first_pass(r, input, sel, &mut groups, bar)?;
    let n = survey.base.len();
    if n == 0 {
        bail!("the exported frames hold no agents: a glTF point cloud needs one at least");
    }
    // Scale channels only where a species is out of the world in some frame.
    let varying = survey.shown.iter().flatten().any(|&s| !s);
    let shown = varying.then_some(&survey.shown[..]);
    let (doc, bin_len) = document(&h, input, sel, &groups, &survey.bounds, shown, fps);
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

    // Pass 2: the first frame, each later one's displacement (group after group: agents in
    // id order), then the animation's arrays.
    let base = &survey.base;
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
    animation(&mut w, sel, fps, shown)?;
    for _ in bin_len..bin_padded {
        w.write_all(&[0])?;
    }
    w.flush()?;
    let mut file = w.into_inner().map_err(|e| e.into_error())?;
    file.seek(SeekFrom::End(0))?;
    Ok((n as u64, file))
}

/// The animation's arrays: each frame's time, the sparse weights' indices and values, then
/// with `shown` each group's scale in every frame (1 where it is there, 0 where it is not).
fn animation(
    w: &mut impl Write,
    sel: &Selection,
    fps: u32,
    shown: Option<&[Vec<bool>]>,
) -> Result<()> {
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
    let Some(shown) = shown else {
        return Ok(());
    };
    for g in 0..shown.first().map_or(0, Vec::len) {
        for frame in shown {
            let s = if frame[g] { 1.0f32 } else { 0.0 };
            for _ in 0..3 {
                w.write_all(&s.to_le_bytes())?;
            }
        }
    }
    Ok(())
}

/// Pass 1: the first frame (Y-up), and each frame's bounds (of its displacement, after the
/// first) and presence, group by group.
fn first_pass(
    r: &mut Reader,
    input: &Path,
    sel: &Selection,
    groups: &mut [Group],
    bar: &indicatif::ProgressBar,
) -> Result<Survey> {
    let dim = usize::from(r.header().dim);
    let mut base: Vec<[f32; 3]> = Vec::new();
    let mut bounds = Vec::with_capacity(sel.len() as usize);
    let mut shown = Vec::with_capacity(sel.len() as usize);
    super::each_frame(r, input, sel, bar, |k, frame, n| {
        if base.is_empty() {
            base = (0..n).map(|i| y_up(frame, dim, n, i)).collect();
            match groups {
                [one] => one.hi = n,
                [.., last] if last.hi != n => {
                    bail!(
                        "frame {k} has {n} agents, the header names the species of {}",
                        last.hi
                    )
                }
                _ => {}
            }
        } else if n != base.len() {
            bail!(
                "frame {k} has {n} agents, the first exported {}: glTF's morph targets need \
                 one count",
                base.len()
            );
        }
        let first = bounds.is_empty();
        let of = |g: &Group| {
            let points = (g.lo..g.hi).map(|i| y_up(frame, dim, n, i));
            if first {
                Bounds::of(points)
            } else {
                Bounds::of(
                    points
                        .zip(&base[g.lo..g.hi])
                        .map(|(p, b)| [p[0] - b[0], p[1] - b[1], p[2] - b[2]]),
                )
            }
        };
        let b: Vec<Bounds> = groups.iter().map(of).collect();
        let finite = b
            .iter()
            .all(|b| b.min.iter().chain(&b.max).all(|v| v.is_finite()));
        if !finite && n > 0 {
            bail!("frame {k} holds a position that is not a finite number");
        }
        bounds.push(b);
        shown.push(groups.iter().map(|g| !frame.is_absent(g.lo)).collect());
        Ok(())
    })?;
    Ok(Survey {
        base,
        bounds,
        shown,
    })
}

/// The glTF JSON for `bounds.len()` frames of `groups` (a mesh and node each; `bounds[f][g]`),
/// and the binary chunk's length. Two groups or more (species) are the children of one
/// `Agents` node, each with its colour as its material; with `shown`, each is scaled to nothing
/// in the frames where its agents are out of the world.
fn document(
    h: &crate::bfs::Header,
    input: &Path,
    sel: &Selection,
    groups: &[Group],
    bounds: &[Vec<Bounds>],
    shown: Option<&[Vec<bool>]>,
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
    // Frame f's points of group g: accessor f·groups + g.
    for frame in bounds {
        for (g, b) in groups.iter().zip(frame) {
            let count = g.hi - g.lo;
            let v = view(count as u64 * 12);
            accessors.push(json!({
                "bufferView": v, "componentType": 5126, "count": count, "type": "VEC3",
                "min": b.min, "max": b.max,
            }));
        }
    }
    let times: Vec<f32> = sel.frames().map(|k| k as f32 / fps as f32).collect();
    let t = view(frames as u64 * 4);
    let time = accessors.len();
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
    let scales: Vec<usize> = match shown {
        None => Vec::new(),
        Some(_) => (0..groups.len())
            .map(|_| {
                let v = view(frames as u64 * 12);
                accessors.push(json!({
                    "bufferView": v, "componentType": 5126, "count": frames, "type": "VEC3",
                }));
                accessors.len() - 1
            })
            .collect(),
    };
    let split = groups.len() > 1;
    let (mut meshes, nodes, animation) =
        nodes_and_animation(groups, frames, time, weights, &scales, split);
    // Each species' colour as its mesh's material, where the scene gives them.
    let materials = split
        .then(|| groups.iter().map(material).collect::<Option<Vec<_>>>())
        .flatten();
    if materials.is_some() {
        for (g, mesh) in meshes.iter_mut().enumerate() {
            mesh["primitives"][0]["material"] = json!(g);
        }
    }
    let mut doc = json!({
        "asset": {"version": "2.0", "generator": format!("forge {}", env!("CARGO_PKG_VERSION"))},
        "extras": {"forge": {"recording": input.display().to_string(), "scene": h.scene_name,
                   "dim": h.dim, "agents": groups.last().map_or(0, |g| g.hi), "fps": fps}},
        "scene": 0,
        "scenes": [{"name": h.scene_name, "nodes": [0]}],
        "nodes": nodes,
        "buffers": [{"byteLength": offset}],
    });
    if let Some(a) = animation {
        doc["animations"] = json!([a]);
    }
    if let Some(m) = materials {
        doc["materials"] = json!(m);
    }
    doc["meshes"] = json!(meshes);
    doc["bufferViews"] = json!(views);
    doc["accessors"] = json!(accessors);
    (doc, offset)
}

/// A group's colour as a glTF material: matte, of that base colour.
fn material(g: &Group) -> Option<serde_json::Value> {
    let [r, gr, b] = g.colour?;
    Some(json!({"name": g.name, "pbrMetallicRoughness": {
        "baseColorFactor": [r, gr, b, 1.0], "metallicFactor": 0.0, "roughnessFactor": 1.0}}))
}

/// The meshes (one per group, frame f's points of group g its target f − 1), the nodes (one
/// `Agents` node, or with `split` a child of it per group) and the animation: each mesh's
/// weights stepped through the frames (accessors `time` and `weights`) and, where `scales`
/// gives a group its accessor, its node's scale.
fn nodes_and_animation(
    groups: &[Group],
    frames: usize,
    time: usize,
    weights: usize,
    scales: &[usize],
    split: bool,
) -> (
    Vec<serde_json::Value>,
    Vec<serde_json::Value>,
    Option<serde_json::Value>,
) {
    let k = frames - 1;
    let meshes: Vec<_> = groups
        .iter()
        .enumerate()
        .map(|(g, group)| {
            let targets: Vec<_> = (1..frames)
                .map(|f| json!({"POSITION": f * groups.len() + g}))
                .collect();
            let mut mesh = json!({
                "name": group.name,
                "primitives": [{"attributes": {"POSITION": g}, "mode": 0, "targets": targets}],
            });
            if k > 0 {
                mesh["weights"] = json!(vec![0.0; k]);
            }
            mesh
        })
        .collect();
    let nodes = if split {
        let children: Vec<usize> = (1..=groups.len()).collect();
        let each = groups.iter().enumerate();
        std::iter::once(json!({"name": "Agents", "children": children}))
            .chain(each.map(|(g, group)| json!({"name": group.name, "mesh": g})))
            .collect()
    } else {
        vec![json!({"name": "Agents", "mesh": 0})]
    };
    let mut samplers = Vec::new();
    let mut channels = Vec::new();
    for g in 0..groups.len() {
        let node = if split { g + 1 } else { g };
        let mut animate = |output: usize, path: &str| {
            samplers.push(json!({"input": time, "output": output, "interpolation": "STEP"}));
            channels.push(
                json!({"sampler": samplers.len() - 1, "target": {"node": node, "path": path}}),
            );
        };
        if k > 0 {
            animate(weights, "weights");
        }
        if let Some(&s) = scales.get(g) {
            animate(s, "scale");
        }
    }
    let animation = (!channels.is_empty())
        .then(|| json!({"name": "frames", "samplers": samplers, "channels": channels}));
    (meshes, nodes, animation)
}
