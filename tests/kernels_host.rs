//! The CUDA kernels' arithmetic, checked on a machine with no GPU.
//!
//! kernels/forge_math.h holds every `__host__ __device__` function the kernels use. Here it is
//! compiled as host C++ (kernels/host/shim.cpp, g++ through the `cc` crate, -ffp-contract=off
//! -fno-fast-math: what NVRTC --fmad=false computes), loaded, and compared byte for byte with
//! src/sim/math.rs function by function, and with whole steps of the CPU solver (grid and brute
//! force, every built-in scene — Vicsek's angular and vectorial noise among them —, N = 1, 2,
//! ..., and boids with heading noise and a field of view). A kernel change that breaks the
//! determinism contract fails here.

use std::path::PathBuf;
use std::sync::OnceLock;

use forge::scene::Search;
use forge::sim::cpu::CpuSolver;
use forge::sim::cuda::{grid_shape, GridShape};
use forge::sim::math::*;
use forge::sim::obstacles::{ObsHead, ObsShape};
use forge::sim::species::{KernelSpecies, SpeciesHead, SpeciesRow};
use forge::sim::Rules;
use forge::sim::{init, Params, State};

struct Lib {
    _lib: libloading::Library,
    to_fix: unsafe extern "C" fn(f32) -> i64,
    from_fix: unsafe extern "C" fn(i64) -> f32,
    wrap_delta: unsafe extern "C" fn(f32, f32, f32, i32) -> f32,
    mix64: unsafe extern "C" fn(u64) -> u64,
    rand_u32: unsafe extern "C" fn(u64, u64, u64, u64) -> u32,
    rand_uniform: unsafe extern "C" fn(u64, u64, u64, u64) -> f32,
    cos_sin: unsafe extern "C" fn(f32, *mut f32, *mut f32),
    apply_boundary: unsafe extern "C" fn(*mut f32, *mut f32, f32, u32),
    unit2: unsafe extern "C" fn(f32, f32, *mut f32),
    params_size: unsafe extern "C" fn() -> u32,
    topo_k_max: unsafe extern "C" fn() -> u32,
    grid_shape_size: unsafe extern "C" fn() -> u32,
    params_offset: unsafe extern "C" fn(*const std::ffi::c_char) -> std::ffi::c_long,
    grid_shape_offset: unsafe extern "C" fn(*const std::ffi::c_char) -> std::ffi::c_long,
    #[allow(clippy::type_complexity)]
    boids_pairs_integrate: unsafe extern "C" fn(
        *const Params,
        i32,
        u32,
        *const f32,
        *const f32,
        *const i64,
        i32,
        u64,
        u64,
        *mut f32,
        *mut f32,
        *mut i64,
    ),
    sees: unsafe extern "C" fn(*const Params, i32, *const f32, *const f32, f32) -> i32,
    heading_noise: unsafe extern "C" fn(*const Params, i32, u64, u64, *mut f32),
    #[allow(clippy::type_complexity)]
    vicsek_integrate: unsafe extern "C" fn(
        *const Params,
        *const i64,
        u32,
        *const f32,
        u64,
        u64,
        *mut f32,
        *mut f32,
    ),
    heading: unsafe extern "C" fn(f32, f32, *const f32, *mut f32),
    frame: unsafe extern "C" fn(u32, u32, *const f32, *const f32, *const u32, *mut f32),
    #[allow(clippy::type_complexity)]
    step: unsafe extern "C" fn(
        *const Params,
        *const GridShape,
        i32,
        u64,
        *const f32,
        *const f32,
        *const u32,
        *mut f32,
        *mut f32,
        *mut u32,
        *const ObsHead,
        *const ObsShape,
        *const SpeciesHead,
        *const Params,
        *const SpeciesRow,
        *const u8,
        *const u8,
    ) -> i64,
    species_row_size: unsafe extern "C" fn() -> u32,
    species_head_size: unsafe extern "C" fn() -> u32,
    species_offset: unsafe extern "C" fn(*const std::ffi::c_char) -> std::ffi::c_long,
    species_head_offset: unsafe extern "C" fn(*const std::ffi::c_char) -> std::ffi::c_long,
    obs_shape_size: unsafe extern "C" fn() -> u32,
    obs_head_size: unsafe extern "C" fn() -> u32,
    obs_offset: unsafe extern "C" fn(*const std::ffi::c_char) -> std::ffi::c_long,
    obs_head_offset: unsafe extern "C" fn(*const std::ffi::c_char) -> std::ffi::c_long,
}

/// Build kernels/host/shim.cpp into a shared library (once) and load it.
fn lib() -> &'static Lib {
    static LIB: OnceLock<Lib> = OnceLock::new();
    LIB.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let shim = root.join("kernels/host/shim.cpp");
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("libforge_kernels_host_{}.so", std::process::id()));
        let target = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
        let compiler = cc::Build::new()
            .cpp(true)
            .target(&target)
            .host(&target)
            .opt_level(2)
            .cargo_metadata(false)
            .cargo_warnings(false)
            .flag("-std=c++17")
            .flag("-ffp-contract=off")
            .flag("-fno-fast-math")
            .flag("-fPIC")
            .flag("-Wall")
            .flag("-Wextra")
            .flag("-Werror")
            .try_get_compiler()
            .expect("a C++ compiler (g++) for the host build of kernels/forge_math.h");
        let o = compiler
            .to_command()
            .arg("-shared")
            .arg("-o")
            .arg(&out)
            .arg(&shim)
            .output()
            .expect("run the C++ compiler");
        assert!(
            o.status.success(),
            "host build of kernels/forge_math.h failed:\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        // SAFETY: our own library, built just now; the signatures match kernels/host/shim.cpp.
        unsafe {
            let l = libloading::Library::new(&out).expect("load the host build");
            let _ = std::fs::remove_file(&out);
            macro_rules! sym {
                ($name:literal) => {
                    *l.get(concat!($name, "\0").as_bytes())
                        .unwrap_or_else(|e| panic!("{}: {e}", $name))
                };
            }
            Lib {
                to_fix: sym!("fm_to_fix"),
                from_fix: sym!("fm_from_fix"),
                wrap_delta: sym!("fm_wrap_delta"),
                mix64: sym!("fm_mix64"),
                rand_u32: sym!("fm_rand_u32"),
                rand_uniform: sym!("fm_rand_uniform"),
                cos_sin: sym!("fm_cos_sin"),
                apply_boundary: sym!("fm_apply_boundary"),
                unit2: sym!("fm_unit2"),
                params_size: sym!("fm_params_size"),
                topo_k_max: sym!("fm_topo_k_max"),
                grid_shape_size: sym!("fm_grid_shape_size"),
                params_offset: sym!("fm_params_offset"),
                grid_shape_offset: sym!("fm_grid_shape_offset"),
                boids_pairs_integrate: sym!("fm_boids_pairs_integrate"),
                sees: sym!("fm_sees"),
                heading_noise: sym!("fm_heading_noise"),
                vicsek_integrate: sym!("fm_vicsek_integrate"),
                heading: sym!("fm_heading"),
                frame: sym!("fm_frame"),
                step: sym!("fm_step"),
                obs_shape_size: sym!("fm_obs_shape_size"),
                obs_head_size: sym!("fm_obs_head_size"),
                obs_offset: sym!("fm_obs_offset"),
                obs_head_offset: sym!("fm_obs_head_offset"),
                species_row_size: sym!("fm_species_row_size"),
                species_head_size: sym!("fm_species_head_size"),
                species_offset: sym!("fm_species_offset"),
                species_head_offset: sym!("fm_species_head_offset"),
                _lib: l,
            }
        }
    })
}

/// xorshift64*: the test's own deterministic randomness.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn f32_bits(&mut self) -> f32 {
        f32::from_bits(self.next() as u32)
    }
    fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * ((self.next() >> 40) as f32 / (1u64 << 24) as f32)
    }
}

/// Values that stress every branch: signed zeros, denormals, infinities, NaN, the clamp edges.
fn special_f32() -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        1e-45,
        -1e-45,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::MAX,
        f32::MIN,
        FIX_CLAMP,
        -FIX_CLAMP,
        FIX_CLAMP * 1.0000001,
        -FIX_CLAMP * 1.0000001,
        0.5,
        1.0,
        std::f32::consts::PI,
        -std::f32::consts::PI,
    ];
    let mut r = Rng(0x1234_5678_9abc_def1);
    for _ in 0..20_000 {
        v.push(r.f32_bits());
        v.push(r.uniform(-2000.0, 2000.0));
        v.push(r.uniform(-1.0, 1.0) * 1e-6);
    }
    v
}

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Field name → `offset_of!` of the Rust struct, for every field.
macro_rules! offsets {
    ($t:ty, $($f:ident),+ $(,)?) => {
        [$((stringify!($f), std::mem::offset_of!($t, $f))),+]
    };
}

#[test]
fn layouts_match_field_by_field() {
    let l = lib();
    unsafe {
        assert_eq!((l.params_size)() as usize, std::mem::size_of::<Params>());
        assert_eq!((l.topo_k_max)(), forge::sim::cuda::TOPO_K_MAX);
        assert_eq!(
            (l.grid_shape_size)() as usize,
            std::mem::size_of::<GridShape>()
        );
    }
    let params = offsets!(
        Params,
        n,
        dim,
        model,
        boundary,
        world,
        half_world,
        dt,
        r_sep2,
        r_ali2,
        r_coh2,
        w_sep,
        w_ali,
        w_coh,
        max_force,
        v_min,
        v_max,
        v0,
        noise,
        seed,
        noise_kind,
        topo_k,
        heading_noise,
        fov_cos,
        flight,
        cruise,
        inv_tau,
        gravity,
        lift_k,
        tan_bank,
        roost,
        roost_radius,
        w_roost_h,
        w_roost_v,
    );
    let grid = offsets!(GridShape, dims, ncells, inv_cell, wrap);
    let c = |f: &str| std::ffi::CString::new(f).unwrap();
    let shape = offsets!(ObsShape, round, a, e, e2, r, centre, near2, touch2, cross2);
    let head = offsets!(ObsHead, n, w_avoid, look_ahead, clearance, inv_clearance);
    unsafe {
        assert_eq!(
            (l.obs_shape_size)() as usize,
            std::mem::size_of::<ObsShape>()
        );
        assert_eq!((l.obs_head_size)() as usize, std::mem::size_of::<ObsHead>());
    }
    for (name, rust) in shape {
        let cpp = unsafe { (l.obs_offset)(c(name).as_ptr()) };
        assert_eq!(
            cpp, rust as std::ffi::c_long,
            "ObsShape.{name}: C++ {cpp}, Rust {rust}"
        );
    }
    let row = offsets!(
        SpeciesRow,
        lo,
        hi,
        predator,
        present,
        hunter_base,
        rmax2,
        chase_r2,
        chase_w,
        flee_r2,
        flee_w
    );
    let sp_head = offsets!(SpeciesHead, count, any_predator, n_hunters);
    unsafe {
        assert_eq!(
            (l.species_row_size)() as usize,
            std::mem::size_of::<SpeciesRow>()
        );
        assert_eq!(
            (l.species_head_size)() as usize,
            std::mem::size_of::<SpeciesHead>()
        );
    }
    for (name, rust) in row {
        let cpp = unsafe { (l.species_offset)(c(name).as_ptr()) };
        assert_eq!(
            cpp, rust as std::ffi::c_long,
            "SpeciesRow.{name}: C++ {cpp}, Rust {rust}"
        );
    }
    for (name, rust) in sp_head {
        let cpp = unsafe { (l.species_head_offset)(c(name).as_ptr()) };
        assert_eq!(
            cpp, rust as std::ffi::c_long,
            "SpeciesHead.{name}: C++ {cpp}, Rust {rust}"
        );
    }
    for (name, rust) in head {
        let cpp = unsafe { (l.obs_head_offset)(c(name).as_ptr()) };
        assert_eq!(
            cpp, rust as std::ffi::c_long,
            "ObsHead.{name}: C++ {cpp}, Rust {rust}"
        );
    }
    for (name, rust) in params {
        let cpp = unsafe { (l.params_offset)(c(name).as_ptr()) };
        assert_eq!(
            cpp, rust as std::ffi::c_long,
            "Params.{name}: C++ offsetof {cpp}, Rust {rust}"
        );
    }
    for (name, rust) in grid {
        let cpp = unsafe { (l.grid_shape_offset)(c(name).as_ptr()) };
        assert_eq!(
            cpp, rust as std::ffi::c_long,
            "GridShape.{name}: C++ {cpp}, Rust {rust}"
        );
    }
    // A name neither has is told apart (the lookup is not vacuous).
    assert_eq!(unsafe { (l.params_offset)(c("nope").as_ptr()) }, -1);
}

#[test]
fn to_fix_and_from_fix_match() {
    let l = lib();
    for x in special_f32() {
        assert_eq!(unsafe { (l.to_fix)(x) }, to_fix(x), "to_fix({x:e})");
    }
    let mut r = Rng(99);
    for _ in 0..50_000 {
        let s = r.next() as i64 >> (r.next() % 64);
        assert!(
            same(unsafe { (l.from_fix)(s) }, from_fix(s)),
            "from_fix({s})"
        );
    }
}

#[test]
fn wrap_delta_and_boundaries_match() {
    let l = lib();
    let xs = special_f32();
    let mut r = Rng(7);
    for (i, &x) in xs.iter().enumerate() {
        let size = [1920.0f32, 31.6, 1.0, 100.0][i % 4];
        for wrap in [false, true] {
            let a = unsafe { (l.wrap_delta)(x, size, size * 0.5, wrap as i32) };
            assert!(
                same(a, wrap_delta(x, size, size * 0.5, wrap)),
                "wrap_delta({x:e})"
            );
        }
        for boundary in 0..3u32 {
            let v0 = r.uniform(-5.0, 5.0);
            let (mut p, mut v) = (x, v0);
            apply_boundary(&mut p, &mut v, size, boundary);
            let (mut q, mut w) = (x, v0);
            unsafe { (l.apply_boundary)(&mut q, &mut w, size, boundary) };
            assert!(
                same(p, q) && same(v, w),
                "apply_boundary({x:e}, {size}, {boundary})"
            );
        }
    }
}

#[test]
fn rng_matches() {
    let l = lib();
    let mut r = Rng(5);
    for i in 0..50_000u64 {
        let (a, b, c, d) = (r.next(), r.next() % 100_000, i, r.next() % 4);
        unsafe {
            assert_eq!((l.mix64)(a), mix64(a));
            assert_eq!((l.rand_u32)(a, b, c, d), rand_u32(a, b, c, d));
            assert!(same((l.rand_uniform)(a, b, c, d), rand_uniform(a, b, c, d)));
        }
    }
}

#[test]
fn cos_sin_and_unit2_match() {
    let l = lib();
    let mut xs: Vec<f32> = (-20_000..=20_000)
        .map(|i| i as f32 * std::f32::consts::PI / 20_000.0)
        .collect();
    xs.extend(special_f32());
    for &x in &xs {
        let (c, s) = cos_sin(x);
        let (mut c2, mut s2) = (0f32, 0f32);
        unsafe { (l.cos_sin)(x, &mut c2, &mut s2) };
        assert!(same(c, c2) && same(s, s2), "cos_sin({x:e})");
    }
    for w in xs.windows(2) {
        let u = unit2([w[0], w[1]]);
        let mut u2 = [0f32; 2];
        unsafe { (l.unit2)(w[0], w[1], u2.as_mut_ptr()) };
        assert!(same(u[0], u2[0]) && same(u[1], u2[1]), "unit2({w:?})");
    }
}

fn scene_params(name: &str, n: usize) -> (Params, State) {
    scene_params_with(name, n, |_| {})
}

/// A built-in scene of `n` agents, changed by `edit` before its first state is made.
fn scene_params_with(
    name: &str,
    n: usize,
    edit: impl Fn(&mut forge::scene::Scene),
) -> (Params, State) {
    let (p, _, state) = scene_run(name, n, edit);
    (p, state)
}

/// The scene `name` changed by `edit`, with `n` agents (given to its species in proportion,
/// as `--agents` does): its parameters, obstacles and species, and initial state.
fn scene_run(
    name: &str,
    n: usize,
    edit: impl Fn(&mut forge::scene::Scene),
) -> (Params, Rules, State) {
    let mut scene = forge::scene::Scene::load(name).unwrap();
    edit(&mut scene);
    if scene.species.is_empty() {
        scene.agents = n as u32;
    } else {
        scene.set_agents(n as u32).unwrap();
    }
    if let Some(c) = scene.init.count {
        scene.init.count = Some(c.min(n as u32));
    }
    let state = init::initial_state(&scene).unwrap();
    (
        Params::from_scene(&scene, state.n),
        Rules::from_scene(&scene),
        state,
    )
}

fn boids_pairs_case<const D: usize>(l: &Lib, p: &Params, r: &mut Rng) {
    let m = (r.next() % 40) as usize;
    let rad = p.radius();
    let mut d = Vec::new();
    let mut d2 = Vec::new();
    let mut vfix = Vec::new();
    let mut acc = BoidsAcc::<D>::new();
    let mut pos = [0f32; D];
    let mut vel = [0f32; D];
    for k in 0..D {
        pos[k] = r.uniform(-10.0, p.world[k] + 10.0);
        vel[k] = r.uniform(-300.0, 300.0);
    }
    if r.next().is_multiple_of(16) {
        vel = [0.0; D];
    }
    let (step, agent) = (r.next() % 100_000, r.next() % 1_000_000);
    // The sight of the agent as it was before the step (boids_agent takes it from vel).
    let sight = Sight::new(p, &vel);
    for i in 0..m {
        let mut dd = [0f32; D];
        for x in dd.iter_mut() {
            *x = r.uniform(-rad, rad);
        }
        if i == 0 {
            dd = [0.0; D];
        }
        let q = norm2(&dd);
        let mut vf = [0i64; D];
        for x in vf.iter_mut() {
            *x = to_fix(r.uniform(-200.0, 200.0));
        }
        acc.boids_pair(p, &dd, q, &vf, sight.is_none_or(|s| s.sees(&dd, q)));
        d.extend_from_slice(&dd);
        d2.push(q);
        vfix.extend_from_slice(&vf);
    }
    let (mut pos2, mut vel2) = (pos, vel);
    // Candidate 0 is the agent itself (d = 0): taken out again, as boids_agent does.
    let self0 = m > 0;
    if self0 {
        let mut vself = [0i64; D];
        vself.copy_from_slice(&vfix[..D]);
        acc.remove_self(p, &vself);
    }
    let none = forge::sim::obstacles::Obstacles::none();
    let near = forge::sim::obstacles::Near::default();
    boids_integrate(p, &none, near, &acc, step, agent, &mut pos, &mut vel);
    let mut acc_out = [0i64; 11];
    unsafe {
        (l.boids_pairs_integrate)(
            p,
            D as i32,
            m as u32,
            d.as_ptr(),
            d2.as_ptr(),
            vfix.as_ptr(),
            self0 as i32,
            step,
            agent,
            pos2.as_mut_ptr(),
            vel2.as_mut_ptr(),
            acc_out.as_mut_ptr(),
        )
    };
    assert_eq!(&acc_out[..D], &acc.sep[..]);
    assert_eq!(&acc_out[D..2 * D], &acc.ali[..]);
    assert_eq!(&acc_out[2 * D..3 * D], &acc.coh[..]);
    assert_eq!(acc_out[3 * D], acc.n_ali as i64);
    assert_eq!(acc_out[3 * D + 1], acc.n_coh as i64);
    for k in 0..D {
        assert!(
            same(pos[k], pos2[k]) && same(vel[k], vel2[k]),
            "boids_integrate"
        );
    }
}

#[test]
fn boids_pair_and_integrate_match() {
    let l = lib();
    let mut r = Rng(11);
    for name in [
        "murmuration",
        "cuplan",
        "turbulence",
        "schooling",
        "murmuration3d",
    ] {
        let (p0, _) = scene_params(name, 10);
        // Without and with a field of view (narrower and wider than 180°, and 180° itself) and
        // heading noise (up to its largest width, 2π).
        for (fov, noise) in [
            (360.0, 0.0),
            (90.0, 0.0),
            (300.0, 0.7),
            (180.0, 2.0),
            (20.0, TWO_PI),
        ] {
            let mut p = p0;
            p.fov_cos = fov_cos(fov);
            p.heading_noise = noise;
            for _ in 0..3000 {
                if p.dim == 2 {
                    boids_pairs_case::<2>(l, &p, &mut r);
                } else {
                    boids_pairs_case::<3>(l, &p, &mut r);
                }
            }
        }
    }
}

/// Offsets that stress the field-of-view test: random, on the axes, at ±0, tiny and huge, on
/// the edge of the field (at fov/2 from the heading, where a rounding decides), and NaN.
fn fov_offsets<const D: usize>(r: &mut Rng, vel: &[f32; D], fov: f32) -> Vec<[f32; D]> {
    let mut out = vec![[0.0; D], [-0.0; D], *vel, vel.map(|x| -x)];
    for k in 0..D {
        let mut e = [0.0; D];
        e[k] = 1.0;
        out.push(e);
        e[k] = -1e-30;
        out.push(e);
    }
    let mut nan = [1.0; D];
    nan[0] = f32::NAN;
    out.push(nan);
    let half = (fov as f64 / 2.0).to_radians();
    for _ in 0..200 {
        let mut d = [0f32; D];
        for x in d.iter_mut() {
            *x = r.uniform(-30.0, 30.0);
        }
        out.push(d);
        // At the edge: the heading turned by ±fov/2 (in the x–y plane, z kept), scaled.
        let (c, s) = (
            half.cos(),
            half.sin()
                * if r.next().is_multiple_of(2) {
                    1.0
                } else {
                    -1.0
                },
        );
        let scale = [1e-6, 1.0, 40.0, 1e6][(r.next() % 4) as usize];
        let mut e = *vel;
        e[0] = ((c * vel[0] as f64 - s * vel[1] as f64) * scale) as f32;
        e[1] = ((s * vel[0] as f64 + c * vel[1] as f64) * scale) as f32;
        if D == 3 {
            e[D - 1] = (vel[D - 1] as f64 * c * scale) as f32;
        }
        out.push(e);
    }
    out
}

fn sees_case<const D: usize>(l: &Lib, p: &Params, r: &mut Rng, fov: f32) -> (usize, usize) {
    let mut vel = [0f32; D];
    for x in vel.iter_mut() {
        *x = r.uniform(-200.0, 200.0);
    }
    if r.next().is_multiple_of(20) {
        vel = [0.0; D];
    }
    let sight = Sight::new(p, &vel);
    let (mut seen, mut all) = (0, 0);
    for d in fov_offsets::<D>(r, &vel, fov) {
        let d2 = norm2(&d);
        let want = sight.map_or(-1, |s| s.sees(&d, d2) as i32);
        let got = unsafe { (l.sees)(p, D as i32, vel.as_ptr(), d.as_ptr(), d2) };
        assert_eq!(got, want, "sees: fov {fov}, vel {vel:?}, d {d:?}");
        seen += (want == 1) as usize;
        all += 1;
    }
    (seen, all)
}

#[test]
fn fov_test_matches() {
    let l = lib();
    let mut r = Rng(17);
    for name in ["cuplan", "murmuration3d"] {
        let (p0, _) = scene_params(name, 10);
        for fov in [
            360.0, 359.9, 270.0, 181.0, 180.0, 179.0, 120.0, 90.0, 1.0, 1e-3,
        ] {
            let mut p = p0;
            p.fov_cos = fov_cos(fov);
            let (mut seen, mut all) = (0, 0);
            for _ in 0..400 {
                let (s, a) = if p.dim == 2 {
                    sees_case::<2>(l, &p, &mut r, fov)
                } else {
                    sees_case::<3>(l, &p, &mut r, fov)
                };
                seen += s;
                all += a;
            }
            // Not vacuous: a blind angle hides some, and a field this wide shows some.
            if fov < 360.0 {
                assert!(
                    seen > 0 && seen < all,
                    "{name} fov {fov}: {seen} of {all} seen"
                );
            }
        }
    }
}

#[test]
fn heading_noise_matches() {
    let l = lib();
    let mut r = Rng(19);
    let (p0, _) = scene_params("murmuration3d", 10);
    let specials = [0.0, -0.0, 1e-30, -1e-30, 1.0, -1.0, 3e18, f32::MIN_POSITIVE];
    for i in 0..60_000u64 {
        let mut p = p0;
        p.heading_noise = [TWO_PI, 0.1, 1e-6, r.uniform(0.0, TWO_PI)][(i % 4) as usize];
        let mut v = [0f32; 3];
        for x in v.iter_mut() {
            *x = if i % 5 == 0 {
                specials[(r.next() % specials.len() as u64) as usize]
            } else {
                r.uniform(-300.0, 300.0)
            };
        }
        let (step, agent) = (r.next() % 1_000_000, r.next());
        let mut v2 = [v[0], v[1]];
        let mut c2 = v2;
        heading_noise(&p, step, agent, &mut v2);
        unsafe { (l.heading_noise)(&p, 2, step, agent, c2.as_mut_ptr()) };
        assert!(same(v2[0], c2[0]) && same(v2[1], c2[1]), "2D {v:?}");
        let mut v3 = v;
        let mut c3 = v;
        heading_noise(&p, step, agent, &mut v3);
        unsafe { (l.heading_noise)(&p, 3, step, agent, c3.as_mut_ptr()) };
        for k in 0..3 {
            assert!(same(v3[k], c3[k]), "3D {v:?}: {v3:?} vs {c3:?}");
        }
    }
}

#[test]
fn heading_matches() {
    let l = lib();
    let xs = special_f32();
    let owns = [[0.0, 0.0], [0.6, -0.8], [-1.0, 0.0]];
    for (i, w) in xs.windows(2).enumerate() {
        let own = owns[i % 3];
        let h = heading([w[0], w[1]], own);
        let mut h2 = [0f32; 2];
        unsafe { (l.heading)(w[0], w[1], own.as_ptr(), h2.as_mut_ptr()) };
        assert!(same(h[0], h2[0]) && same(h[1], h2[1]), "heading({w:?})");
    }
}

/// Both kinds of noise (angular, vectorial), over sums, neighbour counts and own headings that
/// include the zero cases.
#[test]
fn vicsek_integrate_matches() {
    let l = lib();
    let mut r = Rng(13);
    for name in ["vicsek", "vicsek-bands"] {
        let (p0, _) = scene_params(name, 10);
        assert_eq!(p0.model, 1, "{name}");
        for kind in [NOISE_ANGULAR, NOISE_VECTORIAL] {
            let mut p = p0;
            p.noise_kind = kind;
            for i in 0..20_000u64 {
                let count = if i % 13 == 0 {
                    0
                } else {
                    1 + (r.next() % 60) as u32
                };
                let sum = if i % 7 == 0 {
                    [0i64, 0]
                } else {
                    let c = count.max(1) as f32;
                    [to_fix(r.uniform(-c, c)), to_fix(r.uniform(-c, c))]
                };
                let own = if i % 11 == 0 {
                    [0.0, 0.0]
                } else {
                    unit2([r.uniform(-1.0, 1.0), r.uniform(-1.0, 1.0)])
                };
                p.noise = if i % 17 == 0 {
                    0.0
                } else {
                    r.uniform(0.0, 2.0 * std::f32::consts::PI)
                };
                let mut pos = [
                    r.uniform(-1.0, p.world[0] + 1.0),
                    r.uniform(-1.0, p.world[1] + 1.0),
                ];
                let mut vel = [0f32; 2];
                let (mut pos2, mut vel2) = (pos, vel);
                vicsek_integrate(&p, &sum, count, own, i / 3, i, &mut pos, &mut vel);
                unsafe {
                    (l.vicsek_integrate)(
                        &p,
                        sum.as_ptr(),
                        count,
                        own.as_ptr(),
                        i / 3,
                        i,
                        pos2.as_mut_ptr(),
                        vel2.as_mut_ptr(),
                    )
                };
                for k in 0..2 {
                    assert!(
                        same(pos[k], pos2[k]) && same(vel[k], vel2[k]),
                        "{name} noise kind {kind}: vicsek_integrate {i}"
                    );
                }
            }
        }
    }
}

/// Slot order + ids → agent order, as the GPU puts a recorded frame in order (frame_kernel's
/// body, frame_slot), checked against the CPU's `unpermute`.
fn agent_order(dim: usize, n: usize, pos: &[f32], vel: &[f32], ids: &[u32]) -> State {
    let slots = State {
        dim,
        n,
        pos: pos.to_vec(),
        vel: vel.to_vec(),
    };
    let mut st = State::zeros(dim, n).unwrap();
    forge::sim::cpu::unpermute(&slots, ids, &mut st.pos, &mut st.vel);
    let mut frame = vec![f32::NAN; 2 * dim * n];
    // SAFETY: pos and vel hold dim*n values, ids n (a permutation), frame 2*dim*n.
    unsafe {
        (lib().frame)(
            n as u32,
            dim as u32,
            pos.as_ptr(),
            vel.as_ptr(),
            ids.as_ptr(),
            frame.as_mut_ptr(),
        )
    };
    let (fp, fv) = frame.split_at(dim * n);
    assert!(
        bits(&st) == fp.iter().chain(fv).map(|x| x.to_bits()).collect::<Vec<_>>(),
        "frame_slot's frame differs from unpermute's (n={n}, dim={dim})"
    );
    st
}

fn bits(st: &State) -> Vec<u32> {
    st.pos
        .iter()
        .chain(st.vel.iter())
        .map(|x| x.to_bits())
        .collect()
}

/// `steps` whole steps of the host build of the kernels (grid with reversed in-cell order, or
/// brute force) against CpuSolver, compared byte for byte after every step.
fn whole_steps(name: &str, n: usize, steps: u64) {
    whole_steps_with(name, n, steps, |_| {});
}

/// [`whole_steps`] of the scene changed by `edit`.
fn whole_steps_with(name: &str, n: usize, steps: u64, edit: impl Fn(&mut forge::scene::Scene)) {
    let l = lib();
    let (p0, rules, state) = scene_run(name, n, edit);
    let n = state.n;
    let dim = state.dim;
    for (search, grid) in [(Search::Grid, 1), (Search::Brute, 0)] {
        let mut p = p0;
        let (mut head, mut shapes) = rules.obstacles.for_kernels();
        let mut sp_host = rules.species.clone();
        // The scene's timeline, applied before each step as the CUDA solver applies it: the
        // step's parameters, and the species' and obstacles' tables where a key changed them.
        let mut live = rules.timeline.clone();
        let mut cpu = CpuSolver::new(p, state.clone(), 1, search)
            .unwrap()
            .with_rules(rules.clone())
            .unwrap();
        let shape = if grid == 1 {
            grid_shape(&p, n).unwrap()
        } else {
            GridShape::default()
        };
        let (mut pos, mut vel) = (state.pos.clone(), state.vel.clone());
        let mut ids: Vec<u32> = (0..n as u32).collect();
        let (mut npos, mut nvel, mut nids) = (pos.clone(), vel.clone(), ids.clone());
        for s in 0..steps {
            if let Some(t) = &mut live {
                if t.apply(s, &mut p, sp_host.as_mut()).obstacles {
                    (head, shapes) = t.obstacles().for_kernels();
                }
            }
            let sp = sp_host.as_ref().map(|s| s.for_kernels());
            let k = sp.clone().unwrap_or(KernelSpecies::default());
            let cpu_ok = cpu.step().is_ok();
            let bad = unsafe {
                (l.step)(
                    &p,
                    &shape,
                    grid,
                    s,
                    pos.as_ptr(),
                    vel.as_ptr(),
                    ids.as_ptr(),
                    npos.as_mut_ptr(),
                    nvel.as_mut_ptr(),
                    nids.as_mut_ptr(),
                    &head,
                    shapes.as_ptr(),
                    sp.as_ref().map_or(std::ptr::null(), |s| &s.head),
                    k.params.as_ptr(),
                    k.rows.as_ptr(),
                    k.mask.as_ptr(),
                    k.of_agent.as_ptr(),
                )
            };
            assert_eq!(
                cpu_ok,
                bad < 0,
                "{name} n={n}: divergence differs at step {s}"
            );
            if !cpu_ok {
                break;
            }
            std::mem::swap(&mut pos, &mut npos);
            std::mem::swap(&mut vel, &mut nvel);
            std::mem::swap(&mut ids, &mut nids);
            let host = agent_order(dim, n, &pos, &vel, &ids);
            assert!(
                bits(&host) == bits(&cpu.state()),
                "{name} n={n} {search:?}: the kernels' arithmetic differs from the CPU at step {}",
                s + 1
            );
        }
    }
}

#[test]
fn whole_steps_match_the_cpu_on_every_builtin_scene() {
    for name in forge::scene::builtin::names() {
        whole_steps(name, 400, 25);
    }
}

/// Topological neighbours (the k nearest seen agents, ring by ring through the grid): k from 1
/// to the kernels' most, k at or above the flock's size, N = 1, 2, 3, 2D and 3D, wrapping and
/// reflecting worlds, with and without a field of view, and a flock so sparse that the rings
/// go out to the far cells.
#[test]
fn whole_steps_match_the_cpu_with_topological_neighbours() {
    let topo = |k: u32, fov: f32, reflect: bool| {
        move |s: &mut forge::scene::Scene| {
            let b = s.boids.as_mut().unwrap();
            b.neighbours = forge::scene::Neighbours::Topological { k };
            b.fov = fov;
            if reflect {
                s.boundary = forge::scene::Boundary::Reflect;
            }
        }
    };
    let kmax = forge::sim::cuda::TOPO_K_MAX;
    whole_steps("murmuration", 2000, 8);
    for name in ["cuplan", "murmuration3d", "shoal3d"] {
        for (k, fov, reflect) in [(1, 360.0, false), (7, 300.0, true), (kmax, 200.0, false)] {
            whole_steps_with(name, 500, 8, topo(k, fov, reflect));
        }
    }
    for n in [1, 2, 3, 11] {
        for k in [1, 2, 10] {
            whole_steps_with("cuplan", n, 10, topo(k, 360.0, false));
            whole_steps_with("murmuration3d", n, 10, topo(k, 250.0, true));
        }
    }
    // 40 agents in a large world: most cells empty, the k-th nearest many rings out.
    whole_steps_with("schooling", 40, 10, topo(12, 360.0, false));
    whole_steps_with("murmuration3d", 40, 10, topo(12, 360.0, true));
}

/// Flight (`boids.flight`: lift, banking, thrust, gravity and the roost's pull), with metric
/// and topological neighbours, heading noise and a field of view, in reflecting, wrapping and
/// open worlds; a roost radius so small that every bird is beyond it and so large that every
/// bird is within; a bank limit that binds and one that does not; tiny flocks.
#[test]
fn whole_steps_match_the_cpu_with_flight() {
    let fly = |topo: u32, noise: f32, radius: f32, bank: f32, boundary: forge::scene::Boundary| {
        move |s: &mut forge::scene::Scene| {
            s.boundary = boundary;
            let w = s.world;
            let b = s.boids.as_mut().unwrap();
            if topo > 0 {
                b.neighbours = forge::scene::Neighbours::Topological { k: topo };
                b.fov = 290.0;
            }
            b.noise = noise;
            b.flight = Some(forge::scene::flight::Flight {
                cruise_speed: (b.v_min + b.v_max) * 0.5,
                speed_time: 0.7,
                gravity: 9.81 * w[2] / 100.0,
                max_bank: bank,
                roost: [w[0] * 0.4, w[1] * 0.6],
                roost_radius: radius * w[0],
                roost_height: w[2] * 0.3,
                w_roost_h: 0.02 * b.max_force,
                w_roost_v: 0.05,
            });
        }
    };
    use forge::scene::Boundary::{Open, Reflect, Wrap};
    for name in ["murmuration3d", "shoal3d"] {
        whole_steps_with(name, 500, 15, fly(0, 0.0, 0.25, 60.0, Reflect));
        whole_steps_with(name, 500, 15, fly(7, 0.4, 0.001, 20.0, Open));
        whole_steps_with(name, 500, 15, fly(3, 0.0, 5.0, 85.0, Wrap));
    }
    for n in [1, 2, 3] {
        whole_steps_with("murmuration3d", n, 20, fly(7, 0.3, 0.1, 45.0, Open));
    }
}

#[test]
fn whole_steps_match_the_cpu_for_tiny_and_larger_flocks() {
    for n in [1, 2, 3, 97] {
        whole_steps("cuplan", n, 20);
        whole_steps("vicsek", n, 20);
        whole_steps("vicsek-bands", n, 20);
    }
    whole_steps("schooling", 3000, 5);
    whole_steps("murmuration3d", 2000, 5);
}

/// Heading noise and a field of view (narrow, 180°, wide; with noise and without), 2D and 3D, in
/// wrapping and reflecting worlds, dense enough that the blind angle hides neighbours.
#[test]
fn whole_steps_match_the_cpu_with_heading_noise_and_a_field_of_view() {
    for name in ["cuplan", "schooling", "murmuration3d", "shoal3d"] {
        for (noise, fov) in [(0.8, 360.0), (0.0, 100.0), (0.5, 180.0), (2.0, 250.0)] {
            whole_steps_with(name, 400, 15, |s| {
                let b = s.boids.as_mut().unwrap();
                b.noise = noise;
                b.fov = fov;
            });
        }
    }
    for n in [1, 2, 3] {
        whole_steps_with("cuplan", n, 10, |s| {
            let b = s.boids.as_mut().unwrap();
            b.noise = 1.0;
            b.fov = 120.0;
        });
    }
}

/// A scene file in the test's scratch folder, for `whole_steps_with`.
fn scene_file(name: &str, json: &str) -> String {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("kernels_host_{}_{name}.json", std::process::id()));
    std::fs::write(&path, json).unwrap();
    path.to_str().unwrap().to_string()
}

/// Obstacles (circles or spheres, a box, a capsule), 2D and 3D, wrapping and reflecting,
/// with avoidance and without (then only settling keeps boids out), with topological
/// neighbours, and fast boids against a thin wall (the undone move): the kernels test every
/// shape where the CPU tests those its cells' masks name, and must give the same bytes.
#[test]
fn whole_steps_match_the_cpu_with_obstacles() {
    let field = |dim: usize, boundary: &str, extra: &str| {
        let (world, z, b0, b1) = if dim == 2 {
            ("[600, 400]", "", "", "")
        } else {
            ("[600, 400, 300]", ", 150", ", 60", ", 240")
        };
        format!(
            r#"{{"model": "boids", "dim": {dim}, "agents": 600, "seed": 5, "dt": 0.05,
                "world": {{"size": {world}, "boundary": "{boundary}"}},
                "boids": {{"w_sep": 40{extra}}},
                "obstacles": [
                  {{"circle": {{"center": [300, 200{z}], "radius": 60}}}},
                  {{"circle": {{"center": [150, 100{z}], "radius": 25}}}},
                  {{"box": {{"min": [420, 50{b0}], "max": [480, 350{b1}]}}}},
                  {{"segment": {{"from": [100, 300{z}], "to": [250, 360{z}], "radius": 4}}}}
                ],
                "init": {{"layout": "clusters", "count": 4, "radius": 80,
                          "velocity": "aligned"}}}}"#
        )
    };
    for dim in [2, 3] {
        for boundary in ["wrap", "reflect"] {
            for (i, extra) in [
                "",
                r#", "w_avoid": 0"#,
                r#", "neighbours": {"kind": "topological", "k": 6}, "fov": 270"#,
                r#", "v_min": 300, "v_max": 900, "w_avoid": 0"#,
            ]
            .iter()
            .enumerate()
            {
                let f = scene_file(
                    &format!("obs{dim}{boundary}{i}"),
                    &field(dim, boundary, extra),
                );
                whole_steps(&f, 600, 30);
            }
        }
    }
    for n in [1, 2, 3] {
        whole_steps("obstacles", n, 20);
    }
    whole_steps("obstacles", 4000, 10);
}

/// Species and predators: the built-in scenes at several sizes (a falcon among few starlings,
/// N near the species count), three species with a full interaction matrix in 3D and in a
/// reflecting world, many predators (the flight sums over all of them in id order), and species
/// with obstacles.
#[test]
fn whole_steps_match_the_cpu_with_species_and_predators() {
    for n in [2, 3, 40, 600] {
        whole_steps("murmuration-falcon", n, 20);
        whole_steps("two-flocks", n, 20);
    }
    let three = |dim: usize, boundary: &str, hunters: u32, obstacles: bool| {
        let (world, z) = if dim == 2 {
            ("[500, 400]", "")
        } else {
            ("[500, 400, 300]", ", 150")
        };
        let obstacles = if obstacles {
            format!(
                r#", "obstacles": [{{"circle": {{"center": [250, 200{z}], "radius": 40}}}},
                     {{"box": {{"min": [60, 60{b}], "max": [120, 140{c}]}}}}]"#,
                b = if dim == 2 { "" } else { ", 60" },
                c = if dim == 2 { "" } else { ", 140" },
            )
        } else {
            String::new()
        };
        format!(
            r#"{{"model": "boids", "dim": {dim}, "seed": 9, "dt": 0.05,
                "world": {{"size": {world}, "boundary": "{boundary}"}},
                "boids": {{"r_sep": 8, "r_ali": 30, "r_coh": 40, "w_sep": 40, "noise": 0.4}},
                "species": [
                  {{"name": "a", "agents": 300, "boids": {{"fov": 250, "w_flee": 500,
                    "flee_radius": 80}}}},
                  {{"name": "b", "agents": 200, "boids": {{"r_coh": 60, "v_max": 90,
                    "w_flee": 300, "flee_radius": 60}}}},
                  {{"name": "hawk", "agents": {hunters}, "role": "predator",
                    "boids": {{"chase_radius": 150, "w_chase": 300}}}}
                ],
                "interactions": {{
                  "a": {{"b": {{"separate": true, "align": true}}}},
                  "b": {{"a": {{"cohere": true}}, "hawk": {{"separate": true}}}}
                }}{obstacles},
                "init": {{"layout": "clusters", "count": 5, "radius": 70,
                          "velocity": "random"}}}}"#
        )
    };
    for dim in [2, 3] {
        for (boundary, hunters, obstacles) in [
            ("wrap", 3, false),
            ("reflect", 80, false),
            ("wrap", 5, true),
        ] {
            let json = three(dim, boundary, hunters, obstacles);
            let f = scene_file(&format!("sp{dim}{boundary}{hunters}{obstacles}"), &json);
            whole_steps(&f, 500 + hunters as usize, 25);
        }
    }
}

/// A timeline: species that come and go (the falcons of murmuration-falcon; one of the two
/// flocks of two-flocks, too many agents for the others' rare-agent path), and keys on the
/// largest species' parameters, applied to the kernels' tables as the CUDA solver applies them.
#[test]
fn whole_steps_match_the_cpu_with_a_timeline_of_species() {
    let keys = |list: &'static [(u64, &'static str, f64)]| {
        move |s: &mut forge::scene::Scene| {
            for &(step, param, value) in list {
                s.set_at(step, param, value).unwrap();
            }
        }
    };
    let falcon = keys(&[
        (0, "species[1].present", 0.0),
        (4, "species[1].present", 1.0),
        (9, "species[0].boids.v_max", 100.0),
        (9, "species[0].boids.w_ali", 9.0),
        (14, "species[1].present", 0.0),
    ]);
    let flock = keys(&[
        (3, "species[0].present", 0.0),
        (12, "species[0].present", 1.0),
    ]);
    for n in [3, 40, 600] {
        whole_steps_with("murmuration-falcon", n, 20, falcon);
        whole_steps_with("two-flocks", n, 20, flock);
    }
}
