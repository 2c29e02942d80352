//! Species on the timeline: `add` and `remove` take a whole species in and out of the world.
//! Through the real binary: an absent species does not move and changes no one's step (absent
//! for the whole run, the others' bytes are those of the scene without it); the run keeps the
//! determinism contract; every reader leaves its agents out of the frames of those steps.

use std::path::Path;

use crate::common::*;

/// 600 starlings and two falcons (murmuration-falcon's birds, the falcons drawn red and four
/// times the size); `timeline` as given.
pub fn falcons(timeline: &str, with_falcons: bool) -> String {
    let falcon = r##",
    {"name": "falcon", "agents": 2, "role": "predator",
     "boids": {"v_min": 90, "v_max": 160, "max_force": 300, "chase_radius": 500, "w_chase": 300},
     "render": {"colour": "#ff0000", "size": 4}}"##;
    let flee = if with_falcons {
        r#", "w_flee": 600, "flee_radius": 90"#
    } else {
        ""
    };
    format!(
        r##"{{"model": "boids", "dim": 2, "dt": 0.05, "steps": 90, "seed": 5,
 "world": {{"size": [640, 360], "boundary": "wrap"}},
 "boids": {{"r_sep": 7, "r_ali": 30, "r_coh": 50, "w_sep": 60, "w_ali": 3.0, "w_coh": 0.45,
           "max_force": 150, "v_min": 60, "v_max": 170, "fov": 300, "noise": 0.3}},
 "init": {{"layout": "clusters", "count": 4, "radius": 60, "velocity": "aligned"}},
 "species": [
    {{"name": "starling", "agents": 600, "boids": {{"max_force": 400{flee}}},
     "render": {{"colour": "#202020"}}}}{falcon}
 ],
 "render": {{"style": "ink", "color": "species", "trails": 0, "bloom": 0, "vignette": 0}},
 "timeline": {timeline}}}"##,
        falcon = if with_falcons { falcon } else { "" },
    )
}

pub const IN_AND_OUT: &str =
    r#"[{"step": 30, "add": ["species[1]"]}, {"step": 60, "remove": ["species[1]"]}]"#;

fn simulate(dir: &Path, scene: &str, out: &str, extra: &[&str]) -> Vec<u8> {
    let mut args = vec![
        "simulate",
        scene,
        "-o",
        out,
        "--backend",
        "cpu",
        "-q",
        "--force",
    ];
    args.extend_from_slice(extra);
    succeeds(dir, &args);
    std::fs::read(dir.join(out)).unwrap()
}

/// The falcons' positions (agents 600 and 601) in every frame, as stored.
fn falcon_positions(bfs: &Path) -> Vec<[f32; 4]> {
    let mut r = forge::bfs::Reader::open(bfs).unwrap();
    (0..r.frame_count())
        .map(|k| {
            let f = r.read_frame(k).unwrap();
            let n = f.agents(2);
            [f.pos[600], f.pos[601], f.pos[n + 600], f.pos[n + 601]]
        })
        .collect()
}

#[test]
fn a_species_comes_and_goes_and_stays_where_it_went() {
    let d = tmp();
    write(d.path(), "inout.json", &falcons(IN_AND_OUT, true));
    let bytes = simulate(d.path(), "inout.json", "inout.bfs", &[]);
    let p = falcon_positions(&d.path().join("inout.bfs"));
    // Out of the world until step 30 and from step 60: where it came in, where it went.
    assert!(
        p[..=30].iter().all(|x| x == &p[0]),
        "falcons moved before step 30"
    );
    assert_ne!(p[31], p[30], "falcons did not move once added");
    assert_ne!(
        p[60], p[59],
        "falcons did not move before they were removed"
    );
    assert!(
        p[60..].iter().all(|x| x == &p[60]),
        "falcons moved after step 60"
    );
    // The determinism contract: threads and searches give the same bytes.
    for (threads, search) in [("1", "grid"), ("2", "brute")] {
        let other = simulate(
            d.path(),
            "inout.json",
            "other.bfs",
            &["--threads", threads, "--search", search],
        );
        assert!(
            other == bytes,
            "--threads {threads} --search {search} differs"
        );
    }
    // Absent the whole run, the falcons change nothing: the starlings' bytes are those of the
    // scene without them.
    write(
        d.path(),
        "absent.json",
        &falcons(r#"[{"step": 0, "remove": ["species[1]"]}]"#, true),
    );
    write(d.path(), "alone.json", &falcons("[]", false));
    simulate(d.path(), "absent.json", "absent.bfs", &[]);
    simulate(d.path(), "alone.json", "alone.bfs", &[]);
    let mut a = forge::bfs::Reader::open(&d.path().join("absent.bfs")).unwrap();
    let mut b = forge::bfs::Reader::open(&d.path().join("alone.bfs")).unwrap();
    for k in [1, 45, 90] {
        let (fa, fb) = (a.read_frame(k).unwrap(), b.read_frame(k).unwrap());
        assert_eq!(fa.absent, vec![(600, 602)], "frame {k}");
        let mut fa = fa;
        fa.drop_absent(2);
        assert!(
            fa.pos == fb.pos && fa.vel == fb.vel,
            "frame {k}: absent falcons changed the starlings' steps"
        );
    }
}

#[test]
fn readers_leave_absent_agents_out() {
    let d = tmp();
    write(d.path(), "inout.json", &falcons(IN_AND_OUT, true));
    simulate(d.path(), "inout.json", "inout.bfs", &[]);
    // CSV and XYZ: the rows of the agents there.
    succeeds(
        d.path(),
        &[
            "export",
            "inout.bfs",
            "-o",
            "f.csv",
            "--frames",
            "29..32",
            "-q",
        ],
    );
    let csv = std::fs::read_to_string(d.path().join("f.csv")).unwrap();
    let rows = |frame: &str| {
        csv.lines()
            .filter(|l| l.starts_with(&format!("{frame},")))
            .count()
    };
    assert_eq!((rows("29"), rows("30"), rows("31")), (600, 602, 602));
    succeeds(
        d.path(),
        &[
            "export",
            "inout.bfs",
            "-o",
            "f.xyz",
            "--frames",
            "59..61",
            "-q",
        ],
    );
    let xyz = std::fs::read_to_string(d.path().join("f.xyz")).unwrap();
    let counts: Vec<&str> = xyz.lines().filter(|l| !l.contains(' ')).collect();
    assert_eq!(counts, ["602", "600"]);
    // `forge info`'s metrics are those of the agents there.
    let info = succeeds(d.path(), &["info", "inout.bfs", "--json"]).stdout;
    let v: serde_json::Value = serde_json::from_str(&info).unwrap();
    let last = v["metrics"]["last"]["polarization"].as_f64().unwrap();
    let mut r = forge::bfs::Reader::open(&d.path().join("inout.bfs")).unwrap();
    let f = r.read_frame(90).unwrap();
    let n = f.agents(2);
    let starlings: Vec<f32> = [&f.vel[..600], &f.vel[n..n + 600]].concat();
    let all = forge::metrics::polarization(2, n, &f.vel);
    let there = forge::metrics::polarization(2, 600, &starlings);
    assert!(
        (last - there).abs() < 1e-9,
        "info {last}, the starlings' {there}"
    );
    assert!(
        (all - there).abs() > 1e-6,
        "the falcons would not have changed it"
    );
}

/// The renderer draws the falcons (red, four times the size) only while they are there.
#[test]
fn the_renderer_hides_an_absent_species() {
    if !have_gpu("the_renderer_hides_an_absent_species") {
        return;
    }
    let d = tmp();
    write(d.path(), "inout.json", &falcons(IN_AND_OUT, true));
    simulate(d.path(), "inout.json", "inout.bfs", &[]);
    // Pixels drawn red (the falcons) and dark (the starlings, #202020 on a dusk sky).
    let counts = |rec: &str, k: u64| {
        let out = format!("{rec}{k}.png");
        let k = k.to_string();
        let args = [
            "still", rec, "--frame", &k, "--size", "320x180", "-o", &out, "-q",
        ];
        succeeds(d.path(), &args);
        let (_, _, px) = read_png(&d.path().join(&out));
        let red = px
            .chunks(4)
            .filter(|p| p[0] > 120 && p[1] < 60 && p[2] < 60);
        let dark = px.chunks(4).filter(|p| p[0] < 90 && p[1] < 90 && p[2] < 90);
        (red.count(), dark.count())
    };
    let red = |k| counts("inout.bfs", k).0;
    assert_eq!(red(20), 0, "frame 20: a falcon drawn before it is added");
    assert!(red(45) > 4, "frame 45: no falcon drawn");
    assert_eq!(red(75), 0, "frame 75: a falcon drawn after it is removed");
    // The starlings (the first 600 agents) taken out at step 30: the falcons left keep their
    // own colour and size.
    let out = r#"[{"step": 30, "remove": ["species[0]"]}]"#;
    write(d.path(), "alone.json", &falcons(out, true));
    simulate(d.path(), "alone.json", "alone.bfs", &[]);
    let (red, dark) = counts("alone.bfs", 45);
    assert!(
        red > 0 && dark == 0,
        "frame 45: {red} red and {dark} dark pixels"
    );
    assert!(
        counts("alone.bfs", 20).1 > 100,
        "frame 20: no starlings drawn"
    );
}

#[test]
fn bad_species_events_are_refused_naming_the_event() {
    let d = tmp();
    let cases: [(&str, &str); 6] = [
        (
            r#"[{"step": 5, "add": ["species[2]"]}]"#,
            "scene.timeline[0].add[0]: the scene has 2 species (species[0] to species[1])",
        ),
        (
            r#"[{"step": 5, "remove": ["species[1]"]}, {"step": 9, "remove": ["species[1]"]}]"#,
            "scene.timeline[1].remove[0]: species[1] is already gone at step 9",
        ),
        (
            r#"[{"step": 5, "set": {"species[1].present": 0.5}}]"#,
            r#"scene.timeline[0].set["species[1].present"]: must be 1 (there) or 0 (gone), got 0.5"#,
        ),
        (
            r#"[{"step": 5, "remove": ["falcon"]}]"#,
            r#"scene.timeline[0].remove[0]: must name an obstacle or a species of the scene, "obstacles[i]" or "species[i]""#,
        ),
        // A world with nobody in it: every species out at once, or none there at step 0.
        (
            r#"[{"step": 5, "remove": ["species[1]"]}, {"step": 9, "remove": ["species[0]"]}]"#,
            "scene.timeline[1].remove[0]: takes species[0] out at step 9, and no species is left",
        ),
        (
            r#"[{"step": 4, "add": ["species[0]", "species[1]"]}]"#,
            "scene.timeline[0].add[0]: every species is out until an `add` brings it in \
             (species[0] at step 4), so the world starts empty",
        ),
    ];
    for (i, (timeline, message)) in cases.iter().enumerate() {
        let name = format!("bad{i}.json");
        write(d.path(), &name, &falcons(timeline, true));
        fails_cleanly(
            d.path(),
            &["simulate", &name, "-o", "out.bfs"],
            &[message],
            &["out.bfs"],
        );
    }
}
