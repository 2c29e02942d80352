//! The USD writer (`.usda`, or `.usd` holding the same text), for Houdini, Blender, usdview and
//! every tool built on OpenUSD: the recording as one `Points` prim with time-sampled
//! attributes, under an `Xform` that is the stage's default prim,
//!
//! ```text
//! #usda 1.0
//! ( defaultPrim = "Flock"  metersPerUnit = 1  upAxis = "Z"
//!   startTimeCode = A  endTimeCode = B-1  timeCodesPerSecond = fps  framesPerSecond = fps )
//! def Xform "Flock" {
//!     def Points "Agents" {
//!         point3f[] points.timeSamples = { K: [(x, y, z), …], … }
//!         vector3f[] velocities.timeSamples = { … }     (world units per second)
//!         float3[] extent.timeSamples = { … }
//!         int64[] ids = [0, 1, …]
//!         float[] widths = [w] (interpolation = "constant")
//!         int[] primvars:species, color3f[] primvars:displayColor (interpolation = "vertex")
//!     }
//!     def Cube "World" { purpose = "guide", the world box }
//! }
//! ```
//!
//! - The time code of a sample is the recording's frame number, so the sample at time code K
//!   is frame K; `timeCodesPerSecond` is the scene's render frame rate (30 when it sets none).
//! - 2D runs lie in the plane z = 0 (`upAxis` Z: the plane is the ground, as `forge render`'s
//!   top view sees it); 3D as recorded. Floats are the shortest decimals that read back to the
//!   same float32.
//! - `velocities` are in world units per second of the stage's time, as USD's motion blur
//!   reads them: an agent moves velocity × dt a step and `record_every` steps a time code, so
//!   the recorded velocity times dt × record_every × timeCodesPerSecond.
//! - `ids` are the agents' indices, the same in every frame, so an instancer keeps each bird.
//! - Where the recording has species: `primvars:species` (the species index) and
//!   `primvars:displayColor` (each species' colour, as `forge render --color species` draws
//!   it); otherwise no colour (the tool's default).
//! - Where the recording's timeline takes a species out of the world in an exported frame,
//!   each time sample holds the agents there: `points`, `velocities` and `extent` of those,
//!   and `ids`, `primvars:species` and `primvars:displayColor` time-sampled too, so that an
//!   agent keeps its id as the point count changes (USD's way for points that come and go).
//!
//! The text is written attribute by attribute, each a pass over the frames, so only one frame
//! is held at a time, whatever the recording's size.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{bail, Result};

use super::colour::Colours;
use super::Selection;
use crate::bfs::{is_in, present_of, Frame, Header, Reader};
use crate::render::srgb_to_linear as linear;
use crate::scene::Scene;

/// Passes over the frames: points, velocities, extents.
pub(super) const PASSES: u64 = 3;

/// The header's world box, three sides (a 2D run's depth is 0).
fn world(h: &Header) -> [f32; 3] {
    let dim = usize::from(h.dim);
    [0, 1, 2].map(|k| if k < dim { h.world_size[k] } else { 0.0 })
}

/// Writes the selected frames of `r` to `file` as USD text; the first frame's agent count and
/// the file.
pub(super) fn write(
    r: &mut Reader,
    input: &Path,
    sel: &Selection,
    colours: Option<&Colours>,
    file: File,
    bar: &indicatif::ProgressBar,
) -> Result<(u64, File)> {
    let h = r.header().clone();
    let dim = usize::from(h.dim);
    let scene = Scene::from_stored_json(&h.scene_json).ok();
    let fps = scene
        .as_ref()
        .and_then(|s| s.render.as_ref())
        .and_then(|l| l.fps)
        .unwrap_or(crate::video::resolve::defaults::FPS);
    let mut w = BufWriter::with_capacity(1 << 20, file);
    layer_metadata(&mut w, &h, input, sel, fps)?;
    writeln!(w, "def Xform \"Flock\" (\n    kind = \"component\"\n)\n{{")?;
    writeln!(w, "    def Points \"Agents\"\n    {{")?;
    // World units per time code, per unit of recorded velocity, times time codes a second.
    let per_second = h.dt * h.record_every.max(1) as f32 * fps as f32;
    let mut first = None;
    // Each exported frame's agent count and absent agents (Frame::absent), from the first pass.
    let mut absent: Vec<Sample> = Vec::with_capacity(sel.len() as usize);
    let mut scratch = Frame::empty();
    // Points, velocities, then the extents: of the agents there.
    for pass in 0..PASSES {
        let (kind, name) = match pass {
            0 => ("point3f[]", "points"),
            1 => ("vector3f[]", "velocities"),
            _ => ("float3[]", "extent"),
        };
        writeln!(w, "        {kind} {name}.timeSamples = {{")?;
        let n0 = super::each_frame(r, input, sel, bar, |k, frame, _| {
            if pass == 0 {
                absent.push((k, frame.agents(dim), frame.absent.clone()));
            }
            let there = frame.present_in(dim, &mut scratch);
            let m = there.agents(dim);
            write!(w, "            {k}: [")?;
            match pass {
                0 => vectors(&mut w, &there.pos, dim, m, 1.0)?,
                1 => vectors(&mut w, &there.vel, dim, m, per_second)?,
                _ => extent(&mut w, there, dim, m)?,
            }
            writeln!(w, "],")?;
            Ok(())
        })?;
        writeln!(w, "        }}")?;
        first.get_or_insert(n0);
    }
    let n = first.unwrap_or(0) as usize;
    // Where a species comes and goes, or the agent count changes (a BFS1 recording may), the
    // points of a frame are those there: ids, species and colours then vary with time as the
    // points do.
    let varying = absent
        .iter()
        .any(|(_, m, a)| !a.is_empty() || *m != n)
        .then_some(&absent[..]);
    if let Some(c) = colours {
        // Each agent's colour in every frame, as `forge render` draws it.
        let species = h.species.clone();
        let attr = "color3f[] primvars:displayColor";
        writeln!(
            w,
            "        {attr} (\n            interpolation = \"vertex\"\n        )"
        )?;
        writeln!(w, "        {attr}.timeSamples = {{")?;
        super::each_frame(r, input, sel, bar, |k, frame, _| {
            let there = frame.present_in(dim, &mut scratch);
            let m = there.agents(dim);
            let kept: Vec<u8>;
            let kinds = if frame.absent.is_empty() {
                &species[..]
            } else {
                kept = present_of(&frame.absent, &species).collect();
                &kept[..]
            };
            write!(w, "            {k}: [")?;
            colour_list(&mut w, c.of_frame(there, dim, m, kinds).into_iter())?;
            writeln!(w, "],")?;
            Ok(())
        })?;
        writeln!(w, "        }}")?;
    }
    constants(&mut w, &h, scene.as_ref(), n, colours.is_none(), varying)?;
    writeln!(w, "    }}\n")?;
    world_guide(&mut w, &h)?;
    writeln!(w, "}}")?;
    w.flush()?;
    Ok((n as u64, w.into_inner().map_err(|e| e.into_error())?))
}

/// The layer's header: its default prim, units, axis and time codes.
fn layer_metadata(
    w: &mut impl Write,
    h: &Header,
    input: &Path,
    sel: &Selection,
    fps: u32,
) -> Result<()> {
    let last = sel.frames().last().unwrap_or(sel.range.start);
    writeln!(w, "#usda 1.0")?;
    writeln!(w, "(")?;
    writeln!(w, "    defaultPrim = \"Flock\"")?;
    writeln!(
        w,
        "    doc = \"forge export of {} (scene {}, {}D, {} agents)\"",
        escape(&input.display().to_string()),
        escape(&h.scene_name),
        h.dim,
        h.agents
    )?;
    writeln!(w, "    metersPerUnit = 1")?;
    writeln!(w, "    upAxis = \"Z\"")?;
    writeln!(w, "    startTimeCode = {}", sel.range.start)?;
    writeln!(w, "    endTimeCode = {last}")?;
    writeln!(w, "    timeCodesPerSecond = {fps}")?;
    writeln!(w, "    framesPerSecond = {fps}")?;
    writeln!(w, ")\n")?;
    Ok(())
}

/// `(x, y, z), …` of the `n` agents of a component-major array, scaled by `scale`.
fn vectors(w: &mut impl Write, a: &[f32], dim: usize, n: usize, scale: f32) -> Result<()> {
    for i in 0..n {
        let c = |k: usize| if k < dim { a[k * n + i] * scale } else { 0.0 };
        if i > 0 {
            w.write_all(b", ")?;
        }
        write!(w, "({}, {}, {})", c(0), c(1), c(2))?;
    }
    Ok(())
}

/// The frame's bounding box, `(min), (max)` (zeros for a frame with no agent there).
fn extent(w: &mut impl Write, f: &Frame, dim: usize, n: usize) -> Result<()> {
    let (mut lo, mut hi) = ([0f32; 3], [0f32; 3]);
    for k in (0..dim).filter(|_| n > 0) {
        let xs = &f.pos[k * n..(k + 1) * n];
        lo[k] = xs.iter().copied().fold(f32::INFINITY, f32::min);
        hi[k] = xs.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    }
    write!(
        w,
        "({}, {}, {}), ({}, {}, {})",
        lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]
    )?;
    Ok(())
}

/// An exported frame's number, agent count and absent agents ([`Frame::absent`]).
type Sample = (u64, usize, Vec<(u32, u32)>);

/// Each exported frame's [`Sample`].
type Absent = [Sample];

/// What the points carry besides their motion: ids, widths, species and their colours. They do
/// not change over time, unless a species comes and goes in the exported frames (`varying`):
/// ids, species and colours then have a sample per frame, of the agents there, as the points.
fn constants(
    w: &mut impl Write,
    h: &Header,
    scene: Option<&Scene>,
    n: usize,
    species_colours: bool,
    varying: Option<&Absent>,
) -> Result<()> {
    per_agent(w, "int64[] ids", false, n, varying, &|w, i| {
        write!(w, "{i}")
    })?;
    // An agent's width: its share of the world at the recording's density, a tenth of the
    // mean spacing (birds well apart, as forge's default sprites draw them).
    let side = world(h);
    let dim = usize::from(h.dim);
    let volume: f64 = side[..dim].iter().map(|&s| s as f64).product();
    let spacing = (volume / h.agents.max(1) as f64).powf(1.0 / dim as f64);
    writeln!(
        w,
        "        float[] widths = [{}] (\n            interpolation = \"constant\"\n        )",
        (spacing * 0.1) as f32
    )?;
    let species = scene.map(|s| s.species.as_slice()).unwrap_or(&[]);
    if species.is_empty() || h.species.len() != n {
        return Ok(());
    }
    let kinds = &h.species;
    per_agent(w, "int[] primvars:species", true, n, varying, &|w, i| {
        write!(w, "{}", kinds[i])
    })?;
    if !species_colours {
        return Ok(());
    }
    // displayColor is linear; the species colours are sRGB.
    let colours: Vec<[f32; 3]> = crate::scene::species::colours(species)
        .iter()
        .map(|c| c.map(|v| linear(v as f32 / 255.0)))
        .collect();
    if let Some((i, s)) = kinds
        .iter()
        .enumerate()
        .find(|&(_, &s)| usize::from(s) >= colours.len())
    {
        bail!("agent {i} is of species {s}, which the recording's scene does not list");
    }
    per_agent(
        w,
        "color3f[] primvars:displayColor",
        true,
        n,
        varying,
        &|w, i| {
            let c = colours[usize::from(kinds[i])];
            write!(w, "({}, {}, {})", c[0], c[1], c[2])
        },
    )
}

/// The attribute `decl` (`int64[] ids`) of the `n` agents, `item` writing agent i's value: one
/// value, or with `varying` a sample per exported frame of the agents there; `vertex`: a
/// primvar of one value per point.
fn per_agent(
    w: &mut impl Write,
    decl: &str,
    vertex: bool,
    n: usize,
    varying: Option<&Absent>,
    item: &dyn Fn(&mut dyn Write, usize) -> std::io::Result<()>,
) -> Result<()> {
    let list = |w: &mut dyn Write, n: usize, absent: &[(u32, u32)]| -> std::io::Result<()> {
        for (j, i) in (0..n).filter(|&i| !is_in(absent, i)).enumerate() {
            if j > 0 {
                w.write_all(b", ")?;
            }
            item(w, i)?;
        }
        Ok(())
    };
    let meta = "(\n            interpolation = \"vertex\"\n        )";
    let Some(frames) = varying else {
        write!(w, "        {decl} = [")?;
        list(w, n, &[])?;
        let meta = if vertex { meta } else { "" };
        writeln!(w, "]{}{meta}", if vertex { " " } else { "" })?;
        return Ok(());
    };
    if vertex {
        writeln!(w, "        {decl} {meta}")?;
    }
    writeln!(w, "        {decl}.timeSamples = {{")?;
    for (k, m, absent) in frames {
        write!(w, "            {k}: [")?;
        list(w, *m, absent)?;
        writeln!(w, "],")?;
    }
    writeln!(w, "        }}")?;
    Ok(())
}

/// `(r, g, b), …`.
fn colour_list(w: &mut impl Write, colours: impl Iterator<Item = [f32; 3]>) -> Result<()> {
    for (i, rgb) in colours.enumerate() {
        let sep = if i > 0 { ", " } else { "" };
        write!(w, "{sep}({}, {}, {})", rgb[0], rgb[1], rgb[2])?;
    }
    Ok(())
}

/// The world box as a guide (shown in viewports, never rendered): a unit cube scaled to the
/// world and moved to its centre (a 2D world as a flat box).
fn world_guide(w: &mut impl Write, h: &Header) -> Result<()> {
    let s = world(h);
    writeln!(w, "    def Cube \"World\"\n    {{")?;
    writeln!(w, "        double size = 1")?;
    writeln!(w, "        uniform token purpose = \"guide\"")?;
    writeln!(
        w,
        "        double3 xformOp:translate = ({}, {}, {})",
        s[0] as f64 / 2.0,
        s[1] as f64 / 2.0,
        s[2] as f64 / 2.0
    )?;
    writeln!(
        w,
        "        float3 xformOp:scale = ({}, {}, {})",
        s[0], s[1], s[2]
    )?;
    writeln!(
        w,
        "        uniform token[] xformOpOrder = [\"xformOp:translate\", \"xformOp:scale\"]"
    )?;
    writeln!(w, "    }}")?;
    Ok(())
}

/// `s` inside a USD string: backslashes and quotes escaped, control characters dropped.
fn escape(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_control())
        .flat_map(|c| match c {
            '\\' | '"' => vec!['\\', c],
            _ => vec![c],
        })
        .collect()
}
