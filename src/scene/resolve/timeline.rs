//! `scene.timeline` checked key by key (src/scene/timeline.rs has what it means): each key's
//! step or time, its interpolation, and every value it sets by the same rules as the scene
//! field of that name, all named `scene.timeline[k].set["vicsek.noise"]`.

use std::collections::{BTreeMap, HashMap};

use super::super::timeline::{BoidsField, Interpolation, Key, ObstacleField, Target};
use super::super::{Scene, SceneError, MAX_STEPS};
use super::{any_f, fmt_num, fov_at, heading_noise_at, pos_f, shown, vicsek_noise, Ctx};

/// One key as written: a step or a time, what it sets, how it gets there.
#[derive(Clone, serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(in crate::scene) struct KeyFile {
    step: Option<i64>,
    time: Option<f64>,
    /// Any JSON value: checked here, so that a misspelling gets a message listing the kinds.
    interpolation: Option<serde_json::Value>,
    #[serde(default, deserialize_with = "crate::look::keys::unique_map_or_none")]
    set: Option<BTreeMap<String, serde_json::Value>>,
    /// Events: obstacles or species that appear (`"add": ["obstacles[2]", "species[1]"]`) or
    /// go (`"remove"`) here.
    add: Option<serde_json::Value>,
    remove: Option<serde_json::Value>,
    /// Set while a run played (a saved scene holds them): see [`Key::live`].
    live: Option<bool>,
}

/// One value a key sets, as written: where messages name it, its parameter path, its value.
struct Entry {
    path: String,
    param: String,
    value: serde_json::Value,
}

/// A key's values: its `set` (a point given whole, `"obstacles[0].center": [x, y]`, becomes one
/// value per coordinate) and its events (`obstacles[i].present` or `species[i].present`: 1 for
/// `add`, 0 for `remove`).
fn entries(cx: &mut Ctx, k: usize, kf: &KeyFile, dim: usize) -> Vec<Entry> {
    let mut out = Vec::new();
    for (param, v) in kf.set.iter().flatten() {
        let path = set_path(k, param);
        let whole_point = param.starts_with("obstacles[")
            && ObstacleField::POINTS
                .iter()
                .any(|name| param.ends_with(&format!(".{name}")));
        match v.as_array() {
            Some(a) if whole_point && a.len() != dim => cx.err(
                &path,
                format!(
                    "must have {dim} coordinates (the scene is {dim}D), got {}",
                    a.len()
                ),
            ),
            Some(a) if whole_point => {
                for (c, x) in a.iter().enumerate() {
                    out.push(Entry {
                        path: format!("{path}[{c}]"),
                        param: format!("{param}[{c}]"),
                        value: x.clone(),
                    });
                }
            }
            _ => out.push(Entry {
                path,
                param: param.clone(),
                value: v.clone(),
            }),
        }
    }
    for (field, list, present) in [("add", &kf.add, 1), ("remove", &kf.remove, 0)] {
        let Some(list) = list else {
            continue;
        };
        let at = format!("scene.timeline[{k}].{field}");
        let Some(names) = list.as_array() else {
            cx.err(
                &at,
                format!(
                    "must be a list of obstacles and species, [\"obstacles[0]\", \"species[1]\"], \
                     got {}",
                    shown(list)
                ),
            );
            continue;
        };
        for (j, name) in names.iter().enumerate() {
            let path = format!("{at}[{j}]");
            let thing = name.as_str().filter(|n| {
                (n.starts_with("obstacles[") || n.starts_with("species[")) && n.ends_with(']')
            });
            match thing {
                Some(n) => out.push(Entry {
                    path,
                    param: format!("{n}.present"),
                    value: present.into(),
                }),
                None => cx.err(
                    &path,
                    format!(
                        "must name an obstacle or a species of the scene, \"obstacles[i]\" or \
                         \"species[i]\" (a species comes and goes whole), got {}",
                        shown(name)
                    ),
                ),
            }
        }
    }
    out
}

/// The path of a value a key sets, as messages name it.
pub(in crate::scene) fn set_path(k: usize, param: &str) -> String {
    format!("scene.timeline[{k}].set[{param:?}]")
}

/// The resolved keys of `keys` for the resolved scene `s` (its values are what the first keys
/// start from). Problems go to `cx`; a key with one is left out.
pub(super) fn resolve(cx: &mut Ctx, keys: Option<&[KeyFile]>, s: &Scene) -> Vec<Key> {
    let mut out: Vec<Key> = Vec::new();
    // Where each key of `out` came from, and (path, step) → the key that set it first.
    let mut index = Vec::new();
    let mut seen: HashMap<(String, u64), usize> = HashMap::new();
    let mut last: Option<(usize, u64)> = None;
    for (k, kf) in keys.unwrap_or_default().iter().enumerate() {
        let errors = cx.errors.len();
        let Some(step) = key_step(cx, k, kf, s.dt) else {
            continue;
        };
        if let Some((j, before)) = last {
            if step < before {
                cx.err(
                    &format!("scene.timeline[{k}]"),
                    format!(
                        "keys must be in step order: step {step} comes after timeline[{j}]'s \
                         step {before}"
                    ),
                );
            }
        }
        last = Some((k, step));
        let interpolation = interpolation(cx, k, kf.interpolation.as_ref());
        let mut set = BTreeMap::new();
        let list = entries(cx, k, kf, s.dim);
        match &kf.set {
            None if kf.add.is_none() && kf.remove.is_none() => cx.err(
                &format!("scene.timeline[{k}]"),
                "needs \"set\": {\"path\": value, ...} (or \"add\" / \"remove\": \
                 [\"obstacles[i]\", \"species[i]\"])",
            ),
            Some(m) if m.is_empty() => cx.err(&format!("scene.timeline[{k}].set"), "sets nothing"),
            _ => {}
        }
        for Entry {
            path,
            param,
            value: v,
        } in list
        {
            if let Some(j) = seen.insert((param.clone(), step), k) {
                cx.err(
                    &path,
                    format!("set twice at step {step} (also by timeline[{j}])"),
                );
                continue;
            }
            let Some(x) = v.as_f64() else {
                cx.err(&path, format!("must be a number, got {}", shown(&v)));
                continue;
            };
            if let Some(x) = value(cx, &path, &param, x, s) {
                set.insert(param, x);
            }
        }
        if cx.errors.len() == errors {
            out.push(Key {
                step,
                interpolation,
                set,
                live: kf.live.unwrap_or(false),
            });
            index.push(k);
        }
    }
    speed_bands(cx, s, &out, &index);
    obstacle_keys(cx, s, &out, &index, keys.unwrap_or_default());
    someone_there(cx, s, &out, &index, keys.unwrap_or_default());
    out
}

/// A key's step: `step`, or `time` / dt rounded to the nearest step; exactly one of them.
fn key_step(cx: &mut Ctx, k: usize, kf: &KeyFile, dt: f32) -> Option<u64> {
    match (kf.step, kf.time) {
        (Some(_), Some(_)) => {
            cx.err(
                &format!("scene.timeline[{k}]"),
                "give \"step\" or \"time\", not both",
            );
            None
        }
        (None, None) => {
            cx.err(
                &format!("scene.timeline[{k}]"),
                "needs \"step\" (a solver step) or \"time\" (simulated time, step × dt)",
            );
            None
        }
        (Some(n), None) if n < 0 || n as u64 > MAX_STEPS => {
            cx.err(
                &format!("scene.timeline[{k}].step"),
                format!("must be in 0..={MAX_STEPS}, got {n}"),
            );
            None
        }
        (Some(n), None) => Some(n as u64),
        (None, Some(t)) => {
            let step = crate::look::interp::step_of_time(t, dt, MAX_STEPS);
            if step.is_none() {
                cx.err(
                    &format!("scene.timeline[{k}].time"),
                    format!(
                        "must be a time in [0, {}] (steps × dt {dt}), got {}",
                        MAX_STEPS as f64 * dt as f64,
                        fmt_num(t)
                    ),
                );
            }
            step
        }
    }
}

fn interpolation(cx: &mut Ctx, k: usize, v: Option<&serde_json::Value>) -> Interpolation {
    let Some(v) = v else {
        return Interpolation::Step;
    };
    match v.as_str().and_then(Interpolation::from_name) {
        Some(i) => i,
        None => {
            let names: Vec<&str> = Interpolation::ALL.iter().map(|i| i.name()).collect();
            cx.err(
                &format!("scene.timeline[{k}].interpolation"),
                format!("must be one of {}, got {}", names.join(", "), shown(v)),
            );
            Interpolation::Step
        }
    }
}

/// The value a key sets at `path`, checked as the scene field `param` is; None when wrong.
fn value(cx: &mut Ctx, path: &str, param: &str, x: f64, s: &Scene) -> Option<f32> {
    let target = match Target::parse(param) {
        Ok(t) => t,
        Err(why) => {
            cx.err(
                path,
                format!(
                    "{why}; the parameters a key may set: {}",
                    super::super::timeline::keyable()
                ),
            );
            return None;
        }
    };
    if let Err(why) = target.get(s) {
        cx.err(path, why);
        return None;
    }
    let errors = cx.errors.len();
    let stored = match target {
        Target::Boids(f) | Target::Species(_, f) => match f {
            BoidsField::WSep | BoidsField::WAli | BoidsField::WCoh => any_f(cx, path, Some(x), 0.0),
            BoidsField::MaxForce | BoidsField::VMin => pos_f(cx, path, Some(x), 0.0, true),
            BoidsField::VMax => pos_f(cx, path, Some(x), 0.0, false),
            BoidsField::Noise => heading_noise_at(cx, path, Some(x), s.dt),
            BoidsField::Fov => fov_at(cx, path, Some(x)),
        },
        Target::Flight(f) => super::flight::key_value(cx, path, f, x),
        Target::Hunt(_, h) if h.is_radius() => pos_f(cx, path, Some(x), 0.0, false),
        Target::Hunt(..) => any_f(cx, path, Some(x), 0.0),
        Target::VicsekV0 => pos_f(cx, path, Some(x), 0.0, false),
        Target::VicsekNoise => vicsek_noise(cx, path, Some(x)),
        Target::Obstacle(_, ObstacleField::Radius) => {
            let r = pos_f(cx, path, Some(x), 1.0, false);
            if cx.errors.len() == errors && !(crate::scene::ctx::within_largest(x) && r.is_normal())
            {
                cx.err(path, format!("must be a number > 0, got {}", fmt_num(x)));
            }
            r
        }
        Target::Obstacle(_, ObstacleField::Present) | Target::Present(_) => {
            if x != 0.0 && x != 1.0 {
                cx.err(
                    path,
                    format!("must be 1 (there) or 0 (gone), got {}", fmt_num(x)),
                );
            }
            x as f32
        }
        Target::Obstacle(..) => any_f(cx, path, Some(x), 0.0),
    };
    (cx.errors.len() == errors).then_some(stored)
}

/// v_min < v_max at every key that sets either (of the scene's boids or of one species): the
/// speed band the step clamps to must stay a band.
fn speed_bands(cx: &mut Ctx, s: &Scene, keys: &[Key], index: &[usize]) {
    let mut with = s.clone();
    with.timeline = keys.to_vec();
    let tracks = super::super::timeline::tracks(&with);
    let groups = (0..s.species.len()).map(Some).chain(std::iter::once(None));
    for g in groups {
        let find = |f: BoidsField| {
            let t = match g {
                Some(i) => Target::Species(i, f),
                None => Target::Boids(f),
            };
            tracks.iter().find(|tr| tr.target == t)
        };
        let (lo, hi) = (find(BoidsField::VMin), find(BoidsField::VMax));
        if lo.is_none() && hi.is_none() {
            continue;
        }
        let prefix = g.map_or("boids".to_string(), |i| format!("species[{i}].boids"));
        let base = |f: BoidsField| match g {
            Some(i) => Target::Species(i, f).get(s).unwrap_or(0.0),
            None => Target::Boids(f).get(s).unwrap_or(0.0),
        };
        let names = [format!("{prefix}.v_min"), format!("{prefix}.v_max")];
        let [a, b] = [(lo, BoidsField::VMin), (hi, BoidsField::VMax)]
            .map(|(tr, f)| tr.map_or((base(f), &[][..]), |t| (t.base, &t.points[..])));
        let Some(step) = crate::look::interp::first_crossing(a, b) else {
            continue;
        };
        let at = |v: (f32, &[crate::look::interp::Point])| {
            crate::look::interp::value_at(v.0, v.1, step).to_string()
        };
        let message = format!(
            "v_min must be < v_max at every step, got v_min {} >= v_max {} at step {step}",
            at(a),
            at(b)
        );
        blame(cx, keys, index, &names, step, message);
    }
}

/// Reports `message` at the key that brings about a crossing at `step` of two values
/// (`names`): the first key at or after `step` that sets one of them (the end of the ramp that
/// crosses), else the last one before it.
fn blame(
    cx: &mut Ctx,
    keys: &[Key],
    index: &[usize],
    names: &[String],
    step: u64,
    message: String,
) {
    let sets = |key: &Key| names.iter().find(|n| key.set.contains_key(n.as_str()));
    let mut setting = keys
        .iter()
        .zip(index)
        .filter_map(|(key, &k)| Some((key.step, k, sets(key)?)));
    let last_before = setting.clone().take_while(|&(s, ..)| s < step).last();
    if let Some((_, k, param)) = setting.find(|&(s, ..)| s >= step).or(last_before) {
        cx.err(&set_path(k, param), message);
    }
}

impl Scene {
    /// Sets `param` (a timeline path, `vicsek.noise`) to `value` from `step` on: a key added to
    /// the timeline, checked as a key in a scene file is. Fails, changing nothing, with an
    /// error naming `param`.
    pub fn set_at(&mut self, step: u64, param: &str, value: f64) -> Result<(), SceneError> {
        add(self, step, param, value)
    }
}

/// Adds to `s`'s timeline a live key that sets `param` to `x` from `step` on (the value jumps
/// there; the steps before keep the values they had, a ramp in progress included), checked as a
/// key in the file is; where a live key at that step exists, the value joins it (replacing one
/// for the same parameter; a presence set back to what it was before the step leaves no event).
/// Fails, changing nothing, with the error naming `param`.
fn add(s: &mut Scene, step: u64, param: &str, x: f64) -> Result<(), SceneError> {
    let mut cx = Ctx { errors: Vec::new() };
    let first = |cx: Ctx| cx.errors.into_iter().next();
    let Some(v) = value(&mut cx, param, param, x, s) else {
        return Err(first(cx).expect("a refused value has its error"));
    };
    let mut keys = s.timeline.clone();
    // A value set live at this step before is replaced: taken out first.
    let live_here = |keys: &[Key]| keys.iter().rposition(|k| k.step == step && k.live);
    let mut replaced = false;
    if let Some(i) = live_here(&keys) {
        replaced = keys[i].set.remove(param).is_some();
        if keys[i].set.is_empty() {
            keys.remove(i);
        }
    }
    // A species or obstacle added while it is there (or removed while gone) would, as the
    // first event of its track, take it out of the world until then: the steps already taken.
    // Set back at the step it was set (0 then 1), it is as it was: no event at all.
    if Target::parse(param).is_ok_and(|t| t.is_presence()) {
        let mut with = s.clone();
        with.timeline = keys.clone();
        let now = super::super::timeline::tracks(&with)
            .iter()
            .find(|t| t.path == param)
            .map_or(1.0, |t| t.value(step));
        if now == v && replaced {
            s.timeline = keys;
            return Ok(());
        }
        if now == v {
            return Err(SceneError {
                path: param.to_string(),
                message: format!(
                    "{} is already {} at step {step}",
                    param.trim_end_matches(".present"),
                    if v == 1.0 { "there" } else { "gone" }
                ),
                line: None,
            });
        }
    }
    // A live key of its own (or the one set live at this step): a key of the file at this
    // step would, set here, end the ramp it falls in at this step — for the steps before too.
    match live_here(&keys) {
        Some(i) => {
            keys[i].set.insert(param.to_string(), v);
        }
        None => {
            let at = keys.partition_point(|k| k.step <= step);
            keys.insert(
                at,
                Key {
                    step,
                    interpolation: Interpolation::Step,
                    set: BTreeMap::from([(param.to_string(), v)]),
                    live: true,
                },
            );
        }
    }
    // Another key at this step that sets the parameter (a ramp's end) would set it twice.
    if keys
        .iter()
        .filter(|k| k.step == step && k.set.contains_key(param))
        .count()
        > 1
    {
        return Err(SceneError {
            path: param.to_string(),
            message: format!("the timeline's key at step {step} already sets it (a ramp's end)"),
            line: None,
        });
    }
    let index: Vec<usize> = (0..keys.len()).collect();
    speed_bands(&mut cx, s, &keys, &index);
    obstacle_keys(&mut cx, s, &keys, &index, &[]);
    someone_there(&mut cx, s, &keys, &index, &[]);
    if let Some(mut e) = first(cx) {
        // Named by the parameter, not by a key of a file.
        e.path = param.to_string();
        return Err(e);
    }
    s.timeline = keys;
    Ok(())
}

/// Obstacle and species keys that make sense together: a box keeps min < max at every key that
/// sets a corner, and each obstacle's or species' `add` and `remove` alternate (one added first
/// is absent until then).
fn obstacle_keys(cx: &mut Ctx, s: &Scene, keys: &[Key], index: &[usize], files: &[KeyFile]) {
    let mut with = s.clone();
    with.timeline = keys.to_vec();
    let tracks = super::super::timeline::tracks(&with);
    let find = |t: Target| tracks.iter().find(|tr| tr.target == t);
    // The boxes' coordinates keyed (obstacle, axis): min < max checked over every step.
    let mut boxes = Vec::new();
    for (key, &k) in keys.iter().zip(index) {
        for (param, &v) in &key.set {
            let target = Target::parse(param);
            if let Ok(t @ (Target::Present(_) | Target::Obstacle(_, ObstacleField::Present))) =
                target
            {
                let Some(tr) = find(t) else {
                    continue;
                };
                let name = param.trim_end_matches(".present");
                let before = key.step.checked_sub(1).map_or(tr.base, |b| tr.value(b));
                let first = tr.points.first().map(|p| p.step) == Some(key.step);
                if !first && before == v {
                    cx.err(
                        &event_path(files.get(k), k, name, param),
                        format!(
                            "{name} is already {} at step {}",
                            if v == 1.0 { "there" } else { "gone" },
                            key.step
                        ),
                    );
                }
                continue;
            }
            let Ok(Target::Obstacle(i, f)) = target else {
                continue;
            };
            if let ObstacleField::Min(c) | ObstacleField::Max(c) = f {
                boxes.push((i, c));
            }
        }
    }
    boxes.sort_unstable();
    boxes.dedup();
    for (i, c) in boxes {
        let [lo, hi] = [ObstacleField::Min(c), ObstacleField::Max(c)].map(|f| {
            let t = Target::Obstacle(i, f);
            find(t).map_or((t.get(s).unwrap_or(0.0), &[][..]), |tr| {
                (tr.base, &tr.points[..])
            })
        });
        let Some(step) = crate::look::interp::first_crossing(lo, hi) else {
            continue;
        };
        let at = |v: (f32, &[crate::look::interp::Point])| {
            crate::look::interp::value_at(v.0, v.1, step).to_string()
        };
        let names = [
            format!("obstacles[{i}].min[{c}]"),
            format!("obstacles[{i}].max[{c}]"),
        ];
        let message = format!(
            "a box needs min[{c}] < max[{c}] at every step, got {} >= {} at step {step}",
            at(lo),
            at(hi)
        );
        blame(cx, keys, index, &names, step, message);
    }
}

/// A world with an agent in it at every step: species events never take every species out at
/// once (every metric of an empty world would be a number of nothing), nor does every species
/// wait for an `add` before coming in.
fn someone_there(cx: &mut Ctx, s: &Scene, keys: &[Key], index: &[usize], files: &[KeyFile]) {
    let mut with = s.clone();
    with.timeline = keys.to_vec();
    let Some(presence) = super::super::timeline::Presence::of(&with) else {
        return;
    };
    let peopled = super::super::species::id_ranges(&s.species, s.agents);
    let there = |step: u64| {
        (peopled.iter().enumerate()).any(|(i, &(lo, hi))| lo < hi && presence.present(i, step))
    };
    let events = keys.iter().zip(index).flat_map(|(key, &k)| {
        (key.set.iter())
            .filter(|(p, _)| matches!(Target::parse(p), Ok(Target::Present(_))))
            .map(move |(p, &v)| (key.step, k, p, v))
    });
    for (step, k, param, v) in events {
        let name = param.trim_end_matches(".present");
        let path = event_path(files.get(k), k, name, param);
        if v == 0.0 && !there(step) {
            let msg = format!(
                "takes {name} out at step {step}, and no species is left in the world: a \
                 world needs an agent in it (keep one species there)"
            );
            return cx.err(&path, msg);
        }
        if v == 1.0 && step > 0 && !there(0) {
            let msg = format!(
                "every species is out until an `add` brings it in ({name} at step {step}), \
                 so the world starts empty: a world needs an agent in it from step 0 (leave \
                 one species out of the adds)"
            );
            return cx.err(&path, msg);
        }
    }
}

/// Where key `k` (as written: `file`) adds or removes `name` (`obstacles[i]`, `species[i]`):
/// `scene.timeline[k].add[j]`, or its `set` path where it sets `present` itself.
fn event_path(file: Option<&KeyFile>, k: usize, name: &str, param: &str) -> String {
    let lists = file
        .into_iter()
        .flat_map(|f| [("add", &f.add), ("remove", &f.remove)]);
    for (field, list) in lists {
        let at = list
            .as_ref()
            .and_then(|l| l.as_array())
            .and_then(|a| a.iter().position(|x| x.as_str() == Some(name)));
        if let Some(j) = at {
            return format!("scene.timeline[{k}].{field}[{j}]");
        }
    }
    set_path(k, param)
}
