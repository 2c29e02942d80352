//! What a renderer is built from besides its passes: its targets, sampler, readback sizes and
//! overlay pass.

use super::*;

/// The two HDR targets (trails ping-pong between them) and the display image, `w`×`h`;
/// `compute`: the HDR targets are also written by compute passes (storage textures).
pub(super) fn targets(
    device: &wgpu::Device,
    w: u32,
    h: u32,
    display: wgpu::TextureFormat,
    compute: bool,
) -> ([wgpu::TextureView; 2], wgpu::Texture, wgpu::TextureView) {
    let target = |label: &str, format, usage| {
        device.create_texture(&wgpu::TextureDescriptor {
            label: Some(label),
            size: wgpu::Extent3d {
                width: w,
                height: h,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format,
            usage,
            view_formats: &[],
        })
    };
    let rt = wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING;
    let storage = if compute {
        wgpu::TextureUsages::STORAGE_BINDING
    } else {
        wgpu::TextureUsages::empty()
    };
    let hdr_views = [0, 1]
        .map(|_| target("hdr target", HDR_FORMAT, rt | storage).create_view(&Default::default()));
    // Copied out (read back), and in: a display image drawn on the CPU (`soft_frame`).
    let copy = wgpu::TextureUsages::COPY_SRC | wgpu::TextureUsages::COPY_DST;
    let ldr = target("display image", display, rt | copy);
    let ldr_view = ldr.create_view(&Default::default());
    (hdr_views, ldr, ldr_view)
}

/// Bytes of a display-image row as copied to a buffer (padded to wgpu's alignment).
pub(super) fn padded_row(w: u32, output: Output) -> u32 {
    (w * output.texel_bytes()).div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT)
        * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT
}

/// The overlays' pass, where the look asks for any: they go on display images (not on
/// linear light), with the colour map's bytes `lut` for the legend.
pub(super) fn overlay_pass(
    device: &wgpu::Device,
    look: &Settings,
    output: Output,
    lut: &[u8],
) -> Option<OverlayPass> {
    (look.overlay.any() && output != Output::Linear).then(|| {
        OverlayPass::new(
            device,
            look.overlay.clone(),
            look.color,
            lut.to_vec(),
            look.width,
            look.height,
            output.display_format(),
        )
    })
}

/// The sampler the passes read their textures through: linear, clamped to the edges.
pub(super) fn linear_sampler(device: &wgpu::Device) -> wgpu::Sampler {
    device.create_sampler(&wgpu::SamplerDescriptor {
        label: Some("linear clamp sampler"),
        address_mode_u: wgpu::AddressMode::ClampToEdge,
        address_mode_v: wgpu::AddressMode::ClampToEdge,
        mag_filter: wgpu::FilterMode::Linear,
        min_filter: wgpu::FilterMode::Linear,
        ..Default::default()
    })
}

/// Bytes of one staging buffer of the readback ring: the Y'CbCr planes for video, else the
/// display image's rows (`padded_row` bytes each).
pub(super) fn staging_bytes(yuv: Option<&YuvPass>, padded_row: u32, height: u32) -> u64 {
    match yuv {
        Some(y) => y.params().buffer_bytes(),
        None => padded_row as u64 * height as u64,
    }
}
