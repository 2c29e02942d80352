//! Sharded sweeps: `forge sweep … --shard I/N` runs only its share of the points, and
//! `forge sweep merge PARTS… -o all.csv` joins the shards into the CSV the unsharded sweep
//! writes, byte for byte.
//!
//! Shares are interleaved: shard I runs points I, I+N, I+2N, … of the point list (the order
//! the CSV lists them in). Sweeps are usually ordered by size or noise, so interleaving gives
//! each shard a similar mix of cheap and costly points.
//!
//! A shard's CSV is the unsharded CSV's header and its own rows, in point order, after one
//! identity line: `# forge sweep shard I/N {json}` (the resolved base scene, the `--vary`
//! expressions, seeds, steps, the point count, and `sweep`, a CRC-32 of the scene, the header,
//! every point's key and the settings). `merge` checks that the parts are shards of one sweep
//! (the same `sweep` CRC, N and forge version), each once, all N of them, each holding exactly
//! its points' rows; it rebuilds the points from the stored scene and expressions (no scene
//! file needed), puts the rows back in point order and writes the header and rows without the
//! identity line, as the unsharded sweep does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::param::{parse_vary, Vary};
use super::points::{points, Point};
use super::stats::Settings;
use super::table::{csv_text, header, read_body, split_line, Row, PREFIX};
use crate::engine::Task;
use crate::output::{self, TempName};
use crate::scene::Scene;

/// The points of shard `task`: `task.index`, `task.index + task.count`, … below `count`.
pub fn share(count: usize, task: Task) -> Result<Vec<usize>> {
    if task.count as usize > count {
        bail!(
            "--shard {task}: {} shards of a sweep of {count} point{} would leave some empty; use at most {count} shards",
            task.count,
            if count == 1 { "" } else { "s" },
        );
    }
    Ok((task.index as usize..count)
        .step_by(task.count as usize)
        .collect())
}

/// What a shard's identity line holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Identity {
    /// I, N.
    pub shard: [u64; 2],
    /// The forge version that ran it.
    pub forge: String,
    /// CRC-32 of the scene, header, point keys and settings: equal for every shard of a sweep.
    pub sweep: String,
    pub points: usize,
    pub seeds: u32,
    pub equilibrate: u64,
    pub measure: u64,
    /// The `--vary` expressions, in order.
    pub vary: Vec<String>,
    /// The resolved base scene.
    pub scene: serde_json::Value,
}

impl Identity {
    pub fn new(
        base: &Scene,
        varies: &[Vary],
        points: &[Point],
        settings: Settings,
        task: Task,
    ) -> Identity {
        let scene: serde_json::Value =
            serde_json::from_str(&base.to_json()).expect("a scene's JSON parses");
        Identity {
            shard: [task.index, task.count],
            forge: env!("CARGO_PKG_VERSION").to_string(),
            sweep: sweep_crc(&scene, varies, points, settings),
            points: points.len(),
            seeds: settings.seeds,
            equilibrate: settings.equilibrate,
            measure: settings.measure,
            vary: varies.iter().map(|v| v.expr.clone()).collect(),
            scene,
        }
    }

    /// The identity line (no newline).
    pub fn line(&self) -> String {
        format!(
            "{PREFIX}{}/{} {}",
            self.shard[0],
            self.shard[1],
            serde_json::to_string(self).expect("an identity serializes")
        )
    }

    /// Reads an identity line; `None` if `line` is not one.
    pub fn parse(line: &str) -> Option<Result<Identity>> {
        let rest = line.strip_prefix(PREFIX)?;
        let json = rest.split_once(' ').map(|(_, j)| j).unwrap_or("");
        Some(serde_json::from_str(json).context("its identity line does not parse"))
    }

    fn settings(&self) -> Settings {
        Settings {
            seeds: self.seeds,
            equilibrate: self.equilibrate,
            measure: self.measure,
        }
    }
}

fn sweep_crc(scene: &serde_json::Value, varies: &[Vary], points: &[Point], s: Settings) -> String {
    let mut h = crc32fast::Hasher::new();
    h.update(scene.to_string().as_bytes());
    h.update(format!("|{}|", header(varies)).as_bytes());
    for p in points {
        h.update(p.key.join(",").as_bytes());
        h.update(b";");
    }
    h.update(format!("|{} {} {}", s.seeds, s.equilibrate, s.measure).as_bytes());
    format!("{:08x}", h.finalize())
}

/// `forge sweep merge` as asked for.
#[derive(Debug, Clone)]
pub struct Merge {
    /// The shards' CSV files.
    pub parts: Vec<PathBuf>,
    /// The merged CSV, and the plot.
    pub output: PathBuf,
    pub plot: Option<PathBuf>,
    /// What the plot shows.
    pub plot_y: super::PlotY,
    /// Overwrite the outputs.
    pub force: bool,
    /// No summary line.
    pub quiet: bool,
}

/// One shard's file, read.
struct Part {
    path: PathBuf,
    id: Identity,
    head: String,
    /// (line number, fields) of each row.
    lines: Vec<(usize, csv::StringRecord)>,
}

fn read_part(path: &Path) -> Result<Part> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{}: cannot read", path.display()))?;
    let (first, rest) = split_line(&text);
    let id = Identity::parse(first)
        .ok_or_else(|| {
            anyhow!(
                "{}: not a sweep shard (its first line is not `{PREFIX}I/N …`; shards are written by forge sweep … --shard I/N)",
                path.display()
            )
        })?
        .with_context(|| format!("{}: damaged", path.display()))?;
    let (head, body) = split_line(rest);
    let body = read_body(body, 3).with_context(|| format!("{}: damaged", path.display()))?;
    if let Some(lineno) = body.cut {
        bail!(
            "{}: damaged: line {lineno} is incomplete (an interrupted shard? finish it with --resume)",
            path.display()
        );
    }
    Ok(Part {
        path: path.to_path_buf(),
        id,
        head: head.to_string(),
        lines: body.rows,
    })
}

/// What every shard of one sweep shares.
fn family(id: &Identity) -> (String, u64, String) {
    (id.sweep.clone(), id.shard[1], id.forge.clone())
}

fn describe(id: &Identity) -> String {
    format!(
        "scene {}, {} points ({}), --seeds {} --equilibrate {} --measure {}, {} shards, forge {}",
        id.scene["name"].as_str().unwrap_or("?"),
        id.points,
        id.vary.join(" "),
        id.seeds,
        id.equilibrate,
        id.measure,
        id.shard[1],
        id.forge
    )
}

/// Joins the shards of a sweep into the CSV (and plot) the unsharded sweep writes, after
/// checking they are every shard of one sweep, once each.
pub fn merge(a: Merge) -> Result<()> {
    let _claim = claim_outputs(&a)?;
    let mut parts = a
        .parts
        .iter()
        .map(|p| read_part(p))
        .collect::<Result<Vec<_>>>()?;
    let first = the_sweep(&parts)?;
    let (reference, first_path) = (parts[first].id.clone(), parts[first].path.clone());
    let n = reference.shard[1];
    parts.sort_by_key(|p| p.id.shard[0]);
    check_every_shard_once(&parts, &reference)?;
    let sweep = Stored::rebuild(&reference, &first_path)?;
    let head = header(&sweep.varies);
    let rows = gather_rows(&parts, n, &head, &sweep)?;
    let rows: Vec<&Row> = rows.iter().collect();
    output::write_atomic(
        &a.output,
        &csv_text(&head, rows.iter().copied()),
        TempName::Hidden,
        a.force,
        "CSV",
    )?;
    let Stored {
        base,
        varies,
        points,
        settings,
    } = &sweep;
    if let Some(path) = &a.plot {
        super::plot::plot_sweep(path, base, varies, points, &rows, (*settings, a.plot_y))?;
    }
    if !a.quiet {
        log::info!(
            "{n} shard{} of sweep {} merged: {} points -> {}{}",
            if n == 1 { "" } else { "s" },
            base.name,
            points.len(),
            a.output.display(),
            a.plot
                .as_ref()
                .map(|p| format!(", {}", p.display()))
                .unwrap_or_default()
        );
    }
    Ok(())
}

/// Checks `--plot`, then claims the outputs against the parts and each other.
fn claim_outputs(a: &Merge) -> Result<output::Claim> {
    if let Some(p) = &a.plot {
        crate::plot::check_output(p, a.force, "--plot")?;
    }
    let mut outputs: Vec<(&Path, &str)> = vec![(&a.output, "--output")];
    if let Some(p) = &a.plot {
        outputs.push((p, "--plot"));
    }
    let inputs: Vec<(&Path, &str)> = a.parts.iter().map(|p| (p.as_path(), "shard")).collect();
    output::claim(&outputs, &inputs, a.force)
}

/// The part whose sweep is being merged: the sweep most parts agree on (the first's on a tie).
/// Refuses any part of another sweep, naming each.
fn the_sweep(parts: &[Part]) -> Result<usize> {
    let mut votes: BTreeMap<(String, u64, String), (usize, usize)> = BTreeMap::new();
    for (i, p) in parts.iter().enumerate() {
        votes.entry(family(&p.id)).or_insert((0, i)).0 += 1;
    }
    let (_, &(_, first)) = votes
        .iter()
        .max_by_key(|(_, (n, i))| (*n, std::cmp::Reverse(*i)))
        .expect("at least one part");
    let reference = &parts[first].id;
    let foreign: Vec<String> = parts
        .iter()
        .filter(|p| family(&p.id) != family(reference))
        .map(|p| format!("{} is a shard of {}", p.path.display(), describe(&p.id)))
        .collect();
    if !foreign.is_empty() {
        bail!(
            "{} part{} foreign to the sweep of {} ({}):\n  {}",
            foreign.len(),
            if foreign.len() == 1 { " is" } else { "s are" },
            parts[first].path.display(),
            describe(reference),
            foreign.join("\n  ")
        );
    }
    Ok(first)
}

/// Refuses a shard given twice, then any missing; `parts` are in shard order.
fn check_every_shard_once(parts: &[Part], reference: &Identity) -> Result<()> {
    let n = reference.shard[1];
    for w in parts.windows(2) {
        if w[0].id.shard[0] == w[1].id.shard[0] {
            bail!(
                "shard {}/{n} is given twice: {} and {}",
                w[0].id.shard[0],
                w[0].path.display(),
                w[1].path.display()
            );
        }
    }
    let missing: Vec<String> = (0..n)
        .filter(|i| !parts.iter().any(|p| p.id.shard[0] == *i))
        .map(|i| format!("{i}/{n}"))
        .collect();
    if !missing.is_empty() {
        bail!(
            "missing shard{} {} of {}: run {} with forge sweep … --shard I/{n}",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            describe(reference),
            if missing.len() == 1 { "it" } else { "them" }
        );
    }
    Ok(())
}

/// The sweep again, from what a shard's identity stored.
struct Stored {
    base: Scene,
    varies: Vec<Vary>,
    points: Vec<Point>,
    settings: Settings,
}

impl Stored {
    /// Rebuilds the points from `id` (read from the part at `path`), and checks they are the
    /// ones its CRC was taken of.
    fn rebuild(id: &Identity, path: &Path) -> Result<Stored> {
        let base = Scene::from_stored_json(&id.scene.to_string())
            .map_err(|e| anyhow!("{}: damaged: its scene: {e}", path.display()))?;
        let varies = id
            .vary
            .iter()
            .map(|e| parse_vary(e))
            .collect::<Result<Vec<_>>>()?;
        let points = points(&base, &varies)?;
        let settings = id.settings();
        if points.len() != id.points || sweep_crc(&id.scene, &varies, &points, settings) != id.sweep
        {
            bail!(
                "{}: damaged: its identity does not match its own scene and points",
                path.display()
            );
        }
        Ok(Stored {
            base,
            varies,
            points,
            settings,
        })
    }
}

/// Every point's row, in point order, from the part of its shard: each part's header, row
/// count, keys and settings checked against the sweep.
fn gather_rows(parts: &[Part], n: u64, head: &str, sweep: &Stored) -> Result<Vec<Row>> {
    let Stored {
        varies,
        points,
        settings,
        ..
    } = sweep;
    let mut rows: Vec<Option<Row>> = vec![None; points.len()];
    for p in parts {
        let task = Task {
            index: p.id.shard[0],
            count: n,
        };
        let name = p.path.display();
        if p.head != head {
            bail!(
                "{name}: damaged: its header is\n  {}\nnot\n  {head}",
                p.head
            );
        }
        let mine = share(points.len(), task)?;
        if p.lines.len() != mine.len() {
            bail!(
                "{name} (shard {task}): holds {} row{} for its {} points (an unfinished or edited shard)",
                p.lines.len(),
                if p.lines.len() == 1 { "" } else { "s" },
                mine.len()
            );
        }
        for (&k, (lineno, fields)) in mine.iter().zip(&p.lines) {
            let row = Row::from_record(fields.clone(), varies.len())
                .map_err(|e| anyhow!("{name} line {lineno} {e}"))?;
            if row.key != points[k].key {
                bail!(
                    "{name} line {lineno}: a row for {} where shard {task} has the point at {}",
                    row.key.join(","),
                    points[k].at(varies)
                );
            }
            if row.settings != *settings {
                bail!("{name} line {lineno}: made with other --seeds, --equilibrate or --measure");
            }
            rows[k] = Some(row);
        }
    }
    Ok(rows
        .into_iter()
        .map(|r| r.expect("every point's row, from its shard"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_interleave_and_cover_once() {
        for (count, n) in [(10, 3), (7, 7), (5, 1), (11, 2)] {
            let mut all: Vec<usize> = (0..n)
                .flat_map(|i| share(count, Task { index: i, count: n }).unwrap())
                .collect();
            all.sort();
            assert_eq!(all, (0..count).collect::<Vec<_>>());
        }
        assert_eq!(
            share(10, Task { index: 1, count: 3 }).unwrap(),
            vec![1, 4, 7]
        );
        let e = share(3, Task { index: 0, count: 4 })
            .unwrap_err()
            .to_string();
        assert!(e.contains("at most 3 shards"), "{e}");
    }
}
