//! The sweep's plot: the order parameter (or its Binder cumulant or susceptibility) against the
//! first numeric parameter with more than one value, one line per combination of the other
//! multi-valued parameters, from the typed rows.

use std::collections::HashMap;
use std::path::Path;

use anyhow::Result;

use super::param::Vary;
use super::points::Point;
use super::stats::Settings;
use super::table::Row;
use crate::plot;
use crate::scene::{Model, Scene};

/// What a sweep's plot shows on its y axis (`--plot-y`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum PlotY {
    /// The order parameter's mean, with its standard error over seeds.
    #[default]
    Order,
    /// The Binder cumulant 1 − ⟨φ⁴⟩/(3⟨φ²⟩²): curves of several sizes cross at a continuous
    /// transition and dip below 1/3 at a discontinuous one.
    Binder,
    /// N(⟨φ²⟩ − ⟨φ⟩²), which peaks at the transition.
    Susceptibility,
}

/// `rows[i]` is the row of `points[i]`.
pub fn plot_sweep(
    path: &Path,
    base: &Scene,
    varies: &[Vary],
    points: &[Point],
    rows: &[&Row],
    (settings, y): (Settings, PlotY),
) -> Result<()> {
    let multi: Vec<usize> = (0..varies.len())
        .filter(|&i| varies[i].values.len() > 1)
        .collect();
    // The x axis: the first multi-valued number; a categorical parameter (noise_kind) makes
    // one line per value instead, unless nothing else varies.
    let x = multi
        .iter()
        .copied()
        .find(|&i| !varies[i].param.is_categorical())
        .or(multi.first().copied())
        .unwrap_or(0);
    let mut series: Vec<plot::Series> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for (pt, row) in points.iter().zip(rows) {
        let label: Vec<String> = multi
            .iter()
            .filter(|&&i| i != x)
            .map(|&i| format!("{} = {}", varies[i].param.symbol(), pt.key[i]))
            .collect();
        let label = label.join(", ");
        let s = *index.entry(label.clone()).or_insert_with(|| {
            series.push(plot::Series {
                label,
                points: Vec::new(),
            });
            series.len() - 1
        });
        let st = &row.stats;
        let (value, se) = match y {
            PlotY::Order => (st.order, st.order_se),
            PlotY::Binder => (st.binder, f64::NAN),
            PlotY::Susceptibility => (st.susceptibility, f64::NAN),
        };
        series[s].points.push((pt.values[x], value, se));
    }
    for s in &mut series {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let fixed: Vec<String> = (0..varies.len())
        .filter(|i| !multi.contains(i))
        .map(|i| {
            format!(
                "{} = {}",
                varies[i].param.symbol(),
                varies[i].param.fmt(varies[i].values[0])
            )
        })
        .collect();
    let Settings {
        seeds,
        equilibrate,
        measure,
    } = settings;
    let mut title = format!(
        "{}: {equilibrate} + {measure} steps, {seeds} seed{}",
        base.name,
        if seeds == 1 { "" } else { "s" }
    );
    if !fixed.is_empty() {
        title.push_str(&format!(", {}", fixed.join(", ")));
    }
    let y_label = match (y, base.model) {
        (PlotY::Order, Model::Vicsek) => "order parameter v_a",
        (PlotY::Order, _) => "polarization",
        (PlotY::Binder, _) => "Binder cumulant 1 − <φ⁴>/(3<φ²>²)",
        (PlotY::Susceptibility, _) => "susceptibility N(<φ²> − <φ>²)",
    };
    plot::sweep_png(
        path,
        &plot::SweepPlot {
            title: &title,
            x_label: &varies[x].param.describe(),
            y_label,
            // The order parameter lives in [0, 1]: all of it is shown.
            y_range: (y == PlotY::Order).then_some((0.0, 1.05)),
            series: &series,
        },
    )
}
