//! `forge export -o run.glb`: binary glTF read back here frame by frame, and opened for real in
//! Blender (Debian's 3.4, built without USD: its glTF importer is what it has), headless, by
//! `scripts/blender-check.py`, whose render from straight above is compared with `forge still`.

use std::path::Path;

use crate::common::*;

/// Three tight clusters in a 16:9 reflecting world, drawn plainly (one unit a pixel at
/// 320×180).
const SCENE: &str = r##"{"model": "boids", "agents": 600, "steps": 30, "seed": 4,
 "world": {"size": [320, 180], "boundary": "reflect"},
 "init": {"layout": "clusters", "count": 3, "radius": 20, "velocity": "aligned"},
 "render": {"background": "#000000", "bloom": 0, "vignette": 0, "trails": 0}}"##;

/// The recording's positions of frame `k`, (x, y, 0) per agent.
fn positions(bfs: &Path, k: u64) -> Vec<[f32; 3]> {
    let mut r = forge::bfs::Reader::open(bfs).unwrap();
    let f = r.read_frame(k).unwrap();
    let n = f.agents(2);
    (0..n).map(|i| [f.pos[i], f.pos[n + i], 0.0]).collect()
}

/// The GLB's JSON chunk and binary chunk.
fn chunks(glb: &[u8]) -> (serde_json::Value, &[u8]) {
    let word = |at: usize| u32::from_le_bytes(glb[at..at + 4].try_into().unwrap()) as usize;
    assert_eq!(&glb[..4], b"glTF");
    assert_eq!(word(4), 2, "glTF version");
    assert_eq!(word(8), glb.len(), "the header's length");
    let json_len = word(12);
    assert_eq!(&glb[16..20], b"JSON");
    let doc = serde_json::from_slice(&glb[20..20 + json_len]).unwrap();
    let bin = 20 + json_len;
    assert_eq!(&glb[bin + 4..bin + 8], b"BIN\0");
    (doc, &glb[bin + 8..bin + 8 + word(bin)])
}

/// Accessor `a`'s floats (from its buffer view).
fn floats(doc: &serde_json::Value, bin: &[u8], a: usize) -> Vec<f32> {
    let acc = &doc["accessors"][a];
    let view = &doc["bufferViews"][acc["bufferView"].as_u64().unwrap() as usize];
    let at = view["byteOffset"].as_u64().unwrap() as usize;
    let len = view["byteLength"].as_u64().unwrap() as usize;
    bin[at..at + len]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

#[test]
fn a_glb_export_holds_every_frame_as_a_morph_target() {
    let d = tmp();
    write(d.path(), "s.json", SCENE);
    succeeds(d.path(), &["simulate", "s.json", "-o", "s.bfs", "-q"]);
    succeeds(
        d.path(),
        &[
            "export", "s.bfs", "-o", "s.glb", "--frames", "5..25", "--every", "5", "-q",
        ],
    );
    let glb = std::fs::read(d.path().join("s.glb")).unwrap();
    let (doc, bin) = chunks(&glb);
    let prim = &doc["meshes"][0]["primitives"][0];
    assert_eq!(prim["mode"], 0, "a point cloud");
    let targets = prim["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 3, "frames 10, 15, 20 over frame 5");
    let anim = &doc["animations"][0];
    assert_eq!(anim["samplers"][0]["interpolation"], "STEP");
    assert_eq!(anim["channels"][0]["target"]["path"], "weights");
    // The times: frame K at K / 30 s.
    let times = floats(
        &doc,
        bin,
        anim["samplers"][0]["input"].as_u64().unwrap() as usize,
    );
    assert_eq!(times, [5.0, 10.0, 15.0, 20.0].map(|k| k / 30.0));
    // Frame 5 as the base, each later frame the base plus its target; glTF's Y-up (x, z, −y).
    let bfs = d.path().join("s.bfs");
    let base = floats(&doc, bin, 0);
    for (j, k) in [5u64, 10, 15, 20].into_iter().enumerate() {
        let want = positions(&bfs, k);
        let delta = match j {
            0 => vec![0.0; base.len()],
            _ => floats(
                &doc,
                bin,
                targets[j - 1]["POSITION"].as_u64().unwrap() as usize,
            ),
        };
        for (i, w) in want.iter().enumerate() {
            let got: [f32; 3] = std::array::from_fn(|c| base[3 * i + c] + delta[3 * i + c]);
            let back = [got[0], -got[2], got[1]];
            for c in 0..3 {
                assert!(
                    (back[c] - w[c]).abs() <= 1e-3,
                    "frame {k} agent {i}: {back:?}, recorded {w:?}"
                );
            }
        }
        // Every POSITION accessor states its bounds, as glTF requires.
        let a = if j == 0 {
            0
        } else {
            targets[j - 1]["POSITION"].as_u64().unwrap() as usize
        };
        assert!(doc["accessors"][a]["min"].is_array() && doc["accessors"][a]["max"].is_array());
    }
    // The weights: one frame's target on at each time, sparse.
    let w = &doc["accessors"][anim["samplers"][0]["output"].as_u64().unwrap() as usize];
    assert_eq!(w["count"], 12);
    assert_eq!(w["sparse"]["count"], 3);
}

/// The floats of the accessor that `node`'s `path` channel animates to.
fn channel(doc: &serde_json::Value, bin: &[u8], node: u64, path: &str) -> Vec<f32> {
    let anim = &doc["animations"][0];
    let ch = anim["channels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["target"]["node"] == node && c["target"]["path"] == path)
        .unwrap_or_else(|| panic!("no {path} channel for node {node}"));
    let sampler = &anim["samplers"][ch["sampler"].as_u64().unwrap() as usize];
    assert_eq!(sampler["interpolation"], "STEP");
    floats(doc, bin, sampler["output"].as_u64().unwrap() as usize)
}

/// Two species are two nodes under `Agents`, named and coloured as the scene has them, each
/// holding its agents' recorded positions; where a species comes and goes (the falcons added at
/// step 30 and removed at 60), its node is scaled to nothing in the frames where it is out of
/// the world, and Blender shows the agents there, frame by frame.
#[test]
fn species_are_nodes_and_one_out_of_the_world_is_scaled_to_nothing() {
    use crate::species_keys::{falcons, IN_AND_OUT};
    let d = tmp();
    write(d.path(), "inout.json", &falcons(IN_AND_OUT, true));
    succeeds(
        d.path(),
        &["simulate", "inout.json", "-o", "inout.bfs", "-q"],
    );
    let args = [
        "export",
        "inout.bfs",
        "-o",
        "f.glb",
        "--frames",
        "20..70",
        "--every",
        "5",
    ];
    succeeds(d.path(), &[&args[..], &["-q"]].concat());
    let glb = std::fs::read(d.path().join("f.glb")).unwrap();
    let (doc, bin) = chunks(&glb);
    assert_eq!(doc["nodes"][0]["name"], "Agents");
    assert_eq!(doc["nodes"][0]["children"], serde_json::json!([1, 2]));
    assert_eq!(doc["nodes"][1]["name"], "starling");
    assert_eq!(doc["nodes"][2]["name"], "falcon");
    let frames: Vec<u64> = (20..70).step_by(5).collect();
    // Scale 1 where the species is there, 0 where it is out: the falcons from frame 30 to 55.
    let falcon: Vec<f32> = frames
        .iter()
        .map(|&k| if (30..60).contains(&k) { 1.0 } else { 0.0 })
        .flat_map(|s| [s; 3])
        .collect();
    assert_eq!(channel(&doc, bin, 2, "scale"), falcon);
    assert_eq!(channel(&doc, bin, 1, "scale"), vec![1.0; 3 * frames.len()]);
    // Each node's points: its agents' recorded positions, frame by frame (glTF's Y-up).
    let bfs = d.path().join("inout.bfs");
    for (node, lo, hi) in [(1u64, 0usize, 600usize), (2, 600, 602)] {
        let mesh = &doc["meshes"][doc["nodes"][node as usize]["mesh"].as_u64().unwrap() as usize];
        let prim = &mesh["primitives"][0];
        let base = floats(
            &doc,
            bin,
            prim["attributes"]["POSITION"].as_u64().unwrap() as usize,
        );
        assert_eq!(base.len(), 3 * (hi - lo));
        for (j, &k) in frames.iter().enumerate() {
            let delta = match j {
                0 => vec![0.0; base.len()],
                _ => {
                    let t = prim["targets"][j - 1]["POSITION"].as_u64().unwrap() as usize;
                    floats(&doc, bin, t)
                }
            };
            let want = &positions(&bfs, k)[lo..hi];
            for (i, w) in want.iter().enumerate() {
                let got: [f32; 3] = std::array::from_fn(|c| base[3 * i + c] + delta[3 * i + c]);
                let back = [got[0], -got[2], got[1]];
                assert!(
                    (0..3).all(|c| (back[c] - w[c]).abs() <= 1e-3),
                    "frame {k} agent {}: {back:?}, recorded {w:?}",
                    lo + i
                );
            }
        }
    }
    // Each species' colour is its material (linear: the starlings' #202020, the falcons' red).
    let grey = forge::render::srgb_to_linear(32.0 / 255.0) as f64;
    for (node, want) in [(1, [grey, grey, grey, 1.0]), (2, [1.0, 0.0, 0.0, 1.0])] {
        let mesh = doc["nodes"][node]["mesh"].as_u64().unwrap() as usize;
        let m = doc["meshes"][mesh]["primitives"][0]["material"]
            .as_u64()
            .unwrap() as usize;
        let got = &doc["materials"][m]["pbrMetallicRoughness"]["baseColorFactor"];
        let got: Vec<f64> = got
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert!(
            got.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-6),
            "node {node}: {got:?}, want {want:?}"
        );
    }
    // Every species there in the frames chosen: a node per species still, and no scale channel.
    let inside = [
        "export",
        "inout.bfs",
        "-o",
        "in.glb",
        "--frames",
        "30..60",
        "-q",
    ];
    succeeds(d.path(), &inside);
    let glb = std::fs::read(d.path().join("in.glb")).unwrap();
    let (doc, _) = chunks(&glb);
    assert_eq!(doc["nodes"][0]["children"], serde_json::json!([1, 2]));
    let channels = doc["animations"][0]["channels"].as_array().unwrap();
    assert!(channels.iter().all(|c| c["target"]["path"] == "weights"));
    // Blender: at each frame, the points shown are the agents there.
    if !have_blender("species_are_nodes...") {
        return;
    }
    let expected: serde_json::Map<String, serde_json::Value> = [25u64, 30, 45, 60]
        .into_iter()
        .map(|k| {
            let n = if (30..60).contains(&k) { 602 } else { 600 };
            (k.to_string(), serde_json::json!(positions(&bfs, k)[..n]))
        })
        .collect();
    let expected = serde_json::json!({"frames": expected, "world": [640, 360]});
    write(d.path(), "expected.json", &expected.to_string());
    blender_check(d.path(), &["f.glb", "expected.json"]);
}

/// Whether Blender runs here; where it does not, fails if FORGE_REQUIRE_BLENDER is set.
fn have_blender(test: &str) -> bool {
    let blender = std::process::Command::new("blender")
        .arg("--version")
        .output();
    if blender.is_ok_and(|o| o.status.success()) {
        return true;
    }
    skip_unless_required(
        "FORGE_REQUIRE_BLENDER",
        &format!("{test}: Blender missing (apt-get install blender python3-numpy)"),
    );
    false
}

/// Runs scripts/blender-check.py in `dir` with `args`; it must print "blender-check: ok".
fn blender_check(dir: &Path, args: &[&str]) {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/blender-check.py");
    let out = std::process::Command::new("blender")
        .args(["-b", "--factory-startup", "-P"])
        .arg(&script)
        .arg("--")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("blender runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("blender-check: ok"),
        "blender-check failed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// How many lit pixels (luma above 40) each cell of a 16×9 grid over a 320×180 image holds.
fn lit_cells(png: &Path) -> Vec<f64> {
    let (w, h, px) = read_png(png);
    assert_eq!((w, h), (320, 180));
    let c = px.len() / (320 * 180);
    let mut cells = vec![0.0; 16 * 9];
    for y in 0..180 {
        for x in 0..320 {
            let p = &px[(y * 320 + x) * c..];
            let luma = 0.2126 * p[0] as f64 + 0.7152 * p[1] as f64 + 0.0722 * p[2] as f64;
            if luma > 40.0 {
                cells[(y / 20) * 16 + x / 20] += 1.0;
            }
        }
    }
    cells
}

fn correlation(a: &[f64], b: &[f64]) -> f64 {
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (ma, mb) = (mean(a), mean(b));
    let cov: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let var = |v: &[f64], m: f64| v.iter().map(|x| (x - m).powi(2)).sum::<f64>();
    cov / (var(a, ma) * var(b, mb)).sqrt()
}

#[test]
fn blender_imports_the_glb_and_renders_the_agents_where_forge_draws_them() {
    if !have_blender("blender_imports_the_glb...") {
        return;
    }
    let d = tmp();
    write(d.path(), "s.json", SCENE);
    succeeds(d.path(), &["simulate", "s.json", "-o", "s.bfs", "-q"]);
    succeeds(d.path(), &["export", "s.bfs", "-o", "s.glb", "-q"]);
    let bfs = d.path().join("s.bfs");
    let frames: serde_json::Map<String, serde_json::Value> = [0u64, 10, 30]
        .into_iter()
        .map(|k| (k.to_string(), serde_json::json!(positions(&bfs, k))))
        .collect();
    let expected = serde_json::json!({"frames": frames, "world": [320, 180], "size": [320, 180]});
    write(d.path(), "expected.json", &expected.to_string());
    blender_check(d.path(), &["s.glb", "expected.json", "blender.png"]);
    // Blender's render from straight above against forge's still of the same frame: the same
    // places lit (the lit pixels per 20×20 cell correlate; forge's sprites are larger and
    // coloured, Blender's points white).
    if !have_gpu("blender_imports_the_glb_and_renders_the_agents_where_forge_draws_them") {
        return;
    }
    let args = [
        "still",
        "s.bfs",
        "--frame",
        "30",
        "--size",
        "320x180",
        "-o",
        "forge.png",
        "-q",
    ];
    succeeds(d.path(), &args);
    let (b, f) = (
        lit_cells(&d.path().join("blender.png")),
        lit_cells(&d.path().join("forge.png")),
    );
    assert!(
        b.iter().sum::<f64>() > 100.0,
        "Blender's render is nearly empty"
    );
    let r = correlation(&b, &f);
    assert!(
        r > 0.9,
        "lit cells of Blender's render and forge's still correlate {r:.3}"
    );
}
