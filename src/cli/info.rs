//! `forge info`: what a recording holds, its metrics, as text or JSON, CSV or a plot.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context, Result};

use super::InfoArgs;
use crate::bfs::{self, SourceFormat};
use crate::metrics::{self, Metrics, Space};
use crate::output::{self, OutputFile};
use crate::scene::Boundary;

/// How many frames the summary samples (evenly spaced, first and last included).
const SUMMARY_FRAMES: u64 = 50;

#[derive(serde::Serialize)]
struct Summary {
    frames_sampled: u64,
    first: Metrics,
    last: Metrics,
    mean: Metrics,
}

pub fn info(a: InfoArgs) -> Result<ExitCode> {
    if let Some(p) = &a.plot {
        crate::plot::check_output(p, a.force, "--plot")?;
    }
    // The outputs against the recording and each other, and locked, before reading it.
    let mut outputs: Vec<(&std::path::Path, &str)> = Vec::new();
    if let Some(p) = &a.metrics {
        outputs.push((p, "--metrics"));
    }
    if let Some(p) = &a.plot {
        outputs.push((p, "--plot"));
    }
    let _claim = output::claim(&outputs, &[(&a.file, "input")], a.force)?;
    let mut r =
        bfs::Reader::open(&a.file).with_context(|| format!("cannot open {}", a.file.display()))?;
    let h = r.header().clone();
    let count = r.frame_count();
    let space = Space {
        dim: h.dim as usize,
        world: h.world_size,
        wrap: h.boundary == Boundary::Wrap,
    };
    let mut frame = bfs::Frame::empty();

    if a.plot.is_some() && count == 0 {
        bail!("--plot: {} holds no complete frame", a.file.display());
    }
    let mut csv_out = None;
    if let Some(p) = &a.metrics {
        let (out, file) = OutputFile::create(p, a.force, "metrics file")?;
        csv_out = Some((out, std::io::BufWriter::new(file)));
    }
    let summary = if count == 0 {
        None
    } else {
        let every_frame = csv_out.is_some() || a.plot.is_some();
        let mut picks: Vec<u64> = if every_frame || count <= SUMMARY_FRAMES {
            (0..count).collect()
        } else {
            (0..SUMMARY_FRAMES)
                .map(|i| i * (count - 1) / (SUMMARY_FRAMES - 1))
                .collect()
        };
        picks.dedup();
        let mut all = Vec::with_capacity(picks.len());
        let mut times = Vec::with_capacity(picks.len());
        // A write error names the file (`--metrics /dev/full`).
        let csv_err = |e: std::io::Error| {
            let p = a.metrics.as_deref().unwrap_or(std::path::Path::new("-"));
            anyhow::Error::new(e).context(format!("writing {}", p.display()))
        };
        if let Some((_, w)) = csv_out.as_mut() {
            writeln!(
                w,
                "frame,step,time,polarization,mean_speed,nn_distance,pairwise_distance"
            )
            .map_err(csv_err)?;
        }
        for &k in &picks {
            crate::signal::check()?;
            r.read_frame_into(k, &mut frame)
                .with_context(|| format!("{}: frame {k}", a.file.display()))?;
            let n = frame.agents(space.dim);
            let m = metrics::frame_metrics(&space, n, &frame.pos, &frame.vel);
            if let Some((_, w)) = csv_out.as_mut() {
                writeln!(
                    w,
                    "{k},{},{},{},{},{},{}",
                    frame.step,
                    frame.step as f64 * h.dt as f64,
                    m.polarization,
                    m.mean_speed,
                    m.nn_distance,
                    m.pairwise_distance
                )
                .map_err(csv_err)?;
            }
            all.push(m);
            times.push(frame.step as f64 * h.dt as f64);
        }
        if let Some(p) = &a.plot {
            let title = format!(
                "{}: {} {}D, {} agents",
                printable(&h.scene_name),
                h.model.name(),
                h.dim,
                h.agents
            );
            crate::plot::metrics_png(p, &title, &times, &all)?;
        }
        let mut mean = Metrics::default();
        for m in &all {
            mean.polarization += m.polarization / all.len() as f64;
            mean.mean_speed += m.mean_speed / all.len() as f64;
            mean.nn_distance += m.nn_distance / all.len() as f64;
            mean.pairwise_distance += m.pairwise_distance / all.len() as f64;
        }
        Some(Summary {
            frames_sampled: all.len() as u64,
            first: all[0],
            last: *all.last().unwrap(),
            mean,
        })
    };
    if let Some((out, w)) = csv_out {
        let file = w
            .into_inner()
            .map_err(|e| anyhow!("writing {}: {}", out.path.display(), e.error()))?;
        file.sync_data().ok();
        out.commit()?;
    }
    let last_step = if count > 0 {
        Some(r.read_frame(count - 1).map(|f| f.step).unwrap_or(0))
    } else {
        None
    };

    let mut stdout = std::io::stdout().lock();
    if a.json {
        let scene_json: serde_json::Value =
            serde_json::from_str(&h.scene_json).unwrap_or(serde_json::Value::Null);
        let v = serde_json::json!({
            "file": a.file.display().to_string(),
            "format": match h.source { SourceFormat::Forge => "forge", SourceFormat::Bfs1 => "bfs1" },
            "version": h.version,
            "scene": h.scene_name,
            "model": h.model.name(),
            "dim": h.dim,
            "boundary": h.boundary.name(),
            "agents": h.agents,
            "dt": h.dt,
            "seed": h.seed,
            "record_every": h.record_every,
            "world": &h.world_size[..h.dim as usize],
            "world_inferred": h.world_inferred,
            "frames": count,
            "finalized": h.frame_count.is_some(),
            "last_step": last_step,
            "warnings": r.warnings(),
            "metrics": summary,
            "scene_json": scene_json,
        });
        writeln!(stdout, "{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        for w in r.warnings() {
            eprintln!("warning: {}: {}", a.file.display(), printable(w));
        }
        let world: Vec<String> = h.world_size[..h.dim as usize]
            .iter()
            .map(|x| format!("{x}"))
            .collect();
        writeln!(
            stdout,
            "file       {}",
            printable(&a.file.display().to_string())
        )?;
        writeln!(
            stdout,
            "format     {} v{}{}",
            match h.source {
                SourceFormat::Forge => "forge .bfs",
                SourceFormat::Bfs1 => "BoidForge BFS1",
            },
            h.version,
            if h.frame_count.is_some() {
                ""
            } else {
                " (not finalized)"
            }
        )?;
        writeln!(stdout, "scene      {}", printable(&h.scene_name))?;
        writeln!(
            stdout,
            "model      {} {}D, {} boundary",
            h.model.name(),
            h.dim,
            h.boundary.name()
        )?;
        writeln!(
            stdout,
            "world      {}{}",
            world.join(" x "),
            if h.world_inferred { " (inferred)" } else { "" }
        )?;
        writeln!(stdout, "agents     {}", h.agents)?;
        writeln!(stdout, "dt         {}   seed {}", h.dt, h.seed)?;
        writeln!(
            stdout,
            "frames     {count} (a frame every {} step{}{})",
            h.record_every,
            if h.record_every == 1 { "" } else { "s" },
            last_step
                .map(|s| format!(", last at step {s}"))
                .unwrap_or_default()
        )?;
        if let Some(s) = &summary {
            writeln!(
                stdout,
                "metrics    {:>12} {:>12} {:>12}   (over {} frames)",
                "first", "last", "mean", s.frames_sampled
            )?;
            let rows: [(&str, fn(&Metrics) -> f64); 4] = [
                ("polarization", |m| m.polarization),
                ("mean speed", |m| m.mean_speed),
                ("nn distance", |m| m.nn_distance),
                ("pairwise", |m| m.pairwise_distance),
            ];
            for (name, f) in rows {
                writeln!(
                    stdout,
                    "  {:<12} {:>10.4} {:>12.4} {:>12.4}",
                    name,
                    f(&s.first),
                    f(&s.last),
                    f(&s.mean)
                )?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `s` with its control characters escaped (`\u{1b}`, `\n`): a recording's scene name is
/// whatever the file says, and must not drive the terminal (clear it, retitle it, hide text).
fn printable(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}
