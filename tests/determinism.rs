//! The determinism contract: the `.bfs` bytes depend on the scene alone — not on the thread
//! count, not on brute force vs grid, not on the candidate loop (AVX-512 or AVX2 where the CPU
//! has them, `FORGE_SIMD=avx2` at most AVX2, the scalar fallback that `FORGE_SIMD=off` forces).

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::common;

use common::*;

/// Above the solver's PARALLEL_MIN, so that --threads really splits the work.
const N: u32 = 6500;

fn scene(dir: &Path, name: &str, body: &str) -> std::path::PathBuf {
    write(dir, &format!("{name}.json"), body)
}

fn record(scene: &Path, out: &Path, extra: &[&str]) -> Vec<u8> {
    record_env(scene, out, extra, &[])
}

fn record_env(scene: &Path, out: &Path, extra: &[&str], env: &[(&str, &str)]) -> Vec<u8> {
    let dir = out.parent().unwrap();
    let mut args = vec![
        "simulate",
        scene.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--force",
        "--quiet",
    ];
    args.extend_from_slice(extra);
    succeeds_env(dir, &args, env);
    std::fs::read(out).unwrap()
}

fn check_all_variants(name: &str, body: &str) {
    let dir = tmp();
    let s = scene(dir.path(), name, body);
    let reference = record(
        &s,
        &dir.path().join("ref.bfs"),
        &["--threads", "1", "--search", "grid"],
    );
    assert!(reference.len() > 1000);
    // Every candidate loop × 1/2/7 threads × grid/brute force, and `auto`.
    for simd in ["on", "avx2", "off"] {
        for threads in ["1", "2", "7"] {
            for search in ["grid", "brute"] {
                let extra = ["--threads", threads, "--search", search];
                let env = [("FORGE_SIMD", simd)];
                let other = record_env(&s, &dir.path().join("other.bfs"), &extra, &env);
                assert!(
                    other == reference,
                    "{name}: FORGE_SIMD={simd}, {threads} threads, {search} wrote different \
                     bytes than 1 thread with the grid"
                );
            }
        }
    }
    let other = record(&s, &dir.path().join("other.bfs"), &[]);
    assert!(other == reference, "{name}: auto wrote different bytes");
}

#[test]
fn boids_2d_bytes_do_not_depend_on_threads_or_search() {
    check_all_variants(
        "b2",
        &format!(
            r#"{{"model": "boids", "agents": {N}, "steps": 6, "seed": 3,
               "world": {{"size": [900, 500], "boundary": "wrap"}},
               "boids": {{"w_sep": 40}},
               "init": {{"layout": "clusters", "count": 5, "radius": 60}}}}"#
        ),
    );
}

#[test]
fn boids_3d_bytes_do_not_depend_on_threads_or_search() {
    check_all_variants(
        "b3",
        &format!(
            r#"{{"model": "boids", "dim": 3, "agents": {N}, "steps": 5, "seed": 4,
               "world": {{"size": [300, 300, 300], "boundary": "reflect"}},
               "boids": {{"w_sep": 40}}}}"#
        ),
    );
}

/// Fewer agents than PARALLEL_MIN, but clustered: enough candidate pairs that the neighbour
/// pass splits across threads while the light passes stay on one.
#[test]
fn dense_small_flock_bytes_do_not_depend_on_threads_or_search() {
    check_all_variants(
        "dense",
        r#"{"model": "boids", "agents": 1500, "steps": 6, "seed": 6,
            "world": {"size": [600, 400], "boundary": "wrap"},
            "init": {"layout": "clusters", "count": 3, "radius": 40}}"#,
    );
}

#[test]
fn boids_3d_wrap_bytes_do_not_depend_on_threads_or_search() {
    // Interior cells take the grid's 3D fast path, which skips the minimum image.
    check_all_variants(
        "b3w",
        &format!(
            r#"{{"model": "boids", "dim": 3, "agents": {N}, "steps": 5, "seed": 9,
               "world": {{"size": [300, 240, 180], "boundary": "wrap"}},
               "boids": {{"w_sep": 40}}}}"#
        ),
    );
}

#[test]
fn vicsek_bytes_do_not_depend_on_threads_or_search() {
    check_all_variants(
        "v",
        &format!(
            r#"{{"preset": "vicsek1995", "agents": {N}, "steps": 6, "seed": 5, "world": {{"size": [40, 40]}}}}"#
        ),
    );
}

#[test]
fn vectorial_vicsek_bytes_do_not_depend_on_threads_or_search() {
    // Near the transition, v0 = 0.5: neighbour counts (which scale the noise) change every step.
    check_all_variants(
        "vv",
        &format!(
            r#"{{"preset": "vicsek1995", "agents": {N}, "steps": 6, "seed": 6, "world": {{"size": [80, 40]}},
               "vicsek": {{"v0": 0.5, "noise": 0.6, "noise_kind": "vectorial"}}}}"#
        ),
    );
}

#[test]
fn open_boundary_bytes_do_not_depend_on_search() {
    // Agents leave the box: the grid clamps them into edge cells and must still find them all.
    check_all_variants(
        "open",
        &format!(
            r#"{{"model": "boids", "agents": {N}, "steps": 6, "seed": 8,
               "world": {{"size": [400, 300], "boundary": "open"}},
               "boids": {{"w_sep": 40, "v_min": 150, "v_max": 400}},
               "init": {{"layout": "disc", "center": [390, 290], "radius": 60}}}}"#
        ),
    );
}

#[test]
fn topological_boids_bytes_do_not_depend_on_threads_or_search() {
    // The k nearest are chosen by (f32 distance, agent id), the same in every search and
    // slot order; a flock in clusters, so some agents find their 7 in the next ring.
    check_all_variants(
        "t2",
        &format!(
            r#"{{"model": "boids", "agents": {N}, "steps": 6, "seed": 3,
               "world": {{"size": [900, 500], "boundary": "wrap"}},
               "boids": {{"w_sep": 40, "neighbours": {{"kind": "topological", "k": 7}}}},
               "init": {{"layout": "clusters", "count": 5, "radius": 60}}}}"#
        ),
    );
    check_all_variants(
        "t3",
        &format!(
            r#"{{"model": "boids", "dim": 3, "agents": {N}, "steps": 5, "seed": 4,
               "world": {{"size": [300, 300, 300], "boundary": "reflect"}},
               "boids": {{"w_sep": 40, "r_ali": 10, "r_coh": 10,
                          "neighbours": {{"kind": "topological", "k": 6}}}}}}"#
        ),
    );
}

#[test]
fn heading_noise_and_a_field_of_view_bytes_do_not_depend_on_threads_or_search() {
    // Heading noise keyed by agent id (the grid re-sorts slots every step) and the blind-angle
    // test in every candidate loop: a narrow field in 2D (wrapping, across the seam), a wide
    // one in 3D (reflecting), and topological neighbours picked among those seen.
    check_all_variants(
        "nf2",
        &format!(
            r#"{{"model": "boids", "agents": {N}, "steps": 6, "seed": 3,
               "world": {{"size": [900, 500], "boundary": "wrap"}},
               "boids": {{"w_sep": 40, "noise": 2, "fov": 120}},
               "init": {{"layout": "clusters", "count": 5, "radius": 60}}}}"#
        ),
    );
    check_all_variants(
        "nf3",
        &format!(
            r#"{{"model": "boids", "dim": 3, "agents": {N}, "steps": 5, "seed": 4,
               "world": {{"size": [300, 300, 300], "boundary": "reflect"}},
               "boids": {{"w_sep": 40, "noise": 3, "fov": 250}}}}"#
        ),
    );
    check_all_variants(
        "nft",
        &format!(
            r#"{{"model": "boids", "agents": {N}, "steps": 5, "seed": 5,
               "world": {{"size": [900, 500], "boundary": "wrap"}},
               "boids": {{"w_sep": 40, "noise": 1, "fov": 200,
                          "neighbours": {{"kind": "topological", "k": 7}}}},
               "init": {{"layout": "clusters", "count": 5, "radius": 60}}}}"#
        ),
    );
}

#[test]
fn obstacle_bytes_do_not_depend_on_threads_or_search() {
    // Avoidance and the projection out of circles, boxes and segments, with agents packed
    // against them (clusters centred anywhere, some inside a shape at the start and moved):
    // 2D wrapping, 3D reflecting, and with topological neighbours.
    let shapes2 = r#"[{"circle": {"center": [300, 250], "radius": 70}},
                      {"circle": {"center": [620, 120], "radius": 30}},
                      {"box": {"min": [700, 300], "max": [800, 480]}},
                      {"segment": {"from": [100, 50], "to": [200, 400], "radius": 5}}]"#;
    check_all_variants(
        "ob2",
        &format!(
            r#"{{"model": "boids", "agents": {N}, "steps": 12, "seed": 3,
               "world": {{"size": [900, 500], "boundary": "wrap"}},
               "boids": {{"w_sep": 40, "w_avoid": 300, "look_ahead": 0.5}},
               "obstacles": {shapes2},
               "init": {{"layout": "clusters", "count": 5, "radius": 60}}}}"#
        ),
    );
    check_all_variants(
        "ob3",
        &format!(
            r#"{{"model": "boids", "dim": 3, "agents": {N}, "steps": 8, "seed": 4,
               "world": {{"size": [300, 300, 300], "boundary": "reflect"}},
               "boids": {{"w_sep": 40, "noise": 1}},
               "obstacles": [{{"sphere": {{"center": [150, 150, 150], "radius": 60}}}},
                             {{"box": {{"min": [0, 0, 0], "max": [80, 300, 40]}}}},
                             {{"segment": {{"from": [200, 20, 20], "to": [280, 280, 280], "radius": 6}}}}]}}"#
        ),
    );
    check_all_variants(
        "obt",
        &format!(
            r#"{{"model": "boids", "agents": {N}, "steps": 6, "seed": 5,
               "world": {{"size": [900, 500], "boundary": "wrap"}},
               "boids": {{"w_sep": 40, "fov": 200, "neighbours": {{"kind": "topological", "k": 7}}}},
               "obstacles": {shapes2},
               "init": {{"layout": "clusters", "count": 5, "radius": 60}}}}"#
        ),
    );
}

/// `FORGE_SIMD=off` really selects the scalar loop (else the comparisons above would compare
/// AVX2 with itself), and AVX2 runs where the CPU has it.
#[test]
fn forge_simd_selects_the_candidate_loop() {
    let dir = tmp();
    let args = ["bench", "--only", "crossover", "--seconds", "0"];
    let off = succeeds_env(dir.path(), &args, &[("FORGE_SIMD", "off")]);
    has(&off.stdout, "scalar candidate loop");
    let cpu = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flag = |f: &str| cpu.split_whitespace().any(|w| w == f);
    if cfg!(target_arch = "x86_64") && flag("avx2") {
        let avx2 = succeeds_env(dir.path(), &args, &[("FORGE_SIMD", "avx2")]);
        has(&avx2.stdout, "AVX2 candidate loop");
        let best = succeeds_env(dir.path(), &args, &[("FORGE_SIMD", "on")]);
        let want = if flag("avx512f") && flag("avx512dq") && flag("avx512vl") {
            "AVX-512 candidate loop"
        } else {
            "AVX2 candidate loop"
        };
        has(&best.stdout, want);
    }
}

/// Physics changes must be deliberate: this hash changes only when the step, the initial
/// conditions or the format change. Update it in the same commit, saying why.
#[test]
fn pinned_hash_of_a_small_scene() {
    let dir = tmp();
    let s = scene(
        dir.path(),
        "pinned",
        r#"{"model": "boids", "agents": 300, "steps": 40, "seed": 2024,
            "world": {"size": [400, 300], "boundary": "wrap"}, "boids": {"w_sep": 40}}"#,
    );
    let bytes = record(&s, &dir.path().join("p.bfs"), &[]);
    for simd in ["avx2", "off"] {
        let other = record_env(&s, &dir.path().join("q.bfs"), &[], &[("FORGE_SIMD", simd)]);
        assert!(other == bytes, "FORGE_SIMD={simd} changed the boids bytes");
    }
    let v = scene(
        dir.path(),
        "pinned_v",
        r#"{"preset": "vicsek1995", "agents": 300, "steps": 40, "seed": 2024, "world": {"size": [8.66, 8.66]}}"#,
    );
    let vbytes = record(&v, &dir.path().join("v.bfs"), &[]);
    for simd in ["avx2", "off"] {
        let other = record_env(&v, &dir.path().join("w.bfs"), &[], &[("FORGE_SIMD", simd)]);
        assert!(
            other == vbytes,
            "FORGE_SIMD={simd} changed the vicsek bytes"
        );
    }
    let vv = scene(
        dir.path(),
        "pinned_vv",
        r#"{"preset": "vicsek1995", "agents": 300, "steps": 40, "seed": 2024, "world": {"size": [8.66, 8.66]},
            "vicsek": {"noise_kind": "vectorial"}}"#,
    );
    let vvbytes = record(&vv, &dir.path().join("vv.bfs"), &[]);
    let t = scene(
        dir.path(),
        "pinned_t",
        r#"{"model": "boids", "agents": 300, "steps": 40, "seed": 2024,
            "world": {"size": [400, 300], "boundary": "wrap"},
            "boids": {"w_sep": 40, "neighbours": {"kind": "topological", "k": 7}}}"#,
    );
    let tbytes = record(&t, &dir.path().join("t.bfs"), &[]);
    let mut nf = Vec::new();
    for (name, body) in [
        (
            "pinned_nf2",
            r#"{"model": "boids", "agents": 300, "steps": 40, "seed": 2024,
                "world": {"size": [400, 300], "boundary": "wrap"},
                "boids": {"w_sep": 40, "noise": 2, "fov": 120}}"#,
        ),
        (
            "pinned_nf3",
            r#"{"model": "boids", "dim": 3, "agents": 300, "steps": 40, "seed": 2024,
                "world": {"size": [200, 200, 200], "boundary": "wrap"},
                "boids": {"w_sep": 40, "noise": 3, "fov": 250}}"#,
        ),
    ] {
        let sc = scene(dir.path(), name, body);
        let b = record(&sc, &dir.path().join("nf.bfs"), &[]);
        for simd in ["avx2", "off"] {
            let other = record_env(
                &sc,
                &dir.path().join("nf_o.bfs"),
                &[],
                &[("FORGE_SIMD", simd)],
            );
            assert!(other == b, "FORGE_SIMD={simd} changed the {name} bytes");
        }
        nf.push(b);
    }
    let hex = |b: &[u8]| format!("{:x}", Sha256::digest(b));
    assert_eq!(hex(&bytes), PINNED_BOIDS, "boids output changed");
    assert_eq!(hex(&vbytes), PINNED_VICSEK, "vicsek output changed");
    assert_eq!(
        hex(&vvbytes),
        PINNED_VICSEK_VECTORIAL,
        "vectorial-noise vicsek output changed"
    );
    assert_eq!(
        hex(&tbytes),
        PINNED_BOIDS_TOPOLOGICAL,
        "topological boids output changed"
    );
    assert_eq!(
        [hex(&nf[0]), hex(&nf[1])],
        [PINNED_BOIDS_NOISE_FOV_2D, PINNED_BOIDS_NOISE_FOV_3D],
        "boids output with heading noise and a field of view changed"
    );
}

const PINNED_BOIDS: &str = "b6e522702945917a7469918480cedcf1df8bd8d042035cbb70a7ddb28cd5cfbf";
const PINNED_VICSEK: &str = "ab88e8f512d9eecc01d8b31b529fc6dc762c913c1dafd30ec7792b674ad0c3fe";
const PINNED_VICSEK_VECTORIAL: &str =
    "16dd6891b182ddbe232751c579ba6b77984ffdc2e55cc7109e793780dd487100";
const PINNED_BOIDS_TOPOLOGICAL: &str =
    "8414812d4d30006dd316caa8e0b051a6d7fbe19adbb0f4e28148b2639655bdfe";
const PINNED_BOIDS_NOISE_FOV_2D: &str =
    "9068d144aa8677171df436972100c2853357645961a9b23895bc51f915faf80d";
const PINNED_BOIDS_NOISE_FOV_3D: &str =
    "b542b9b34916f991db7836fa479f259c67ae82984829961a82d150da418e31f1";

#[test]
fn species_bytes_do_not_depend_on_threads_search_or_simd() {
    // Two flocks and two predators, each species with its own radii, weights, speeds, noise
    // and field of view, an interaction matrix that is not symmetric, and an obstacle.
    let species2 = r#"[
        {"name": "a", "agents": 4000, "boids": {"w_flee": 300, "flee_radius": 60, "fov": 270}},
        {"name": "b", "agents": 2498, "boids": {"r_ali": 20, "w_coh": 2, "v_max": 120, "noise": 1,
                                                "w_flee": 200}},
        {"name": "hawk", "agents": 2, "role": "predator",
         "boids": {"v_min": 100, "v_max": 220, "chase_radius": 200, "w_chase": 300}}]"#;
    let inter = r#"{"a": {"b": {"align": true}}, "b": {"a": {"separate": false, "cohere": true}}}"#;
    check_all_variants(
        "sp2",
        &format!(
            r#"{{"model": "boids", "steps": 8, "seed": 3,
               "world": {{"size": [900, 500], "boundary": "wrap"}},
               "boids": {{"w_sep": 40}},
               "species": {species2}, "interactions": {inter},
               "obstacles": [{{"circle": {{"center": [450, 250], "radius": 40}}}}],
               "init": {{"layout": "clusters", "count": 5, "radius": 60}}}}"#
        ),
    );
    check_all_variants(
        "sp3",
        &format!(
            r#"{{"model": "boids", "dim": 3, "agents": {N}, "steps": 6, "seed": 4,
               "world": {{"size": [300, 300, 300], "boundary": "reflect"}},
               "boids": {{"w_sep": 40}},
               "species": [{{"name": "fish", "agents": {}, "boids": {{"noise": 1}}}},
                           {{"name": "shark", "agents": 3, "role": "predator"}}]}}"#,
            N - 3
        ),
    );
}
