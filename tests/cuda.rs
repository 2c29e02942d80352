//! The CUDA backend's checks.
//!
//! Without a GPU: every kernel compiles with NVRTC for sm_80 and sm_90 with no error and no
//! warning (SKIP, loudly, where NVRTC is absent, unless FORGE_REQUIRE_NVRTC=1), and the backend
//! choice through the real binary (`--backend cuda` fails clearly, `--backend auto` notes the
//! CPU). With a GPU: CPU and CUDA recordings are byte-identical (required, not skipped, under
//! FORGE_REQUIRE_CUDA=1).

use forge::sim::cuda;

use crate::common;

use common::*;

fn nvrtc_required() -> bool {
    std::env::var("FORGE_REQUIRE_NVRTC").is_ok_and(|v| v == "1")
}

#[test]
fn kernels_compile_with_nvrtc_without_warnings() {
    if !cuda::nvrtc_present() {
        assert!(
            !nvrtc_required(),
            "FORGE_REQUIRE_NVRTC=1 but libnvrtc cannot be loaded (LD_LIBRARY_PATH?)"
        );
        skip(&format!(
            "kernels_compile_with_nvrtc_without_warnings: NVRTC not found ({})",
            cuda::INSTALL_NVRTC
        ));
        return;
    }
    for arch in ["sm_80", "sm_90"] {
        let c = cuda::compile(arch).unwrap_or_else(|e| panic!("{e}"));
        assert!(!c.cubin.is_empty(), "{arch}: empty CUBIN");
        assert!(c.log.is_empty(), "{arch}: NVRTC warnings:\n{}", c.log);
    }
}

#[test]
fn nvrtc_options_forbid_fma_and_fast_math() {
    assert!(cuda::NVRTC_OPTIONS.contains(&"--fmad=false"));
    for o in cuda::NVRTC_OPTIONS {
        assert!(!o.contains("fast"), "{o}");
    }
    // Every kernel the solver launches is in the source.
    let src = cuda::kernel_source();
    assert!(!src.contains("#include \"forge_math.h\""));
    for k in [
        "frame_kernel",
        "cell_index_kernel",
        "scan_blocks_kernel",
        "scan_sums_kernel",
        "scan_add_kernel",
        "build_grid_kernel",
        "build_brute_kernel",
        "boids_grid_kernel2",
        "boids_grid_kernel3",
        "vicsek_grid_kernel",
        "boids_brute_kernel2",
        "boids_brute_kernel3",
        "vicsek_brute_kernel",
    ] {
        assert!(
            src.contains(&format!("void {k}(")),
            "kernel {k} missing from step.cu"
        );
    }
}

#[test]
fn params_layout_matches_the_header() {
    assert_eq!(std::mem::size_of::<forge::sim::Params>(), 160);
    assert_eq!(std::mem::size_of::<cuda::GridShape>(), 32);
    assert!(cuda::MATH_H.contains("sizeof(struct Params) == 160"));
    assert!(cuda::MATH_H.contains("sizeof(struct GridShape) == 32"));
}

#[test]
fn backend_cuda_without_a_device_fails_clearly() {
    if cuda::open_device().is_ok() {
        skip("backend_cuda_without_a_device_fails_clearly: a CUDA device is present");
        return;
    }
    let d = tmp();
    let err = fails_cleanly(
        d.path(),
        &[
            "simulate",
            "cuplan",
            "--steps",
            "3",
            "--backend",
            "cuda",
            "-o",
            "c.bfs",
        ],
        &["--backend cuda"],
        &["c.bfs"],
    );
    assert!(
        err.contains("driver") || err.contains("device") || err.contains("NVRTC"),
        "{err}"
    );
}

#[test]
fn backend_auto_without_a_device_is_the_cpu_without_a_note() {
    if cuda::open_device().is_ok() {
        skip("backend_auto_without_a_device_is_the_cpu_without_a_note: a CUDA device is present");
        return;
    }
    let d = tmp();
    let err = succeeds(
        d.path(),
        &[
            "simulate",
            "cuplan",
            "--steps",
            "3",
            "--backend",
            "auto",
            "-o",
            "a.bfs",
        ],
    )
    .stderr;
    // Without CUDA, `auto` is simply the CPU: a note would change nothing the user can act on.
    let notes: Vec<&str> = err.lines().filter(|l| l.starts_with("note:")).collect();
    assert!(notes.is_empty(), "{err}");
    has(&err, "cuplan: 3 steps");
    // --quiet says nothing.
    let r = succeeds(
        d.path(),
        &[
            "simulate", "cuplan", "--steps", "3", "-q", "--force", "-o", "a.bfs",
        ],
    );
    assert!(r.stderr.is_empty(), "{}", r.stderr);
}

/// On a machine with a GPU: the CPU and CUDA recordings of every built-in scene and of several
/// agent counts are the same bytes (scripts/gpu-check.sh runs the larger version). Ignored
/// unless asked for, as it needs the hardware: `cargo test --release --test integration --
/// --ignored cuda::`, which fails where there is no device.
#[test]
#[ignore = "needs an NVIDIA GPU and its driver (run with --ignored where there is one)"]
fn cuda_matches_cpu_bytes_when_a_gpu_is_present() {
    if let Err(e) = cuda::open_device() {
        panic!("no CUDA device ({e}): this test needs an NVIDIA GPU and its driver");
    }
    let dir = tmp();
    let scenes = forge::scene::builtin::names();
    // Every built-in scene runs on the GPU (what the kernels do not take, a topological k above
    // 64, none of them asks for).
    for s in &scenes {
        let scene = forge::scene::Scene::load(s).unwrap();
        let p = forge::sim::Params::from_scene(&scene, 0);
        assert!(forge::sim::backend::cpu_only(&p).is_none(), "{s}");
    }
    // Topological neighbours run on the GPU up to the kernels' k; a larger k is refused.
    let many = dir.path().join("k65.json");
    std::fs::write(
        &many,
        r#"{"model": "boids", "agents": 300, "world": {"size": [400, 300]},
            "boids": {"neighbours": {"kind": "topological", "k": 65}}}"#,
    )
    .unwrap();
    let err = fails(
        dir.path(),
        &[
            "simulate",
            "k65.json",
            "--steps",
            "2",
            "--backend",
            "cuda",
            "-o",
            "t.bfs",
        ],
    );
    has(&err, "scene.boids.neighbours.k");
    has(&err, "run on the CPU only");
    let mut cases: Vec<(String, Vec<String>)> = scenes
        .iter()
        .map(|s| (s.to_string(), vec!["--steps".into(), "20".into()]))
        .collect();
    for n in ["1", "2", "1000"] {
        cases.push((
            "cuplan".into(),
            vec!["--steps".into(), "20".into(), "--agents".into(), n.into()],
        ));
    }
    // Topological neighbours: few agents (k at or above N - 1), and 3D with the kernels' most.
    for n in ["1", "2", "11", "1000"] {
        cases.push((
            "murmuration".into(),
            vec!["--steps".into(), "10".into(), "--agents".into(), n.into()],
        ));
    }
    let k64 = dir.path().join("k64.json");
    std::fs::write(
        &k64,
        r#"{"model": "boids", "dim": 3, "agents": 3000, "world": {"size": [300, 300, 300]},
            "boids": {"neighbours": {"kind": "topological", "k": 64}, "fov": 270}}"#,
    )
    .unwrap();
    cases.push(("k64.json".into(), vec!["--steps".into(), "10".into()]));
    // Species and predators (a falcon among few starlings), and obstacles, at small sizes.
    for (scene, n) in [
        ("murmuration-falcon", "3"),
        ("murmuration-falcon", "300"),
        ("two-flocks", "1000"),
        ("obstacles", "1"),
        ("obstacles", "2"),
    ] {
        cases.push((
            scene.into(),
            vec!["--steps".into(), "10".into(), "--agents".into(), n.into()],
        ));
    }
    // A frame every 3rd step, after the scene's warm-up.
    cases.push((
        "vicsek".into(),
        vec!["--steps".into(), "20".into(), "--every".into(), "3".into()],
    ));
    for (scene, extra) in cases {
        for search in ["brute", "grid"] {
            let mut files = Vec::new();
            for backend in ["cpu", "cuda"] {
                let out = format!("{scene}-{search}-{backend}-{}.bfs", extra.join(""));
                let mut args = vec!["simulate", &scene, "-q", "--force", "--search", search];
                args.extend(extra.iter().map(String::as_str));
                args.extend(["--backend", backend, "-o", &out]);
                succeeds(dir.path(), &args);
                files.push(std::fs::read(dir.path().join(&out)).unwrap());
            }
            assert!(
                files[0] == files[1],
                "{scene} {extra:?} --search {search}: CPU and CUDA recordings differ"
            );
        }
    }
}
