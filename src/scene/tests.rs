//! The scene loader's unit tests.

use super::*;

fn parse_str(t: &str) -> Result<Scene, Vec<SceneError>> {
    parse(&Source {
        text: t,
        dir: Path::new("."),
        default_name: "t",
    })
}

#[test]
fn error_names_path_and_line() {
    let t = "{\n  \"model\": \"boids\",\n  \"world\": {\n    \"size\": [\n      -3,\n      100\n    ]\n  }\n}";
    let e = parse_str(t).unwrap_err();
    assert_eq!(
        e[0].to_string(),
        "scene.world.size[0]: must be > 0, got -3 (line 5)"
    );
}

#[test]
fn unknown_field_is_an_error_with_path() {
    let e = parse_str("{\"model\": \"boids\",\n \"boids\": {\"r_sepp\": 3}}").unwrap_err();
    let s = e[0].to_string();
    assert!(
        s.starts_with("scene.boids.r_sepp: unknown field `r_sepp`"),
        "{s}"
    );
    assert!(s.ends_with("(line 2)"), "{s}");
}

#[test]
fn presets_fill_defaults() {
    let s = parse_str("{\"preset\": \"vicsek1995\"}").unwrap();
    assert_eq!(s.model, Model::Vicsek);
    assert_eq!(s.agents, 4000);
    assert_eq!(s.world[0], 31.6);
    let s = parse_str("{\"preset\": \"cuplan\", \"dim\": 3}").unwrap();
    assert_eq!(s.boids.unwrap().r_sep, 1.5);
    assert_eq!(s.world, [60.0, 60.0, 60.0]);
}

#[test]
fn stored_json_round_trips() {
    let s = parse_str(
        "{\"model\": \"boids\", \"dim\": 3, \"init\": {\"layout\": \"clusters\", \"count\": 3}}",
    )
    .unwrap();
    let mut back = Scene::from_stored_json(&s.to_json()).unwrap();
    back.search = s.search;
    assert_eq!(s, back);
}
