//! What a render asks of the adapter, checked before any pass is built. A size or an agent
//! count past one of the device's limits is an error naming the limit, its value here and the
//! largest size (or agent count) that fits — never a panic inside wgpu.
//!
//! Each pass's needs, as a function of the output size and the agents:
//!
//! | pass | resource | limit |
//! |---|---|---|
//! | every pass | HDR target, display image (w × h) | `max_texture_dimension_2d` |
//! | bloom | mips of w/2 × h/2 and smaller | (within the above) |
//! | yuv | the Y plane (w × h) and two chroma planes, rendered into integer textures | (within the above) |
//! | readback | three staging buffers of one frame (yuv planes or RGBA, rows padded) | `max_buffer_size` |
//! | agents | positions + velocities, one buffer (2 · dim · 4 bytes an agent) | `max_buffer_size` |
//! | agents | one vertex buffer per attribute (5 in 2D, 7 in 3D) | `max_vertex_buffers`, `max_vertex_attributes`, `max_bind_groups_plus_vertex_buffers` |
//! | density | positions (dim · 4 bytes an agent) and one value an agent, bound as storage; 5 storage buffers in one stage; per-agent dispatch | `max_storage_buffer_binding_size`, `max_storage_buffers_per_shader_stage`, `max_compute_workgroups_per_dimension` |

use super::yuv::YuvParams;
use super::Output;

/// Workgroup width of the compute pass (density.wgsl).
const WORKGROUP: u32 = 64;
/// Groups along x of a 2D dispatch (see `dispatch_2d`).
const DISPATCH_X: u64 = 65535;

/// What one render asks of the adapter.
#[derive(Clone, Copy, Debug)]
pub struct Needs {
    pub width: u32,
    pub height: u32,
    pub output: Output,
    /// Agents the buffers hold (the recording's count, or more).
    pub agents: u32,
    pub dim: usize,
    pub density: bool,
}

/// One limit a render exceeds.
#[derive(Clone, Debug, PartialEq)]
pub struct Exceeded {
    /// What needs it, e.g. "the yuv pass needs a 403 MB storage buffer".
    pub need: String,
    /// The limit's value here, in the need's units, e.g. "134 MB".
    pub allowed: String,
    /// The limit's name as wgpu spells it.
    pub limit: &'static str,
}

fn mb(bytes: u64) -> String {
    let m = bytes as f64 / 1e6;
    if m >= 10.0 {
        format!("{m:.0} MB")
    } else {
        format!("{m:.2} MB")
    }
}

/// Groups of a 2D dispatch covering `groups`: (x, y) as `dispatch_2d` splits them.
fn dispatch(groups: u64) -> (u64, u64) {
    if groups <= DISPATCH_X {
        (groups.max(1), 1)
    } else {
        (DISPATCH_X, groups.div_ceil(DISPATCH_X))
    }
}

fn workgroups(l: &wgpu::Limits, pass: &str, items: u64) -> Option<Exceeded> {
    let (x, y) = dispatch(items.div_ceil(WORKGROUP as u64));
    let most = x.max(y);
    (most > l.max_compute_workgroups_per_dimension as u64).then(|| Exceeded {
        need: format!("the {pass} pass needs {most} workgroups along one dimension"),
        allowed: l.max_compute_workgroups_per_dimension.to_string(),
        limit: "max_compute_workgroups_per_dimension",
    })
}

fn buffer(bytes: u64, allowed: u64, need: String, limit: &'static str) -> Option<Exceeded> {
    (bytes > allowed).then(|| Exceeded {
        need,
        allowed: mb(allowed),
        limit,
    })
}

/// The limits that depend on the output size, the first one exceeded.
fn size_exceeded(l: &wgpu::Limits, n: &Needs) -> Option<Exceeded> {
    let (w, h) = (n.width, n.height);
    let side = w.max(h);
    if side > l.max_texture_dimension_2d {
        return Some(Exceeded {
            need: format!("the render targets need textures {side} pixels a side"),
            allowed: format!("{} pixels", l.max_texture_dimension_2d),
            limit: "max_texture_dimension_2d",
        });
    }
    let frame = match n.output {
        Output::Yuv(f) => YuvParams::new(w, h, f).buffer_bytes(),
        _ => {
            let row = (w as u64 * n.output.texel_bytes() as u64)
                .div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT as u64)
                * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT as u64;
            row * h as u64
        }
    };
    buffer(
        frame,
        l.max_buffer_size,
        format!("reading a frame back needs a {} staging buffer", mb(frame)),
        "max_buffer_size",
    )
}

/// The limits that depend on the agents (and dimensions), the first one exceeded.
fn agents_exceeded(l: &wgpu::Limits, n: &Needs) -> Option<Exceeded> {
    let agents = n.agents.max(1) as u64;
    let dim = n.dim as u64;
    let all = 2 * dim * agents * 4;
    if let Some(e) = buffer(
        all,
        l.max_buffer_size,
        format!("the agents pass needs a {} buffer", mb(all)),
        "max_buffer_size",
    ) {
        return Some(e);
    }
    if n.density {
        let pos = dim * agents * 4;
        if let Some(e) = buffer(
            pos,
            l.max_storage_buffer_binding_size,
            format!("the density pass needs a {} storage buffer", mb(pos)),
            "max_storage_buffer_binding_size",
        )
        .or_else(|| workgroups(l, "density", agents))
        {
            return Some(e);
        }
    }
    None
}

/// The limits that depend on neither: what the passes' layouts ask for.
fn fixed_exceeded(l: &wgpu::Limits, n: &Needs) -> Option<Exceeded> {
    let count = |need: String, have: u32, allowed: u32, limit| {
        (have > allowed).then(|| Exceeded {
            need,
            allowed: allowed.to_string(),
            limit,
        })
    };
    let attrs = if n.dim == 3 { 7 } else { 5 };
    let compute = matches!(n.output, Output::Yuv(_)) || n.density;
    count(
        format!("the agents pass needs {attrs} vertex buffers"),
        attrs,
        l.max_vertex_buffers,
        "max_vertex_buffers",
    )
    .or_else(|| {
        count(
            format!("the agents pass needs {attrs} vertex attributes"),
            attrs,
            l.max_vertex_attributes,
            "max_vertex_attributes",
        )
    })
    .or_else(|| {
        count(
            format!(
                "the agents pass needs {} bind groups and vertex buffers",
                attrs + 1
            ),
            attrs + 1,
            l.max_bind_groups_plus_vertex_buffers,
            "max_bind_groups_plus_vertex_buffers",
        )
    })
    .or_else(|| {
        n.density
            .then(|| {
                count(
                    "the density pass needs 5 storage buffers in one shader".into(),
                    5,
                    l.max_storage_buffers_per_shader_stage,
                    "max_storage_buffers_per_shader_stage",
                )
            })
            .flatten()
    })
    .or_else(|| {
        compute
            .then(|| {
                count(
                    format!("the compute passes need workgroups {WORKGROUP} wide"),
                    WORKGROUP,
                    l.max_compute_workgroup_size_x,
                    "max_compute_workgroup_size_x",
                )
                .or_else(|| {
                    count(
                        format!("the compute passes need {WORKGROUP} invocations a workgroup"),
                        WORKGROUP,
                        l.max_compute_invocations_per_workgroup,
                        "max_compute_invocations_per_workgroup",
                    )
                })
            })
            .flatten()
    })
}

/// The first limit this render exceeds, if any.
pub fn exceeded(l: &wgpu::Limits, n: &Needs) -> Option<Exceeded> {
    fixed_exceeded(l, n)
        .or_else(|| agents_exceeded(l, n))
        .or_else(|| size_exceeded(l, n))
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The largest size of the same shape as `n`'s (even sides) that fits every limit, if any.
pub fn largest_size(l: &wgpu::Limits, n: &Needs) -> Option<(u32, u32)> {
    let at = |h2: u32| {
        let h = 2 * h2;
        let w = ((n.width as f64 * h as f64 / n.height as f64 / 2.0).round() as u32).max(1) * 2;
        (w, h)
    };
    let fits = |h2: u32| {
        let (w, h) = at(h2);
        exceeded(
            l,
            &Needs {
                width: w,
                height: h,
                ..*n
            },
        )
        .is_none()
    };
    // Largest h/2 in 1..=height/2 that fits (fitting shrinks monotonically with the size).
    let (mut lo, mut hi) = (0u32, n.height / 2);
    if !fits(1) {
        return None;
    }
    lo = lo.max(1);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Some(at(lo))
}

/// The most agents that fit with `n`'s size and look.
pub fn most_agents(l: &wgpu::Limits, n: &Needs) -> u32 {
    let fits = |a: u32| exceeded(l, &Needs { agents: a, ..*n }).is_none();
    let (mut lo, mut hi) = (0u32, n.agents);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// Checks `n` against `l`; the error names the limit, its value on `adapter` and what fits,
/// and blames the size on `flag` (`--size`, `--render-sizes`).
pub fn check(l: &wgpu::Limits, n: &Needs, adapter: &str, flag: &str) -> anyhow::Result<()> {
    let Some(e) = exceeded(l, n) else {
        return Ok(());
    };
    let (w, h) = (n.width, n.height);
    let head = format!(
        "{}, but {adapter} allows {} ({})",
        e.need, e.allowed, e.limit
    );
    // Is it the size? Then say which size of the same shape fits.
    if size_exceeded(l, n).as_ref() == Some(&e) {
        let shape = {
            let g = gcd(w, h).max(1);
            let (a, b) = (w / g, h / g);
            if a <= 64 && b <= 64 {
                format!("{a}:{b} ")
            } else {
                String::new()
            }
        };
        let fit = match largest_size(l, n) {
            Some((fw, fh)) => format!("; the largest {shape}size that fits is {fw}x{fh}"),
            None => String::new(),
        };
        anyhow::bail!("{flag} {w}x{h}: {head}{fit}");
    }
    if agents_exceeded(l, n).as_ref() == Some(&e) {
        let most = most_agents(l, n);
        anyhow::bail!(
            "{} agents: {head}; at most {most} agents fit{}",
            n.agents,
            if n.density {
                " (fewer with --color density)"
            } else {
                ""
            }
        );
    }
    anyhow::bail!("{head}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs(w: u32, h: u32) -> Needs {
        Needs {
            width: w,
            height: h,
            output: Output::YUV420P,
            agents: 1000,
            dim: 2,
            density: false,
        }
    }

    /// lavapipe's: 16384 a side, 128 MiB storage bindings.
    fn lavapipe() -> wgpu::Limits {
        wgpu::Limits {
            max_texture_dimension_2d: 16384,
            max_storage_buffer_binding_size: 1 << 27,
            max_buffer_size: 1 << 32,
            ..wgpu::Limits::default()
        }
    }

    #[test]
    fn the_staging_buffer_is_the_limit_where_buffers_are_small() {
        // lavapipe's own limits take 16384x16384 video (no pass binds the frame as storage).
        assert!(exceeded(&lavapipe(), &needs(16384, 16384)).is_none());
        let l = wgpu::Limits {
            max_buffer_size: 1 << 28,
            ..lavapipe()
        };
        let e = exceeded(&l, &needs(16384, 16384)).unwrap();
        assert_eq!(e.limit, "max_buffer_size");
        assert_eq!(e.need, "reading a frame back needs a 403 MB staging buffer");
        let (w, h) = largest_size(&l, &needs(16384, 16384)).unwrap();
        assert_eq!(w, h);
        assert!(exceeded(&l, &needs(w, h)).is_none());
        assert!(exceeded(&l, &needs(w + 2, h + 2)).is_some());
        let msg = check(&l, &needs(16384, 16384), "llvmpipe", "--size")
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with("--size 16384x16384: reading a frame back needs a 403 MB"),
            "{msg}"
        );
        assert!(msg.contains("(max_buffer_size)"), "{msg}");
        assert!(
            msg.contains(&format!("the largest 1:1 size that fits is {w}x{h}")),
            "{msg}"
        );
    }

    #[test]
    fn texture_side_then_shape_kept() {
        let l = lavapipe();
        let e = exceeded(&l, &needs(32768, 18432)).unwrap();
        assert_eq!(e.limit, "max_texture_dimension_2d");
        let (w, h) = largest_size(&l, &needs(32768, 18432)).unwrap();
        assert!(w <= 16384 && h <= 16384);
        // 16:9 kept (to within rounding to even sides).
        assert!((w as f64 / h as f64 - 16.0 / 9.0).abs() < 0.01, "{w}x{h}");
        // PNG frames have no yuv buffer: only the readback and the texture side count.
        let png = Needs {
            output: Output::Rgba8,
            ..needs(16384, 16384)
        };
        assert!(exceeded(&l, &png).is_none());
    }

    #[test]
    fn agents_and_layouts() {
        let l = lavapipe();
        let many = Needs {
            agents: 20_000_000,
            dim: 3,
            density: true,
            ..needs(320, 180)
        };
        let e = exceeded(&l, &many).unwrap();
        assert_eq!(e.limit, "max_storage_buffer_binding_size");
        let most = most_agents(&l, &many);
        assert_eq!(most as u64, (1u64 << 27) / 12);
        let msg = check(&l, &many, "x", "--size").unwrap_err().to_string();
        assert!(
            msg.starts_with("20000000 agents: the density pass"),
            "{msg}"
        );
        let downlevel = wgpu::Limits {
            max_storage_buffers_per_shader_stage: 4,
            ..lavapipe()
        };
        let e = exceeded(&downlevel, &many).unwrap();
        assert_eq!(e.limit, "max_storage_buffers_per_shader_stage");
        assert!(largest_size(&downlevel, &many).is_none());
    }
}
