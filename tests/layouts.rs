//! The structs the CPU hands to the GPU, field by field: every `#[repr(C)]` uniform struct of
//! the renderer against its WGSL twin (reflected by naga: each member's offset and size, the
//! struct's size), and every WGSL uniform is one of them. The CUDA side's `Params` is checked
//! against kernels/forge_math.h by tests/kernels_host.rs (C++ `offsetof`). No GPU needed.

use std::collections::BTreeMap;
use std::path::Path;

use forge::player::panel_paint;
use forge::render::{agents, bloom, density, obstacles, splat, tonemap, wgsl, yuv};

/// (field name, offset, size) of a Rust struct's fields.
macro_rules! rust_layout {
    ($t:ty, $($f:ident),+ $(,)?) => {{
        let v: Vec<(&str, usize, usize)> = vec![$((
            stringify!($f),
            std::mem::offset_of!($t, $f),
            {
                fn size_of_field<T>(_: impl Fn(&$t) -> &T) -> usize {
                    std::mem::size_of::<T>()
                }
                size_of_field(|x: &$t| &x.$f)
            },
        )),+];
        (v, std::mem::size_of::<$t>())
    }};
}

/// Member name → (offset, size) of struct `name` in the module of `shaders/{file}` (with the
/// parts appended to it), and its size.
fn wgsl_layout(file: &str, name: &str) -> (BTreeMap<String, (usize, usize)>, usize) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("shaders")
        .join(file);
    let src = std::fs::read_to_string(&path).unwrap();
    let src = wgsl::module(file, &src).expect("a module, not a part");
    let module = naga::front::wgsl::parse_str(&src).unwrap();
    let gctx = module.to_ctx();
    for (_, ty) in module.types.iter() {
        if ty.name.as_deref() != Some(name) {
            continue;
        }
        let naga::TypeInner::Struct { members, span } = &ty.inner else {
            panic!("{file}: {name} is not a struct");
        };
        let m = members
            .iter()
            .map(|m| {
                let size = module.types[m.ty].inner.size(gctx) as usize;
                (
                    m.name.clone().unwrap_or_default(),
                    (m.offset as usize, size),
                )
            })
            .collect();
        return (m, *span as usize);
    }
    panic!("{file}: no struct {name}");
}

/// The Rust fields (padding left out) at the WGSL `Params` members' offsets and sizes, and the
/// same struct size.
fn same_layout(file: &str, rust: (Vec<(&str, usize, usize)>, usize)) {
    same_layout_of(file, "Params", rust)
}

/// [`same_layout`] for the WGSL struct `name`.
fn same_layout_of(file: &str, ty: &str, (rust, rust_size): (Vec<(&str, usize, usize)>, usize)) {
    let (wgsl, wgsl_size) = wgsl_layout(file, ty);
    assert_eq!(
        rust_size, wgsl_size,
        "{file}: the Rust struct is {rust_size} bytes, WGSL's {ty} {wgsl_size}"
    );
    for (name, off, size) in &rust {
        let Some(&(w_off, w_size)) = wgsl.get(*name) else {
            panic!(
                "{file}: {ty} has no member {name} (members: {:?})",
                wgsl.keys()
            );
        };
        assert_eq!(
            (*off, *size),
            (w_off, w_size),
            "{file}: {name} is at {off} ({size} bytes) in Rust, at {w_off} ({w_size} bytes) in WGSL"
        );
    }
    // Every WGSL member but padding has its Rust field.
    for name in wgsl
        .keys()
        .filter(|n| !n.trim_start_matches('_').starts_with("pad"))
    {
        assert!(
            rust.iter().any(|(r, _, _)| r == name),
            "{file}: {ty}.{name} has no Rust field of that name"
        );
    }
}

#[test]
fn uniform_structs_match_their_wgsl_field_by_field() {
    same_layout(
        "agents.wgsl",
        rust_layout!(
            agents::AgentParams,
            view_min,
            view_size,
            world,
            viewport,
            range,
            radius_px,
            core,
            mode,
            copies,
            intensity,
            halo,
            view_proj,
            eye,
            fog,
            period,
            ref_dist,
            anchor,
            min_image,
            fog_near,
            fog_far,
            box_level,
            near,
            shutter,
            stacking,
            stack_area,
            shape,
            mean_heading,
            sized,
            fixed,
        ),
    );
    same_layout(
        "bloom.wgsl",
        rust_layout!(bloom::BloomParams, threshold, knee, radius),
    );
    same_layout(
        "density.wgsl",
        rust_layout!(
            density::DensityParams,
            grid,
            n,
            wrap,
            world,
            grid_z,
            world_z
        ),
    );
    same_layout(
        "tonemap.wgsl",
        rust_layout!(
            tonemap::TonemapParams,
            background,
            background_top,
            exposure,
            bloom,
            vignette,
            aspect,
            seed,
            dither,
            linear,
            ink,
            contrast,
            saturation,
            lift,
            gamma,
            gain,
            bars,
            alpha,
            plate,
            world_rect,
        ),
    );
    same_layout("panel.wgsl", rust_layout!(panel_paint::PanelParams, size));
    same_layout(
        "splat.wgsl",
        rust_layout!(
            splat::SplatParams,
            view_min,
            view_size,
            world,
            viewport,
            range,
            mode,
            copies,
            n,
            guard,
            padded,
            crowd,
            stacking,
            stack_area,
            mean_heading,
            scale,
            inv_scale,
            fade,
            carry,
            intensity,
            dim,
            scissor,
            fixed,
            taps,
        ),
    );
    same_layout(
        "obstacles.wgsl",
        rust_layout!(
            obstacles::ObstacleParams,
            view_min,
            view_size,
            viewport,
            line_px,
            pad0,
            fill,
            line,
        ),
    );
    same_layout_of(
        "yuv.wgsl",
        "YcbcrParams",
        rust_layout!(yuv::YuvParams, width, height, bits, chroma_rows, seeds),
    );
}

/// Every uniform a shader declares is a `Params` the test above checks.
#[test]
fn every_wgsl_uniform_is_checked() {
    let checked = [
        "agents.wgsl",
        "bloom.wgsl",
        "density.wgsl",
        "obstacles.wgsl",
        "panel.wgsl",
        "splat.wgsl",
        "tonemap.wgsl",
        "yuv.wgsl",
    ];
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let file = p.file_name().unwrap().to_string_lossy().into_owned();
        let src = std::fs::read_to_string(&p).unwrap();
        let Some(src) = wgsl::module(&file, &src) else {
            continue; // a part: checked in the modules it completes
        };
        let module = naga::front::wgsl::parse_str(&src).unwrap();
        for (_, g) in module.global_variables.iter() {
            if g.space != naga::AddressSpace::Uniform {
                continue;
            }
            let ty = module.types[g.ty].name.clone().unwrap_or_default();
            // The Y'CbCr codes' uniform (ycbcr.wgsl) is checked within yuv.wgsl.
            assert!(
                (ty == "Params" || ty == "YcbcrParams") && checked.contains(&file.as_str()),
                "{file}: the uniform of type {ty} is not checked against a Rust struct"
            );
        }
    }
}
