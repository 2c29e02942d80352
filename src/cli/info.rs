//! `forge info`: what a recording holds, its metrics, as text or JSON, CSV or a plot; with
//! `--gnf`, its giant number fluctuations (`metrics::gnf`) as text, JSON, CSV or a plot.

use std::io::Write;
use std::ops::Range;
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
use species::{species_rows, write_species_text};
use timeline::Keyed;

mod species;
mod timeline;

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
    Plan::resolve(a)?.run()
}

/// `forge info` with every check made: the outputs claimed, the recording open, the frames
/// to measure known.
struct Plan {
    a: InfoArgs,
    /// The outputs' locks, held until the plan is dropped.
    _claim: output::Claim,
    r: bfs::Reader,
    h: bfs::Header,
    count: u64,
    space: Space,
    /// The measured frames: `--frames`, else all.
    range: Range<u64>,
    want_gnf: bool,
    /// The recording's timeline (empty without one).
    keyed: Keyed,
}

/// What the frames measured.
struct Measured {
    summary: Option<Summary>,
    gnf: Option<Gnf>,
}

impl Plan {
    fn resolve(a: InfoArgs) -> Result<Plan> {
        if let Some(p) = &a.plot {
            crate::plot::check_output(p, a.force, "--plot")?;
        }
        if let Some(p) = &a.gnf_plot {
            crate::plot::check_output(p, a.force, "--gnf-plot")?;
        }
        let want_gnf = a.gnf || a.gnf_csv.is_some() || a.gnf_plot.is_some();
        // The outputs against the recording and each other, and locked, before reading it.
        let outputs: Vec<(&Path, &str)> = [
            (&a.metrics, "--metrics"),
            (&a.plot, "--plot"),
            (&a.gnf_csv, "--gnf-csv"),
            (&a.gnf_plot, "--gnf-plot"),
        ]
        .into_iter()
        .filter_map(|(p, flag)| p.as_deref().map(|p| (p, flag)))
        .collect();
        let claim = output::claim(&outputs, &[(&a.file, "input")], a.force)?;
        let r = bfs::open_recording(&a.file)?;
        let h = r.header().clone();
        let count = r.frame_count();
        let space = Space {
            dim: h.dim as usize,
            world: h.world_size,
            wrap: h.boundary == Boundary::Wrap,
        };
        if a.plot.is_some() && count == 0 {
            bail!("--plot: {} holds no complete frame", a.file.display());
        }
        if want_gnf && count == 0 {
            bail!("--gnf: {} holds no complete frame", a.file.display());
        }
        let range = match a.frames {
            Some(spec) => Selection::new(spec, 1, count, &a.file)?.range,
            None => 0..count,
        };
        let keyed = Keyed::of(&h);
        if let Some(param) = &a.against {
            keyed.track(param)?;
        }
        Ok(Plan {
            a,
            _claim: claim,
            r,
            h,
            count,
            space,
            range,
            want_gnf,
            keyed,
        })
    }

    fn run(mut self) -> Result<ExitCode> {
        let m = self.measure()?;
        let last_step = if self.count > 0 {
            Some(
                self.r
                    .read_frame(self.count - 1)
                    .map(|f| f.step)
                    .unwrap_or(0),
            )
        } else {
            None
        };
        let mut stdout = std::io::stdout().lock();
        if self.a.json {
            self.print_json(&mut stdout, &m, last_step)?;
        } else {
            for w in self.r.warnings() {
                eprintln!("warning: {}: {}", self.a.file.display(), printable(w));
            }
            self.print_text(&mut stdout, &m, last_step)?;
        }
        Ok(ExitCode::SUCCESS)
    }

    /// The frames measured: every one when each goes to the CSV or the plot, else at most
    /// [`SUMMARY_FRAMES`] evenly spaced.
    fn picks(&self) -> Vec<u64> {
        let every_frame = self.a.metrics.is_some() || self.a.plot.is_some();
        let range = self.range.clone();
        let len = range.end - range.start;
        let mut picks: Vec<u64> = if every_frame || len <= SUMMARY_FRAMES {
            range.collect()
        } else {
            (0..SUMMARY_FRAMES)
                .map(|i| range.start + i * (len - 1) / (SUMMARY_FRAMES - 1))
                .collect()
        };
        picks.dedup();
        picks
    }

    /// Every picked frame's metrics (into the CSV, the plot, the GNF), and their summary.
    fn measure(&mut self) -> Result<Measured> {
        if self.count == 0 {
            return Ok(Measured {
                summary: None,
                gnf: None,
            });
        }
        let mut csv = match &self.a.metrics {
            Some(p) => Some(CsvOut::create(p, self.a.force, "metrics file")?),
            None => None,
        };
        if let Some(c) = csv.as_mut() {
            let names = self.keyed.tracks.iter().map(|t| t.path.as_str());
            c.row(
                [
                    "frame",
                    "step",
                    "time",
                    "polarization",
                    "mean_speed",
                    "nn_distance",
                    "pairwise_distance",
                ]
                .into_iter()
                .chain(names),
            )?;
        }
        let picks = self.picks();
        let mut all = Vec::with_capacity(picks.len());
        let mut times = Vec::with_capacity(picks.len());
        let mut steps = Vec::with_capacity(picks.len());
        let mut gnf: Option<Gnf> = None;
        let mut frame = bfs::Frame::empty();
        let dt = self.h.dt as f64;
        // Every frame of a long recording (`--metrics`, `--plot`) takes minutes.
        let bar = crate::progress::bar(picks.len() as u64, self.a.quiet, "frames");
        for &k in &picks {
            crate::signal::check()?;
            self.r
                .read_frame_into(k, &mut frame)
                .with_context(|| format!("{}: frame {k}", self.a.file.display()))?;
            frame
                .check_finite(self.space.dim, k)
                .with_context(|| self.a.file.display().to_string())?;
            frame.drop_absent(self.space.dim);
            let n = frame.agents(self.space.dim);
            let m = metrics::frame_metrics(&self.space, n, &frame.pos, &frame.vel);
            if self.want_gnf {
                self.add_to_gnf(&mut gnf, k, n, &frame)?;
            }
            let t = frame.step as f64 * dt;
            if let Some(c) = csv.as_mut() {
                let keyed = self
                    .keyed
                    .tracks
                    .iter()
                    .map(|t| t.value(frame.step).to_string());
                c.row(
                    [
                        k.to_string(),
                        frame.step.to_string(),
                        t.to_string(),
                        m.polarization.to_string(),
                        m.mean_speed.to_string(),
                        m.nn_distance.to_string(),
                        m.pairwise_distance.to_string(),
                    ]
                    .into_iter()
                    .chain(keyed),
                )?;
            }
            all.push(m);
            times.push(t);
            steps.push(frame.step);
            bar.inc(1);
        }
        bar.finish_and_clear();
        self.write_plots(&times, &steps, &all, gnf.as_ref())?;
        if let Some(c) = csv {
            c.finish()?;
        }
        Ok(Measured {
            summary: Some(summary(&all)),
            gnf,
        })
    }

    /// Adds frame `k` (of `n` agents) to the GNF, made on the first measured frame.
    fn add_to_gnf(
        &self,
        gnf: &mut Option<Gnf>,
        k: u64,
        n: usize,
        frame: &bfs::Frame,
    ) -> Result<()> {
        if gnf.is_none() {
            // Scales from the first measured frame's agent count (BFS1 counts may vary).
            *gnf = Some(Gnf::new(&self.space, n).ok_or_else(|| {
                anyhow!(
                    "--gnf: {} frame {k} has {n} agents in a world of {:?}: nothing to count boxes of",
                    self.a.file.display(),
                    &self.space.world[..self.space.dim]
                )
            })?);
        }
        if let Some(g) = gnf.as_mut() {
            g.add_frame(n, &frame.pos);
        }
        Ok(())
    }

    /// `--plot`, `--gnf-csv` and `--gnf-plot`.
    fn write_plots(
        &self,
        times: &[f64],
        steps: &[u64],
        all: &[Metrics],
        gnf: Option<&Gnf>,
    ) -> Result<()> {
        let h = &self.h;
        let what = format!(
            "{}: {} {}D, {} agents",
            printable(&h.scene_name),
            h.model.name(),
            h.dim,
            h.agents
        );
        match (&self.a.plot, &self.a.against) {
            (Some(p), Some(param)) => {
                let t = self.keyed.track(param)?;
                let xs: Vec<f64> = steps.iter().map(|&s| t.value(s) as f64).collect();
                let ys: Vec<f64> = all.iter().map(|m| m.polarization).collect();
                crate::plot::loop_png(p, &what, param, &xs, &ys)?;
            }
            (Some(p), None) => {
                crate::plot::metrics_png(p, &what, times, all, &self.keyed.columns(steps))?;
            }
            _ => {}
        }
        if let (Some(g), Some(p)) = (gnf, &self.a.gnf_csv) {
            write_gnf_csv(p, self.a.force, self.space.dim, g)?;
        }
        if let (Some(g), Some(p)) = (gnf, &self.a.gnf_plot) {
            let title = format!(
                "{what}, {} frame{}",
                g.frames(),
                if g.frames() == 1 { "" } else { "s" }
            );
            crate::plot::gnf_png(p, &title, g)?;
        }
        Ok(())
    }

    fn print_json(&self, out: &mut impl Write, m: &Measured, last_step: Option<u64>) -> Result<()> {
        let (a, h) = (&self.a, &self.h);
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
            "frames": self.count,
            "finalized": h.frame_count.is_some(),
            "last_step": last_step,
            "warnings": self.r.warnings(),
            "species": species_rows(h),
            "timeline": &self.keyed.keys,
            "metrics": m.summary,
            "gnf": m.gnf.as_ref().map(|g| gnf_summary(self.space.dim, g)),
            "scene_json": scene_json,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        Ok(())
    }

    fn print_text(&self, out: &mut impl Write, m: &Measured, last_step: Option<u64>) -> Result<()> {
        let (a, h) = (&self.a, &self.h);
        let world: Vec<String> = h.world_size[..h.dim as usize]
            .iter()
            .map(|x| format!("{x}"))
            .collect();
        writeln!(
            out,
            "file       {}",
            printable(&a.file.display().to_string())
        )?;
        writeln!(
            out,
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
        writeln!(out, "scene      {}", printable(&h.scene_name))?;
        // A recording of vectorial-noise Vicsek says so (its scene holds the kind; angular,
        // the default, is left out of it).
        let noise_kind = serde_json::from_str::<serde_json::Value>(&h.scene_json)
            .ok()
            .and_then(|v| v["vicsek"]["noise_kind"].as_str().map(printable))
            .map(|k| format!(" ({k} noise)"))
            .unwrap_or_default();
        writeln!(
            out,
            "model      {} {}D{noise_kind}, {} boundary",
            h.model.name(),
            h.dim,
            h.boundary.name()
        )?;
        writeln!(
            out,
            "world      {}{}",
            world.join(" x "),
            if h.world_inferred { " (inferred)" } else { "" }
        )?;
        writeln!(out, "agents     {}", h.agents)?;
        write_species_text(out, &species_rows(h))?;
        writeln!(out, "dt         {}   seed {}", h.dt, h.seed)?;
        writeln!(
            out,
            "frames     {} (a frame every {} step{}{})",
            self.count,
            h.record_every,
            if h.record_every == 1 { "" } else { "s" },
            last_step
                .map(|s| format!(", last at step {s}"))
                .unwrap_or_default()
        )?;
        self.keyed.write_text(out, h.dt)?;
        if let Some(s) = &m.summary {
            write_summary_text(out, s)?;
        }
        if let Some(g) = &m.gnf {
            write_gnf_text(out, g)?;
        }
        Ok(())
    }
}

/// The first, last and mean metrics of the measured frames (at least one).
fn summary(all: &[Metrics]) -> Summary {
    let mut mean = Metrics::default();
    for m in all {
        mean.polarization += m.polarization / all.len() as f64;
        mean.mean_speed += m.mean_speed / all.len() as f64;
        mean.nn_distance += m.nn_distance / all.len() as f64;
        mean.pairwise_distance += m.pairwise_distance / all.len() as f64;
    }
    Summary {
        frames_sampled: all.len() as u64,
        first: all[0],
        last: *all.last().expect("at least one frame"),
        mean,
    }
}

/// The metrics table of the text output.
fn write_summary_text(out: &mut impl Write, s: &Summary) -> Result<()> {
    writeln!(
        out,
        "metrics    {:>12} {:>12} {:>12}   (over {} frames)",
        "first", "last", "mean", s.frames_sampled
    )?;
    type Column = fn(&Metrics) -> f64;
    let rows: [(&str, Column); 4] = [
        ("polarization", |m| m.polarization),
        ("mean speed", |m| m.mean_speed),
        ("nn distance", |m| m.nn_distance),
        ("pairwise", |m| m.pairwise_distance),
    ];
    for (name, f) in rows {
        writeln!(
            out,
            "  {:<12} {:>10.4} {:>12.4} {:>12.4}",
            name,
            f(&s.first),
            f(&s.last),
            f(&s.mean)
        )?;
    }
    Ok(())
}

/// A CSV output written through the `csv` crate under its temporary name, renamed when
/// complete; a write error names the file (`--metrics /dev/full`).
struct CsvOut {
    out: OutputFile,
    w: csv::Writer<std::fs::File>,
}

impl CsvOut {
    fn create(path: &Path, force: bool, what: &str) -> Result<CsvOut> {
        let (out, file) = OutputFile::create(path, force, what)?;
        Ok(CsvOut {
            out,
            w: csv::Writer::from_writer(file),
        })
    }

    fn row<I, T>(&mut self, fields: I) -> Result<()>
    where
        I: IntoIterator<Item = T>,
        T: AsRef<[u8]>,
    {
        let path = &self.out.path;
        self.w
            .write_record(fields)
            .map_err(|e| anyhow::Error::new(e).context(format!("writing {}", path.display())))
    }

    fn finish(self) -> Result<()> {
        let path = self.out.path.clone();
        let file = self
            .w
            .into_inner()
            .map_err(|e| anyhow!("writing {}: {}", path.display(), e.error()))?;
        file.sync_data().ok();
        self.out.commit()
    }
}

/// The GNF of the text output: the fit, then one line per box size.
fn write_gnf_text(out: &mut impl Write, g: &Gnf) -> Result<()> {
    match g.fit() {
        Some(f) => writeln!(
            out,
            "gnf        alpha {} (ΔN ∝ <N>^alpha; 0.5 for a gas) over {} box sizes \
             with <N> {:.3}..{:.0}, {} frames{}",
            f.alpha_text(),
            f.points,
            f.mean_min,
            f.mean_max,
            g.frames(),
            f.caveat()
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
    let mut c = CsvOut::create(path, force, "GNF file")?;
    let axes = ["side_x", "side_y", "side_z"];
    let head = axes[..dim]
        .iter()
        .copied()
        .chain(["boxes", "mean_n", "delta_n", "fitted"]);
    c.row(head)?;
    for s in g.scales() {
        let boxes: u64 = s.boxes[..dim].iter().map(|&b| b as u64).product();
        let fields = s.side[..dim].iter().map(|x| x.to_string()).chain([
            boxes.to_string(),
            s.mean().to_string(),
            s.delta().to_string(),
            (s.fitted() as u8).to_string(),
        ]);
        c.row(fields)?;
    }
    c.finish()
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
