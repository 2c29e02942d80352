//! The kernels' source and their compilation: NVRTC with the determinism contract's options,
//! for the device present, and a CUBIN cache under `$XDG_CACHE_HOME/forge` keyed by source,
//! architecture, options and NVRTC version.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use super::CudaError;

/// The per-agent arithmetic (`__host__ __device__`), shared with the host test build.
pub const MATH_H: &str = include_str!("../../../kernels/forge_math.h");
/// The step's kernels.
pub const STEP_CU: &str = include_str!("../../../kernels/step.cu");

/// NVRTC options besides the architecture. `--fmad=false` is the contract (no FMA contraction);
/// the rest spell out NVRTC's defaults so that nobody can flip them to fast math unnoticed.
pub const NVRTC_OPTIONS: &[&str] = &[
    "--fmad=false",
    "--prec-div=true",
    "--prec-sqrt=true",
    "--ftz=false",
    "--std=c++17",
];

/// What to install, for the error messages.
pub const INSTALL_NVRTC: &str =
    "install NVRTC (e.g. `pip install nvidia-cuda-nvrtc` and put its lib folder on LD_LIBRARY_PATH, or the CUDA toolkit)";

/// The whole kernel source as NVRTC sees it: step.cu with forge_math.h pasted in place of its
/// `#include` (NVRTC has no file system to read it from).
pub fn kernel_source() -> String {
    STEP_CU.replacen("#include \"forge_math.h\"", MATH_H, 1)
}

/// Whether libnvrtc can be loaded.
pub fn nvrtc_present() -> bool {
    // SAFETY: only tries to dlopen the library.
    catch_unwind(|| unsafe { cudarc::nvrtc::sys::is_culib_present() }).unwrap_or(false)
}

/// A compiled kernel image and NVRTC's log (empty when there was nothing to say).
pub struct Compiled {
    pub cubin: Vec<u8>,
    pub log: String,
}

/// Compile the kernels with NVRTC for `arch` (e.g. "sm_90") to CUBIN. Warnings are in `log`.
pub fn compile(arch: &str) -> Result<Compiled, CudaError> {
    if !nvrtc_present() {
        return Err(CudaError::NoNvrtc);
    }
    let src = kernel_source();
    catch_unwind(AssertUnwindSafe(|| compile_inner(&src, arch)))
        .unwrap_or(Err(CudaError::NvrtcPanicked))
}

fn compile_inner(src: &str, arch: &str) -> Result<Compiled, CudaError> {
    use cudarc::nvrtc::{result, sys};
    use std::ffi::{CStr, CString};
    let csrc = CString::new(src).map_err(CudaError::SourceNul)?;
    let name = CString::new("forge_step.cu").expect("no NUL");
    let prog = result::create_program(&csrc, Some(&name)).map_err(CudaError::CreateProgram)?;
    let mut opts: Vec<String> = NVRTC_OPTIONS.iter().map(|s| s.to_string()).collect();
    opts.push(format!("--gpu-architecture={arch}"));
    // SAFETY: prog was created above and is destroyed once, below.
    let compiled = unsafe { result::compile_program(prog, &opts) };
    // SAFETY: prog is alive (destroyed once, below).
    let log = unsafe { result::get_program_log(prog) }
        .map(|raw| {
            // SAFETY: NVRTC's log is NUL-terminated.
            unsafe { CStr::from_ptr(raw.as_ptr()) }
                .to_string_lossy()
                .trim()
                .to_string()
        })
        .unwrap_or_default();
    let no_cubin = |result| CudaError::NoCubin {
        arch: arch.to_string(),
        result,
    };
    let out = match compiled {
        Err(source) => Err(CudaError::Compile {
            arch: arch.to_string(),
            log,
            source,
        }),
        Ok(()) => {
            let mut size = 0usize;
            // SAFETY: prog compiled successfully; the buffer has the size NVRTC reports.
            unsafe {
                let r = sys::nvrtcGetCUBINSize(prog, &mut size);
                if r != sys::nvrtcResult::NVRTC_SUCCESS {
                    Err(no_cubin(r))
                } else {
                    let mut cubin = vec![0u8; size];
                    let r = sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr() as *mut _);
                    if r != sys::nvrtcResult::NVRTC_SUCCESS {
                        Err(no_cubin(r))
                    } else {
                        Ok(Compiled { cubin, log })
                    }
                }
            }
        }
    };
    // SAFETY: prog is not used after this.
    let _ = unsafe { result::destroy_program(prog) };
    out
}

/// FNV-1a, 64 bits: the cache key of (source, arch, options, NVRTC version).
fn fnv64(parts: &[&[u8]]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for p in parts {
        for &b in p.iter().chain([0xffu8].iter()) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

fn nvrtc_version() -> String {
    let (mut a, mut b) = (0i32, 0i32);
    // SAFETY: two out-pointers to locals.
    let ok = catch_unwind(AssertUnwindSafe(|| unsafe {
        cudarc::nvrtc::sys::nvrtcVersion(&mut a, &mut b)
    }))
    .is_ok();
    if ok {
        format!("{a}.{b}")
    } else {
        "?".into()
    }
}

fn cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d).join("forge"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("forge"))
}

/// The kernels for `arch`, from the cache or compiled (and cached, best effort).
pub fn cubin_for(arch: &str) -> Result<Vec<u8>, CudaError> {
    let src = kernel_source();
    let key = fnv64(&[
        src.as_bytes(),
        arch.as_bytes(),
        NVRTC_OPTIONS.join(" ").as_bytes(),
        nvrtc_version().as_bytes(),
    ]);
    let path = cache_dir().map(|d| d.join(format!("step-{arch}-{key:016x}.cubin")));
    if let Some(p) = &path {
        if let Ok(b) = std::fs::read(p) {
            if !b.is_empty() {
                return Ok(b);
            }
        }
    }
    let c = compile(arch)?;
    if let Some(p) = &path {
        if let Some(dir) = p.parent() {
            if std::fs::create_dir_all(dir).is_ok() {
                let tmp = p.with_extension(format!("tmp{}", std::process::id()));
                if std::fs::write(&tmp, &c.cubin).is_ok() {
                    let _ = std::fs::rename(&tmp, p);
                }
            }
        }
    }
    Ok(c.cubin)
}
