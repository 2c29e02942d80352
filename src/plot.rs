//! PNG plots with plotters: a sweep's order parameter with error bars (`forge sweep --plot`),
//! a recording's metrics over time (`forge info --plot`), its giant number fluctuations
//! (`forge info --gnf-plot`) and its velocity and pair correlations (`forge analyze --plot`).
//!
//! Text is drawn with DejaVu Sans embedded in the binary (the `dejavu` crate, registered with
//! plotters' ab_glyph backend), so plots look the same on machines without any system font.
//! A plot is drawn to `NAME.partial.png` beside its final name and renamed when complete.

use std::path::Path;
use std::sync::OnceLock;

use anyhow::{anyhow, bail, Context, Result};
use plotters::prelude::*;

use crate::analyze::Analysis;
use crate::metrics::gnf::Gnf;
use crate::metrics::Metrics;
use crate::output;

/// The family name plotters asks for by default; we register DejaVu Sans under it.
const FONT: &str = "sans-serif";

/// Series colours (Tableau 10): distinct, readable on white, and colour-blind friendly enough.
const COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// Sweep plots: width × height in pixels.
pub const SWEEP_SIZE: (u32, u32) = (960, 640);
/// Metrics plots: three stacked panels.
pub const METRICS_SIZE: (u32, u32) = (960, 900);
/// GNF plots: one log-log panel.
pub const GNF_SIZE: (u32, u32) = (800, 640);
/// Correlation plots: C(r) above g(r).
pub const CORRELATION_SIZE: (u32, u32) = (960, 1200);

fn register_font() -> Result<()> {
    static LOADED: OnceLock<bool> = OnceLock::new();
    let loaded = *LOADED.get_or_init(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular()).is_ok()
    });
    if !loaded {
        bail!("the embedded DejaVu Sans font did not load");
    }
    Ok(())
}

/// Refuse an output that is not a `.png`, is a folder or exists (unless `force`), before any
/// work.
pub fn check_output(path: &Path, force: bool, flag: &str) -> Result<()> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase());
    if ext.as_deref() != Some("png") {
        bail!(
            "{flag}: plots are written as PNG, the file name must end in .png, got {}",
            path.display()
        );
    }
    output::check_writable(path, force, &format!("{flag}:"))
}

/// Draw into an RGB buffer, encode it as PNG (through `image`, the crate every image of
/// forge's goes through) into `NAME.partial.png`, then rename it to `path`. The caller
/// refused an existing `path` up front (`check_output`, before the work that made the data);
/// whatever is there now is replaced.
fn write_png(
    path: &Path,
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<BitMapBackend, plotters::coord::Shift>) -> Result<()>,
) -> Result<()> {
    register_font()?;
    let mut rgb = vec![0u8; size.0 as usize * size.1 as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
        draw(&root)?;
        root.present().map_err(|e| anyhow!("{e}"))?;
    }
    output::write_by_name(path, true, "plot", |tmp| {
        image::save_buffer_with_format(
            tmp,
            &rgb,
            size.0,
            size.1,
            image::ExtendedColorType::Rgb8,
            image::ImageFormat::Png,
        )?;
        Ok(())
    })
    .with_context(|| format!("cannot draw plot {}", path.display()))
}

/// The series' legend, in the plots' one style, at `at`.
fn legend<'a, 'b: 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, BitMapBackend<'b>, CT>,
    at: SeriesLabelPosition,
) -> Result<()> {
    chart
        .configure_series_labels()
        .position(at)
        .label_font((FONT, 16))
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(180, 180, 180))
        .draw()
        .map_err(|x| anyhow!("{x}"))
}

/// One line of a sweep plot: `(x, y, standard error of y)`, in x order.
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64, f64)>,
}

pub struct SweepPlot<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    /// A fixed y range; `None`: the values' own, padded.
    pub y_range: Option<(f64, f64)>,
    pub series: &'a [Series],
}

/// Padded [lo, hi] of some values; a single value gets a unit-wide window.
fn span(values: impl Iterator<Item = f64>, pad: f64) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if hi - lo < 1e-12 {
        let w = if lo.abs() > 1e-12 {
            lo.abs() * 0.5
        } else {
            0.5
        };
        return (lo - w, hi + w);
    }
    let p = (hi - lo) * pad;
    (lo - p, hi + p)
}

/// A sweep's statistic against the varied parameter, one line per series, with error bars.
pub fn sweep_png(path: &Path, plot: &SweepPlot) -> Result<()> {
    let (x0, x1) = span(
        plot.series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0)),
        0.03,
    );
    let (y0, y1) = plot.y_range.unwrap_or_else(|| {
        span(
            plot.series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.1)),
            0.06,
        )
    });
    write_png(path, SWEEP_SIZE, |root| {
        let e = |e: &dyn std::fmt::Display| anyhow!("{e}");
        let mut chart = ChartBuilder::on(root)
            .caption(plot.title, (FONT, 22))
            .margin(16)
            .margin_right(28)
            .x_label_area_size(50)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|x| e(&x))?;
        chart
            .configure_mesh()
            .x_desc(plot.x_label)
            .y_desc(plot.y_label)
            .axis_desc_style((FONT, 18))
            .label_style((FONT, 14))
            .light_line_style(WHITE)
            .draw()
            .map_err(|x| e(&x))?;
        for (i, s) in plot.series.iter().enumerate() {
            let c = COLORS[i % COLORS.len()];
            let finite: Vec<(f64, f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|p| p.0.is_finite() && p.1.is_finite())
                .collect();
            chart
                .draw_series(LineSeries::new(
                    finite.iter().map(|p| (p.0, p.1)),
                    c.stroke_width(2),
                ))
                .map_err(|x| e(&x))?
                .label(s.label.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
            chart
                .draw_series(
                    finite
                        .iter()
                        .filter(|p| p.2.is_finite() && p.2 > 0.0)
                        .map(|p| ErrorBar::new_vertical(p.0, p.1 - p.2, p.1, p.1 + p.2, c, 8)),
                )
                .map_err(|x| e(&x))?;
            chart
                .draw_series(
                    finite
                        .iter()
                        .map(|p| Circle::new((p.0, p.1), 3, c.filled())),
                )
                .map_err(|x| e(&x))?;
        }
        if plot.series.len() > 1 || !plot.series.first().is_some_and(|s| s.label.is_empty()) {
            legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        }
        Ok(())
    })
}

/// Every frame's polarization, mean speed and nearest-neighbour distance against time, one
/// panel each, and below them one panel per `keyed` parameter (its name and its value at each
/// frame: a recording's timeline).
pub fn metrics_png(
    path: &Path,
    title: &str,
    times: &[f64],
    metrics: &[Metrics],
    keyed: &[(String, Vec<f64>)],
) -> Result<()> {
    if times.len() != metrics.len() || keyed.iter().any(|k| k.1.len() != times.len()) {
        bail!(
            "internal: {} times for {} frames",
            times.len(),
            metrics.len()
        );
    }
    let column = |pick: fn(&Metrics) -> f64| metrics.iter().map(pick).collect::<Vec<f64>>();
    /// Name, values, fixed y range.
    type Panel = (String, Vec<f64>, Option<(f64, f64)>);
    let mut panels: Vec<Panel> = vec![
        (
            "polarization".into(),
            column(|m| m.polarization),
            Some((0.0, 1.05)),
        ),
        ("mean speed".into(), column(|m| m.mean_speed), None),
        (
            "nearest-neighbour distance".into(),
            column(|m| m.nn_distance),
            None,
        ),
    ];
    panels.extend(
        keyed
            .iter()
            .map(|(name, v)| (name.clone(), v.clone(), None)),
    );
    let (t0, t1) = span(times.iter().copied(), 0.0);
    let size = (METRICS_SIZE.0, METRICS_SIZE.1 / 3 * panels.len() as u32);
    write_png(path, size, |root| {
        let e = |e: &dyn std::fmt::Display| anyhow!("{e}");
        // The margin keeps the title's ascenders inside the image.
        let root = root
            .margin(12, 0, 0, 0)
            .titled(title, (FONT, 22))
            .map_err(|x| e(&x))?;
        let areas = root.split_evenly((panels.len(), 1));
        for (k, ((name, values, fixed), area)) in panels.iter().zip(areas.iter()).enumerate() {
            let (y0, y1) = fixed.unwrap_or_else(|| {
                // Speeds, distances and most parameters are >= 0: start the axis at 0 (or at
                // the lowest value below it), leave 10% above.
                let finite = values.iter().copied().filter(|v| v.is_finite());
                let hi = finite.clone().fold(0.0, f64::max);
                let lo = finite.fold(0.0, f64::min);
                (
                    lo * 1.1,
                    if hi > 0.0 {
                        hi * 1.1
                    } else {
                        lo.abs().max(1.0) * 0.1
                    },
                )
            });
            let last = k + 1 == panels.len();
            let mut chart = ChartBuilder::on(area)
                .margin(12)
                .margin_right(28)
                .x_label_area_size(if last { 46 } else { 24 })
                .y_label_area_size(72)
                .build_cartesian_2d(t0..t1, y0..y1)
                .map_err(|x| e(&x))?;
            let mut mesh = chart.configure_mesh();
            mesh.y_desc(name.as_str())
                .axis_desc_style((FONT, 16))
                .label_style((FONT, 13))
                .light_line_style(WHITE);
            if last {
                mesh.x_desc("time (steps × dt)");
            }
            mesh.draw().map_err(|x| e(&x))?;
            let c = COLORS[k % COLORS.len()];
            chart
                .draw_series(LineSeries::new(
                    times
                        .iter()
                        .zip(values)
                        .map(|(&t, &v)| (t, v))
                        .filter(|p| p.1.is_finite()),
                    c.stroke_width(2),
                ))
                .map_err(|x| e(&x))?;
        }
        Ok(())
    })
}

/// The polarization against a keyed parameter `x` (one point per frame, joined in time order):
/// stretches where `x` rises in one colour, where it falls in another, where it holds in grey,
/// so that a slow ramp up and back down draws a hysteresis loop as two branches.
pub fn loop_png(path: &Path, title: &str, x_name: &str, xs: &[f64], ys: &[f64]) -> Result<()> {
    if xs.len() != ys.len() || xs.is_empty() {
        bail!("internal: {} values for {} frames", xs.len(), ys.len());
    }
    let (x0, x1) = span(xs.iter().copied(), 0.0);
    let pad = ((x1 - x0) * 0.03).max(1e-9);
    write_png(path, SWEEP_SIZE, |root| {
        let e = |e: &dyn std::fmt::Display| anyhow!("{e}");
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, 20))
            .margin(16)
            .margin_right(28)
            .x_label_area_size(46)
            .y_label_area_size(72)
            .build_cartesian_2d((x0 - pad)..(x1 + pad), 0.0..1.05)
            .map_err(|x| e(&x))?;
        chart
            .configure_mesh()
            .x_desc(x_name)
            .y_desc("polarization")
            .axis_desc_style((FONT, 16))
            .label_style((FONT, 13))
            .light_line_style(WHITE)
            .draw()
            .map_err(|x| e(&x))?;
        let grey = RGBColor(170, 170, 170);
        let pick = |d: f64| {
            if d > 0.0 {
                COLORS[3]
            } else if d < 0.0 {
                COLORS[0]
            } else {
                grey
            }
        };
        for w in xs.windows(2).zip(ys.windows(2)) {
            let ((a, b), (ya, yb)) = ((w.0[0], w.0[1]), (w.1[0], w.1[1]));
            if [a, b, ya, yb].iter().all(|v| v.is_finite()) {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(a, ya), (b, yb)],
                        pick(b - a).stroke_width(2),
                    )))
                    .map_err(|x| e(&x))?;
            }
        }
        for (label, c) in [
            (format!("{x_name} rising"), COLORS[3]),
            (format!("{x_name} falling"), COLORS[0]),
        ] {
            chart
                .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())
                .map_err(|x| e(&x))?
                .label(label)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font((FONT, 14))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(|x| e(&x))?;
        Ok(())
    })
}

/// Giant number fluctuations: ΔN against ⟨N⟩ on log-log axes, one point per box size (filled:
/// fitted), the fitted line ΔN ∝ ⟨N⟩^α, and a gas's ⟨N⟩^½ from the smallest fitted box.
pub fn gnf_png(path: &Path, title: &str, g: &Gnf) -> Result<()> {
    let pts: Vec<(f64, f64, bool)> = g
        .scales()
        .iter()
        .map(|s| (s.mean(), s.delta(), s.fitted()))
        .filter(|p| p.0 > 0.0 && p.1 > 0.0 && p.0.is_finite() && p.1.is_finite())
        .collect();
    if pts.is_empty() {
        bail!("--gnf-plot: no box size with agents to plot");
    }
    let fit = g.fit();
    let (mut x0, mut x1, mut y0, mut y1) = (f64::INFINITY, 0f64, f64::INFINITY, 0f64);
    for p in &pts {
        x0 = x0.min(p.0);
        x1 = x1.max(p.0);
        y0 = y0.min(p.1);
        y1 = y1.max(p.1);
    }
    // A factor of 1.5 of room on every side of the log axes.
    let (x0, x1, y0, y1) = (x0 / 1.5, x1 * 1.5, y0 / 1.5, y1 * 1.5);
    write_png(path, GNF_SIZE, |root| {
        let e = |e: &dyn std::fmt::Display| anyhow!("{e}");
        let caption = match fit {
            Some(f) => format!("{title}: α = {}", f.alpha_text()),
            None => title.to_string(),
        };
        let mut chart = ChartBuilder::on(root)
            .caption(caption, (FONT, 20))
            .margin(16)
            .margin_right(28)
            .x_label_area_size(50)
            .y_label_area_size(72)
            .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
            .map_err(|x| e(&x))?;
        chart
            .configure_mesh()
            .x_desc("mean agents per box <N>")
            .y_desc("standard deviation ΔN")
            .axis_desc_style((FONT, 18))
            .label_style((FONT, 14))
            .light_line_style(WHITE)
            .draw()
            .map_err(|x| e(&x))?;
        let c = COLORS[0];
        let grey = RGBColor(127, 127, 127);
        if let Some(f) = fit {
            let line = |x: f64| (f.intercept + f.alpha * x.ln()).exp();
            chart
                .draw_series(LineSeries::new(
                    [
                        (f.mean_min, line(f.mean_min)),
                        (f.mean_max, line(f.mean_max)),
                    ],
                    COLORS[3].stroke_width(2),
                ))
                .map_err(|x| e(&x))?
                .label(format!("fit: α = {:.3}", f.alpha))
                .legend(|(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], COLORS[3].stroke_width(2))
                });
            // The gas (α = 1/2) through the fitted point of smallest ⟨N⟩: a straight line on
            // log-log axes, so its two ends are enough (a dashed series would place its dashes
            // linearly in data space, off the line).
            let first = pts
                .iter()
                .filter(|p| p.2)
                .min_by(|a, b| a.0.total_cmp(&b.0))
                .copied()
                .unwrap_or(pts[0]);
            let gas = |x: f64| first.1 * (x / first.0).sqrt();
            chart
                .draw_series(LineSeries::new(
                    [(f.mean_min, gas(f.mean_min)), (f.mean_max, gas(f.mean_max))],
                    grey.stroke_width(2),
                ))
                .map_err(|x| e(&x))?
                .label("α = 1/2 (a gas)")
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], grey.stroke_width(2))
                });
        }
        chart
            .draw_series(pts.iter().map(|p| {
                let style = if p.2 { c.filled() } else { c.stroke_width(1) };
                Circle::new((p.0, p.1), 4, style)
            }))
            .map_err(|x| e(&x))?
            .label("ΔN at one box size (hollow: not fitted)")
            .legend(move |(x, y)| Circle::new((x + 10, y), 4, c.filled()));
        legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        Ok(())
    })
}

/// `forge analyze --plot`: C(r) with its error bars, 0 and ξ marked, above g(r).
pub fn correlation_png(path: &Path, title: &str, a: &Analysis) -> Result<()> {
    let pts = |v: &[Option<f64>]| -> Vec<(f64, f64)> {
        a.r.iter()
            .zip(v)
            .filter_map(|(&r, y)| y.filter(|y| y.is_finite()).map(|y| (r, y)))
            .collect()
    };
    let (c, g) = (pts(&a.c), pts(&a.g));
    let range = |p: &[(f64, f64)], lo: f64, hi: f64| {
        let (mut y0, mut y1) = (lo, hi);
        for &(_, y) in p {
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        let pad = 0.05 * (y1 - y0).max(1e-9);
        (y0 - pad, y1 + pad)
    };
    let (c0, c1) = range(&c, -0.2, 1.0);
    let (g0, g1) = range(&g, 0.0, 1.2);
    let r1 = a.r_max.max(1e-9);
    write_png(path, CORRELATION_SIZE, |root| {
        let e = |e: &dyn std::fmt::Display| anyhow!("{e}");
        let caption = match a.correlation_length {
            Some(x) => format!("{title}: ξ = {x:.3}, χ = {:.3}", a.susceptibility),
            None => format!("{title}: no zero of C(r) up to r = {r1:.3}"),
        };
        let root = root
            .margin(12, 0, 0, 0)
            .titled(&caption, (FONT, 20))
            .map_err(|x| e(&x))?;
        let (top, rest) = root.split_vertically(440);
        let (middle, bottom) = rest.split_vertically(360);
        c_panel(&top, a, &c, (c0, c1))?;
        g_panel(&middle, &g, r1, (g0, g1))?;
        k_panel(&bottom, a)
    })
}

/// The k-th neighbour's direction against the flight direction, per k: ⟨(û·V̂)²⟩ (γ_k + 1/d,
/// with γ_k's error bars) and Ballerini's (W·V̂)², both 1/d (the grey line) where neighbours
/// lie alike in every direction; the shape's ratios, tilt and border density in the caption.
fn k_panel(area: &Area, a: &Analysis) -> Result<()> {
    let e = |e: &dyn std::fmt::Display| anyhow!("{e}");
    let an = &a.anisotropy;
    let iso = 1.0 / a.dim as f64;
    let k_max = an.k.len().max(1) as f64;
    let ratios: Vec<String> = a
        .shape
        .aspect_ratios
        .iter()
        .map(|x| format!("{x:.2}"))
        .collect();
    let mut caption = format!("shape {}", ratios.join(" : "));
    if let Some(t) = a.shape.thinnest_axis_to_vertical {
        caption += &format!(", thinnest axis {t:.1}° from vertical");
    }
    if let Some(r) = a.shape.border_density.ratio {
        caption += &format!(", border density {r:.2} × centre's");
    }
    let area = area.titled(&caption, (FONT, 15)).map_err(|x| e(&x))?;
    let x = (0.5, k_max + 0.5, "k (k-th nearest neighbour)");
    let mut chart = panel(&area, x, (0.0, 1.0), "squared projection", iso)?;
    let pts = |v: &[Option<f64>], add: f64| -> Vec<(f64, f64)> {
        an.k.iter()
            .zip(v)
            .filter_map(|(&k, y)| y.filter(|y| y.is_finite()).map(|y| (k as f64, y + add)))
            .collect()
    };
    let bars =
        an.k.iter()
            .zip(&an.gamma)
            .zip(&an.gamma_error)
            .filter_map(|((&k, g), err)| {
                let (g, err) = ((*g)? + iso, (*err)?);
                Some(ErrorBar::new_vertical(
                    k as f64,
                    g - err,
                    g,
                    g + err,
                    COLORS[1].filled(),
                    4,
                ))
            });
    chart.draw_series(bars).map_err(|x| e(&x))?;
    chart
        .draw_series(LineSeries::new(
            pts(&an.gamma, iso),
            COLORS[1].stroke_width(2),
        ))
        .map_err(|x| e(&x))?
        .label("⟨(u·V)²⟩ = γ_k + 1/d")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], COLORS[1].stroke_width(2)));
    chart
        .draw_series(LineSeries::new(
            pts(&an.projection, 0.0),
            COLORS[4].stroke_width(2),
        ))
        .map_err(|x| e(&x))?
        .label("(W·V)² (Ballerini)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], COLORS[4].stroke_width(2)));
    legend(&mut chart, SeriesLabelPosition::UpperRight)
}

type Area<'a> = DrawingArea<BitMapBackend<'a>, plotters::coord::Shift>;
type RChart<'a, 'b> = ChartContext<
    'a,
    BitMapBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// A panel of a function of r over `0..r1`, its axes drawn and a grey line at `base`.
fn r_panel<'a, 'b>(
    area: &'a Area<'b>,
    r1: f64,
    y: (f64, f64),
    y_desc: &str,
    base: f64,
) -> Result<RChart<'a, 'b>> {
    panel(area, (0.0, r1, "r"), y, y_desc, base)
}

/// A panel over `x0..x1` (named `x_desc`) and `y0..y1`, its axes drawn and a grey line at
/// `base`.
fn panel<'a, 'b>(
    area: &'a Area<'b>,
    (x0, x1, x_desc): (f64, f64, &str),
    (y0, y1): (f64, f64),
    y_desc: &str,
    base: f64,
) -> Result<RChart<'a, 'b>> {
    let e = |e: &dyn std::fmt::Display| anyhow!("{e}");
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .margin_right(28)
        .x_label_area_size(44)
        .y_label_area_size(72)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .axis_desc_style((FONT, 16))
        .label_style((FONT, 13))
        .light_line_style(WHITE)
        .draw()
        .map_err(|x| e(&x))?;
    chart
        .draw_series(LineSeries::new(
            [(x0, base), (x1, base)],
            RGBColor(127, 127, 127).stroke_width(1),
        ))
        .map_err(|x| e(&x))?;
    Ok(chart)
}

/// C(r) with its error bars, 0 and ξ marked.
fn c_panel(top: &Area, a: &Analysis, c: &[(f64, f64)], (c0, c1): (f64, f64)) -> Result<()> {
    let e = |e: &dyn std::fmt::Display| anyhow!("{e}");
    let mut chart = r_panel(top, a.r_max.max(1e-9), (c0, c1), "C(r)", 0.0)?;
    let bars =
        a.r.iter()
            .zip(&a.c)
            .zip(&a.c_error)
            .filter_map(|((&r, y), err)| {
                let (y, err) = ((*y)?, (*err)?);
                Some(ErrorBar::new_vertical(
                    r,
                    y - err,
                    y,
                    y + err,
                    COLORS[0].filled(),
                    4,
                ))
            });
    chart.draw_series(bars).map_err(|x| e(&x))?;
    chart
        .draw_series(LineSeries::new(
            c.iter().copied(),
            COLORS[0].stroke_width(2),
        ))
        .map_err(|x| e(&x))?
        .label("C(r)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], COLORS[0].stroke_width(2)));
    if let Some(xi) = a.correlation_length {
        chart
            .draw_series(LineSeries::new(
                [(xi, c0), (xi, c1)],
                COLORS[3].stroke_width(2),
            ))
            .map_err(|x| e(&x))?
            .label(format!("ξ = {xi:.3}"))
            .legend(|(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], COLORS[3].stroke_width(2))
            });
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)
}

/// g(r), with the ideal gas's 1.
fn g_panel(bottom: &Area, g: &[(f64, f64)], r1: f64, y: (f64, f64)) -> Result<()> {
    r_panel(bottom, r1, y, "g(r)", 1.0)?
        .draw_series(LineSeries::new(
            g.iter().copied(),
            COLORS[2].stroke_width(2),
        ))
        .map_err(|x| anyhow!("{x}"))?;
    Ok(())
}
