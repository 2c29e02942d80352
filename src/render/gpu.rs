//! The GPU context: a wgpu device with no window. A real GPU is preferred; where none exists a
//! software driver (Mesa lavapipe through Vulkan, or llvmpipe through GL/EGL) does the work.

use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};

/// The packages that give a Debian/Ubuntu machine a software GPU (and the video encoder).
pub const GPU_PACKAGES: &str =
    "mesa-vulkan-drivers libvulkan1 libegl1 libegl-mesa0 libgl1-mesa-dri";

/// A device and its queue, plus what was chosen, for the one-line report. A clone shares the
/// device (and its errors).
#[derive(Clone)]
pub struct Gpu {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub info: wgpu::AdapterInfo,
    pub limits: wgpu::Limits,
    /// The first error the device reported and nobody has taken yet (validation, out of
    /// memory): wgpu's default is to panic on it.
    errors: Arc<Mutex<Option<String>>>,
}

/// One adapter as `forge gpus` lists it.
#[derive(Clone, Debug)]
pub struct AdapterSummary {
    pub index: usize,
    pub info: wgpu::AdapterInfo,
    pub max_texture: u32,
}

fn instance() -> wgpu::Instance {
    with_backends(wgpu::InstanceDescriptor::new_without_display_handle_from_env())
}

/// An instance whose adapters can also present to windows of `display` (GL through EGL needs
/// the display it will present on; Vulkan does not).
pub fn instance_for_display(display: Box<dyn wgpu::wgt::WgpuHasDisplayHandle>) -> wgpu::Instance {
    with_backends(wgpu::InstanceDescriptor::new_with_display_handle_from_env(
        display,
    ))
}

fn with_backends(mut desc: wgpu::InstanceDescriptor) -> wgpu::Instance {
    // Vulkan first (real GPUs, lavapipe); GL through EGL as the fallback. `WGPU_BACKEND`
    // (read by `from_env`) narrows this.
    if std::env::var_os("WGPU_BACKEND").is_none() {
        desc.backends = wgpu::Backends::VULKAN | wgpu::Backends::GL;
    }
    wgpu::Instance::new(desc)
}

/// Lower is better: a real GPU before a software one, Vulkan before GL.
fn rank(info: &wgpu::AdapterInfo) -> (u8, u8) {
    let kind = match info.device_type {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 4,
    };
    let backend = match info.backend {
        wgpu::Backend::Vulkan => 0,
        wgpu::Backend::Gl => 2,
        _ => 1,
    };
    (kind, backend)
}

fn adapters() -> Vec<wgpu::Adapter> {
    let inst = instance();
    let mut all = pollster::block_on(inst.enumerate_adapters(wgpu::Backends::all()));
    all.sort_by_key(|a| rank(&a.get_info()));
    all
}

/// Every adapter present, best first (the order `--adapter` indexes).
pub fn list() -> Vec<AdapterSummary> {
    adapters()
        .into_iter()
        .enumerate()
        .map(|(index, a)| AdapterSummary {
            index,
            info: a.get_info(),
            max_texture: a.limits().max_texture_dimension_2d,
        })
        .collect()
}

/// `Cpu`/`Other` etc. in words.
pub fn kind_name(t: wgpu::DeviceType) -> &'static str {
    match t {
        wgpu::DeviceType::DiscreteGpu => "discrete GPU",
        wgpu::DeviceType::IntegratedGpu => "integrated GPU",
        wgpu::DeviceType::VirtualGpu => "virtual GPU",
        wgpu::DeviceType::Cpu => "software (CPU)",
        wgpu::DeviceType::Other => "other",
    }
}

/// The line printed when rendering starts.
pub fn describe(info: &wgpu::AdapterInfo) -> String {
    let driver = if info.driver.is_empty() {
        String::new()
    } else {
        format!(", {} {}", info.driver, info.driver_info)
    };
    format!(
        "{} ({:?}, {}{})",
        info.name,
        info.backend,
        kind_name(info.device_type),
        driver.trim_end()
    )
}

/// The backends `WGPU_BACKEND` may name in this build (wgpu's names; others are not built).
const BUILT_BACKENDS: &[&str] = &["vulkan", "vk", "gl", "gles", "opengl"];

/// What is wrong with `WGPU_BACKEND`, if it is set to something this build cannot use (wgpu
/// itself skips an unknown name silently and then finds no adapter at all).
pub fn backend_env_problem() -> Option<String> {
    let v = std::env::var("WGPU_BACKEND").ok()?;
    let bad: Vec<&str> = v
        .split(',')
        .map(str::trim)
        .filter(|b| !BUILT_BACKENDS.contains(&b.to_lowercase().as_str()))
        .collect();
    if v.trim().is_empty() || !bad.is_empty() {
        let what = if v.trim().is_empty() { "" } else { bad[0] };
        return Some(format!(
            "WGPU_BACKEND={v:?}: {what:?} is not a backend this build can use (vulkan or gl, \
             comma-separated; unset WGPU_BACKEND to try both)"
        ));
    }
    None
}

/// The error when no adapter exists at all.
pub fn no_adapter_message() -> String {
    if let Some(p) = backend_env_problem() {
        return p;
    }
    let only = match std::env::var("WGPU_BACKEND") {
        Ok(v) => format!(" with WGPU_BACKEND={v}"),
        Err(_) => String::new(),
    };
    format!(
        "no GPU adapter found{only} (neither Vulkan nor GL/EGL); for a software renderer install \
         Mesa: apt-get install {GPU_PACKAGES}"
    )
}

/// The best of `all` (sorted best first), or the one `choice` names: an index from `forge
/// gpus`, or a part of its name, case-insensitive.
fn pick(all: Vec<wgpu::Adapter>, choice: Option<&str>) -> Result<wgpu::Adapter> {
    if all.is_empty() {
        bail!(no_adapter_message());
    }
    Ok(match choice {
        None => all.into_iter().next().expect("not empty"),
        Some(c) => {
            let names: Vec<String> = all.iter().map(|a| a.get_info().name).collect();
            let pick = match c.parse::<usize>() {
                Ok(i) => all.into_iter().nth(i),
                Err(_) => {
                    let c = c.to_lowercase();
                    all.into_iter()
                        .find(|a| a.get_info().name.to_lowercase().contains(&c))
                }
            };
            match pick {
                Some(a) => a,
                None => bail!(
                    "--adapter: no adapter {c:?} (present: {})",
                    names
                        .iter()
                        .enumerate()
                        .map(|(i, n)| format!("{i}: {n}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        }
    })
}

impl Gpu {
    /// The best adapter, or the one `choice` names (an index from `forge gpus`, or a part of
    /// its name, case-insensitive).
    pub fn new(choice: Option<&str>) -> Result<Gpu> {
        if let Some(p) = backend_env_problem() {
            bail!(p);
        }
        Gpu::open(&pick(adapters(), choice)?)
    }

    /// The best adapter of `instance` that can present to `surface`, or the one `choice`
    /// names among those, opened; with the adapter (it holds the surface's capabilities).
    pub fn for_surface(
        instance: &wgpu::Instance,
        surface: &wgpu::Surface<'_>,
        choice: Option<&str>,
    ) -> Result<(Gpu, wgpu::Adapter)> {
        if let Some(p) = backend_env_problem() {
            bail!(p);
        }
        let mut all = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
        let present = all.len();
        all.retain(|a| a.is_surface_supported(surface));
        if all.is_empty() && present > 0 {
            bail!("none of the {present} GPU adapters here can present to a window");
        }
        all.sort_by_key(|a| rank(&a.get_info()));
        let adapter = pick(all, choice)?;
        Ok((Gpu::open(&adapter)?, adapter))
    }

    /// Opens `adapter`'s device; its errors are taken by [`Gpu::check`] instead of panicking.
    fn open(adapter: &wgpu::Adapter) -> Result<Gpu> {
        let info = adapter.get_info();
        let limits = adapter.limits();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("forge render device"),
            required_features: wgpu::Features::empty(),
            required_limits: limits.clone(),
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        }))
        .with_context(|| format!("cannot open the GPU adapter {}", info.name))?;
        // Errors the device reports become errors of the render (see `check`), never a panic.
        let errors: Arc<Mutex<Option<String>>> = Arc::default();
        let slot = errors.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            let mut first = slot.lock().unwrap_or_else(|p| p.into_inner());
            first.get_or_insert_with(|| e.to_string());
        }));
        Ok(Gpu {
            device,
            queue,
            info,
            limits,
            errors,
        })
    }

    /// Fails with the first error the device reported since the last call, if any, saying
    /// what was being done.
    pub fn check(&self, doing: impl FnOnce() -> String) -> Result<()> {
        let e = self.errors.lock().unwrap_or_else(|p| p.into_inner()).take();
        match e {
            Some(e) => bail!(
                "the GPU ({}) failed {}: {}",
                self.info.name,
                doing(),
                e.trim()
            ),
            None => Ok(()),
        }
    }

    /// The largest width or height a render target may have here.
    pub fn max_size(&self) -> u32 {
        self.limits.max_texture_dimension_2d
    }
}
