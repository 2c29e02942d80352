//! The WGSL of the shader modules the passes build. Each file of shaders/ is a module of its
//! own, except the parts appended to others: ycbcr.wgsl (the Y'CbCr codes and their dither)
//! completes tonemap.wgsl (whose `fs_tonemap_planes*` entries draw the planes of a video
//! frame) and yuv.wgsl; colour.wgsl (the agents' colour by mode) completes agents.wgsl and
//! splat.wgsl. The tests check every module as built, through [`module`].

/// tonemap.wgsl with the Y'CbCr codes.
pub const TONEMAP: &str = concat!(
    include_str!("../../shaders/tonemap.wgsl"),
    include_str!("../../shaders/ycbcr.wgsl")
);

/// yuv.wgsl with the Y'CbCr codes.
pub const YUV: &str = concat!(
    include_str!("../../shaders/yuv.wgsl"),
    include_str!("../../shaders/ycbcr.wgsl")
);

/// agents.wgsl with the agents' colour.
pub const AGENTS: &str = concat!(
    include_str!("../../shaders/agents.wgsl"),
    include_str!("../../shaders/colour.wgsl")
);

/// splat.wgsl with the agents' colour.
pub const SPLAT: &str = concat!(
    include_str!("../../shaders/splat.wgsl"),
    include_str!("../../shaders/colour.wgsl")
);

/// Files of shaders/ appended to others, not modules of their own.
pub const PARTS: &[&str] = &["ycbcr.wgsl", "colour.wgsl"];

/// The module whose own file in shaders/ is `file` (which holds `src`), as the passes build
/// it; `None` for a part.
pub fn module(file: &str, src: &str) -> Option<String> {
    match file {
        "tonemap.wgsl" => Some(TONEMAP.to_string()),
        "yuv.wgsl" => Some(YUV.to_string()),
        "agents.wgsl" => Some(AGENTS.to_string()),
        "splat.wgsl" => Some(SPLAT.to_string()),
        f if PARTS.contains(&f) => None,
        _ => Some(src.to_string()),
    }
}

/// A shader module of `source`, labelled `label`.
pub fn create(device: &wgpu::Device, label: &str, source: &'static str) -> wgpu::ShaderModule {
    device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(label),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    })
}
