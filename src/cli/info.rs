//! `forge info`: what a recording holds, its metrics, as text or JSON, CSV or a plot; with
//! `--gnf`, its giant number fluctuations (`metrics::gnf`) as text, JSON, CSV or a plot.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context, Result};

use super::InfoArgs;
use crate::bfs::{self, SourceFormat};
use crate::export::Selection;
use crate::metrics::gnf::{Fit, Gnf};
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

/// What `--gnf` measured, for the JSON.
#[derive(serde::Serialize)]
struct GnfSummary {
    frames: u64,
    fit: Option<Fit>,
    scales: Vec<GnfRow>,
}

#[derive(serde::Serialize)]
struct GnfRow {
    boxes: Vec<u32>,
    side: Vec<f64>,
    mean: f64,
    delta: f64,
    fitted: bool,
}

pub fn info(a: InfoArgs) -> Result<ExitCode> {
    if let Some(p) = &a.plot {
        crate::plot::check_output(p, a.force, "--plot")?;
    }
    if let Some(p) = &a.gnf_plot {
        crate::plot::check_output(p, a.force, "--gnf-plot")?;
    }
    let want_gnf = a.gnf || a.gnf_csv.is_some() || a.gnf_plot.is_some();
    // The outputs against the recording and each other, and locked, before reading it.
    let mut outputs: Vec<(&Path, &str)> = Vec::new();
    if let Some(p) = &a.metrics {
        outputs.push((p, "--metrics"));
    }
    if let Some(p) = &a.plot {
        outputs.push((p, "--plot"));
    }
    if let Some(p) = &a.gnf_csv {
        outputs.push((p, "--gnf-csv"));
    }
    if let Some(p) = &a.gnf_plot {
        outputs.push((p, "--gnf-plot"));
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
    if want_gnf && count == 0 {
        bail!("--gnf: {} holds no complete frame", a.file.display());
    }
    // The measured frames: --frames (the rules of forge render --frames), else all.
    let range = match a.frames {
        Some(spec) => Selection::new(spec, 1, count, &a.file)?.range,
        None => 0..count,
    };
    let mut csv_out = None;
    if let Some(p) = &a.metrics {
        let (out, file) = OutputFile::create(p, a.force, "metrics file")?;
        csv_out = Some((out, std::io::BufWriter::new(file)));
    }
    let mut gnf: Option<Gnf> = None;
    let summary = if count == 0 {
        None
    } else {
        let every_frame = csv_out.is_some() || a.plot.is_some();
        let len = range.end - range.start;
        let mut picks: Vec<u64> = if every_frame || len <= SUMMARY_FRAMES {
            range.clone().collect()
        } else {
            (0..SUMMARY_FRAMES)
                .map(|i| range.start + i * (len - 1) / (SUMMARY_FRAMES - 1))
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
            if want_gnf {
                if gnf.is_none() {
                    // Scales from the first measured frame's agent count (BFS1 counts may vary).
                    gnf = Some(Gnf::new(&space, n).ok_or_else(|| {
                        anyhow!(
                            "--gnf: {} frame {k} has {n} agents in a world of {:?}: nothing to count boxes of",
                            a.file.display(),
                            &space.world[..space.dim]
                        )
                    })?);
                }
                if let Some(g) = gnf.as_mut() {
                    g.add_frame(n, &frame.pos);
                }
            }
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
        if let (Some(g), Some(p)) = (&gnf, &a.gnf_csv) {
            write_gnf_csv(p, a.force, space.dim, g)?;
        }
        if let (Some(g), Some(p)) = (&gnf, &a.gnf_plot) {
            let title = format!(
                "{}: {} {}D, {} agents, {} frame{}",
                printable(&h.scene_name),
                h.model.name(),
                h.dim,
                h.agents,
                g.frames(),
                if g.frames() == 1 { "" } else { "s" }
            );
            crate::plot::gnf_png(p, &title, g)?;
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
            "gnf": gnf.as_ref().map(|g| gnf_summary(space.dim, g)),
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
        // A recording of vectorial-noise Vicsek says so (its scene holds the kind; angular,
        // the default, is left out of it).
        let noise_kind = serde_json::from_str::<serde_json::Value>(&h.scene_json)
            .ok()
            .and_then(|v| v["vicsek"]["noise_kind"].as_str().map(printable))
            .map(|k| format!(" ({k} noise)"))
            .unwrap_or_default();
        writeln!(
            stdout,
            "model      {} {}D{noise_kind}, {} boundary",
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
        if let Some(g) = &gnf {
            write_gnf_text(&mut stdout, g)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The GNF of the text output: the fit, then one line per box size.
fn write_gnf_text(out: &mut impl Write, g: &Gnf) -> Result<()> {
    match g.fit() {
        Some(f) => writeln!(
            out,
            "gnf        alpha {:.3} ± {:.3} (ΔN ∝ <N>^alpha; 0.5 for a gas) over {} box sizes \
             with <N> {:.3}..{:.0}, {} frames",
            f.alpha,
            f.alpha_se,
            f.points,
            f.mean_min,
            f.mean_max,
            g.frames()
        )?,
        None => writeln!(
            out,
            "gnf        too few box sizes with <N> >= {} to fit alpha ({} frames)",
            crate::metrics::gnf::FIT_MIN_MEAN,
            g.frames()
        )?,
    }
    writeln!(out, "  {:>10} {:>12} {:>12}", "box side", "<N>", "ΔN")?;
    for s in g.scales() {
        writeln!(
            out,
            "  {:>10.4} {:>12.4} {:>12.4}{}",
            s.side[0],
            s.mean(),
            s.delta(),
            if s.fitted() { "" } else { "   (not fitted)" }
        )?;
    }
    Ok(())
}

fn gnf_summary(dim: usize, g: &Gnf) -> GnfSummary {
    GnfSummary {
        frames: g.frames(),
        fit: g.fit(),
        scales: g
            .scales()
            .iter()
            .map(|s| GnfRow {
                boxes: s.boxes[..dim].to_vec(),
                side: s.side[..dim].to_vec(),
                mean: s.mean(),
                delta: s.delta(),
                fitted: s.fitted(),
            })
            .collect(),
    }
}

/// `--gnf-csv`: one row per box size, `side_x,side_y[,side_z],boxes,mean_n,delta_n,fitted`.
fn write_gnf_csv(path: &Path, force: bool, dim: usize, g: &Gnf) -> Result<()> {
    let (out, file) = OutputFile::create(path, force, "GNF file")?;
    let mut w = std::io::BufWriter::new(file);
    let err =
        |e: std::io::Error| anyhow::Error::new(e).context(format!("writing {}", path.display()));
    let axes = ["side_x", "side_y", "side_z"];
    writeln!(w, "{},boxes,mean_n,delta_n,fitted", axes[..dim].join(",")).map_err(err)?;
    for s in g.scales() {
        let sides: Vec<String> = s.side[..dim].iter().map(|x| format!("{x}")).collect();
        let boxes: u64 = s.boxes[..dim].iter().map(|&b| b as u64).product();
        writeln!(
            w,
            "{},{boxes},{},{},{}",
            sides.join(","),
            s.mean(),
            s.delta(),
            s.fitted() as u8
        )
        .map_err(err)?;
    }
    let file = w
        .into_inner()
        .map_err(|e| anyhow!("writing {}: {}", path.display(), e.error()))?;
    file.sync_data().ok();
    out.commit()
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
