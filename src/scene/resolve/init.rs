//! `scene.init`: where the agents start, and the fields each layout allows.

use super::*;
use crate::scene::file::InitFile;

/// Initial conditions: layout, velocities, and the fields each layout allows.
pub(super) fn resolve_init(
    f: &SceneFile,
    layout: Layout,
    dim: usize,
    world: &[f32; 3],
    agents: u32,
    src: &Source,
    cx: &mut Ctx,
) -> Init {
    let init_f = f.init.clone().unwrap_or_default();
    let velocity = init_f.velocity.unwrap_or(Velocity::Random);
    let mut init = Init {
        layout,
        velocity,
        center: None,
        radius: None,
        count: None,
        path: None,
        resolved_path: None,
        frame: None,
    };
    refuse_other_layouts_fields(cx, &init_f, layout);
    let disc_like = matches!(layout, Layout::Disc | Layout::Clusters);
    let min_side = world[..dim].iter().cloned().fold(f32::INFINITY, f32::min);
    if disc_like {
        let radius = pos_f(
            cx,
            "scene.init.radius",
            init_f.radius,
            (min_side / 4.0) as f64,
            false,
        );
        // Agents are placed in the world (wrapped or clamped into it): a disc wider than the
        // world is not a disc.
        let max_side = world[..dim].iter().cloned().fold(0.0, f32::max);
        if radius > max_side {
            cx.err(
                "scene.init.radius",
                format!(
                    "{} is wider than the world: at most its largest side, {max_side}",
                    super::fmt_num(init_f.radius.unwrap_or(0.0))
                ),
            );
        }
        init.radius = Some(radius);
    }
    if layout == Layout::Disc {
        init.center = Some(center(cx, init_f.center.as_deref(), world, dim));
    }
    if layout == Layout::Clusters {
        init.count = Some(cluster_count(cx, init_f.count, agents));
    }
    if layout == Layout::File {
        match &init_f.path {
            None => cx.err("scene.init.path", "required with layout \"file\""),
            Some(p) => {
                let pb = Path::new(p);
                init.resolved_path = Some(if pb.is_absolute() {
                    pb.to_path_buf()
                } else {
                    src.dir.join(pb)
                });
                init.path = Some(p.clone());
            }
        }
        init.frame = Some(init_f.frame.unwrap_or(-1));
    }
    init
}

/// The fields of `scene.init` that only other layouts than `layout` read, each an error.
fn refuse_other_layouts_fields(cx: &mut Ctx, init_f: &InitFile, layout: Layout) {
    let mut only = |present: bool, field: &str, layouts: &str| {
        if present {
            cx.err(
                &format!("scene.init.{field}"),
                format!("only allowed with layout {layouts}"),
            );
        }
    };
    if !matches!(layout, Layout::Disc | Layout::Clusters) {
        only(
            init_f.radius.is_some(),
            "radius",
            "\"disc\" or \"clusters\"",
        );
    }
    if layout != Layout::Disc {
        only(init_f.center.is_some(), "center", "\"disc\"");
    }
    if layout != Layout::Clusters {
        only(init_f.count.is_some(), "count", "\"clusters\"");
    }
    if layout != Layout::File {
        only(init_f.path.is_some(), "path", "\"file\"");
        only(init_f.frame.is_some(), "frame", "\"file\"");
    }
}

/// A disc's `scene.init.center`: `dim` finite numbers, by default the world's centre.
fn center(cx: &mut Ctx, given: Option<&[f64]>, world: &[f32; 3], dim: usize) -> Vec<f32> {
    match given {
        None => world[..dim].iter().map(|w| w * 0.5).collect(),
        Some(c) if c.len() != dim => {
            cx.err(
                "scene.init.center",
                format!("must have {dim} numbers, got {}", c.len()),
            );
            vec![0.0; dim]
        }
        Some(c) => (0..dim)
            .map(|k| {
                let path = format!("scene.init.center[{k}]");
                let x = any_f(cx, &path, Some(c[k]), 0.0);
                if !(0.0..=world[k]).contains(&x) {
                    let got = super::fmt_num(c[k]);
                    cx.err(
                        &path,
                        format!("must lie in the world, 0 to {}, got {got}", world[k]),
                    );
                }
                x
            })
            .collect(),
    }
}

/// `scene.init.count` of clusters: 1 to the number of agents, 8 by default.
fn cluster_count(cx: &mut Ctx, given: Option<i64>, agents: u32) -> u32 {
    match given {
        None => 8,
        Some(c) if c <= 0 => {
            cx.err("scene.init.count", format!("must be > 0, got {c}"));
            1
        }
        Some(c) if c > agents.max(1) as i64 => {
            cx.err(
                "scene.init.count",
                format!("must be at most the number of agents ({agents}), got {c}"),
            );
            1
        }
        Some(c) => c as u32,
    }
}
