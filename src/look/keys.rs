//! Camera and look keys: the `render` section's `timeline`, the 2D view's centre and zoom, a
//! fixed 3D camera's eye, target and field of view, exposure and trails, keyed at a solver step
//! or a simulated time like the scene's own timeline ([`super::interp`]), so a camera move lines up
//! with what the flock does at that step, whatever the frame rate.
//!
//! ```json
//! "render": { "timeline": [
//!   { "time": 8, "set": { "zoom": 1 } },
//!   { "time": 10, "set": { "zoom": 2.5, "center": [900, 500] }, "interpolation": "smooth" }
//! ] }
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::interp::{value_at, Interpolation, Point};
use super::{Look, Vec2, Vec3};

/// One key as written (and as a recording stores it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LookKey {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<f64>,
    #[serde(default, skip_serializing_if = "Interpolation::is_step")]
    pub interpolation: Interpolation,
    #[serde(deserialize_with = "unique_map")]
    pub set: BTreeMap<String, KeyValue>,
}

/// A JSON object as a map, refusing a name given twice (serde's maps keep the last one
/// silently, where a struct's fields refuse it): a key's `set` names each value once.
pub(crate) fn unique_map<'de, D, V>(d: D) -> Result<BTreeMap<String, V>, D::Error>
where
    D: serde::Deserializer<'de>,
    V: Deserialize<'de>,
{
    struct Unique<V>(std::marker::PhantomData<V>);
    impl<'de, V: Deserialize<'de>> serde::de::Visitor<'de> for Unique<V> {
        type Value = BTreeMap<String, V>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object of names and values")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut m: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some(name) = m.next_key::<String>()? {
                if out.contains_key(&name) {
                    return Err(serde::de::Error::custom(format!(
                        "duplicate name {name:?}: each value is set once in a key"
                    )));
                }
                let v = m.next_value()?;
                out.insert(name, v);
            }
            Ok(out)
        }
    }
    d.deserialize_map(Unique(std::marker::PhantomData))
}

/// [`unique_map`] for a map that may be left out.
pub(crate) fn unique_map_or_none<'de, D, V>(d: D) -> Result<Option<BTreeMap<String, V>>, D::Error>
where
    D: serde::Deserializer<'de>,
    V: Deserialize<'de>,
{
    unique_map(d).map(Some)
}

/// A keyed setting's value: a number, or a point (`center`, `eye`, `target`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum KeyValue {
    One(f32),
    Many(Vec<f32>),
}

impl KeyValue {
    fn values(&self) -> &[f32] {
        match self {
            KeyValue::One(x) => std::slice::from_ref(x),
            KeyValue::Many(v) => v,
        }
    }
}

/// A look setting a key may set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LookField {
    Center,
    Zoom,
    Exposure,
    Trails,
    Eye,
    Target,
    Fov,
}

impl LookField {
    pub const ALL: [LookField; 7] = [
        LookField::Center,
        LookField::Zoom,
        LookField::Exposure,
        LookField::Trails,
        LookField::Eye,
        LookField::Target,
        LookField::Fov,
    ];
    pub fn name(self) -> &'static str {
        match self {
            LookField::Center => "center",
            LookField::Zoom => "zoom",
            LookField::Exposure => "exposure",
            LookField::Trails => "trails",
            LookField::Eye => "eye",
            LookField::Target => "target",
            LookField::Fov => "fov",
        }
    }
    pub fn parse(name: &str) -> Option<LookField> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }
    /// Numbers in a value: 2 for the 2D centre, 3 for a 3D point, else 1.
    pub fn components(self) -> usize {
        match self {
            LookField::Center => 2,
            LookField::Eye | LookField::Target => 3,
            _ => 1,
        }
    }
    /// The fixed 3D camera's settings.
    pub fn only_3d(self) -> bool {
        matches!(self, LookField::Eye | LookField::Target | LookField::Fov)
    }
    /// What is wrong with `v` (its count checked): the look's own check of the setting, on a
    /// look that sets it to `v`.
    fn check(self, v: &[f32]) -> Option<String> {
        let mut l = Look::default();
        match self {
            LookField::Center => l.center = Some(Vec2([v[0], v[1]])),
            LookField::Zoom => l.zoom = Some(v[0]),
            LookField::Exposure => l.exposure = Some(v[0]),
            LookField::Trails => l.trails = Some(v[0]),
            LookField::Eye => l.eye = Some(Vec3([v[0], v[1], v[2]])),
            LookField::Target => l.target = Some(Vec3([v[0], v[1], v[2]])),
            LookField::Fov => l.fov = Some(v[0]),
        }
        l.problems(None).into_iter().next().map(|p| p.message)
    }
}

/// The settings a key may set, for messages.
fn keyable() -> String {
    let names: Vec<&str> = LookField::ALL.iter().map(|f| f.name()).collect();
    names.join(", ")
}

/// Every key's problems, each with its field (`timeline[2].set["zoom"]`), to `bad`; `dim`:
/// the recording's, where known. The order of keys given by time against keys given by step
/// is the resolver's to check (it knows dt).
pub fn problems(keys: &[LookKey], dim: Option<u8>, bad: &mut impl FnMut(String, String)) {
    let mut last_step: Option<(usize, u64)> = None;
    let mut last_time: Option<(usize, f64)> = None;
    for (k, key) in keys.iter().enumerate() {
        let at = format!("timeline[{k}]");
        match (key.step, key.time) {
            (Some(_), Some(_)) => bad(at.clone(), "give \"step\" or \"time\", not both".into()),
            (None, None) => bad(
                at.clone(),
                "needs \"step\" (a solver step) or \"time\" (simulated time, step × dt)".into(),
            ),
            (Some(s), None) => {
                if let Some((j, before)) = last_step.filter(|&(_, b)| s < b) {
                    bad(
                        at.clone(),
                        format!("keys must be in step order: step {s} comes after timeline[{j}]'s step {before}"),
                    );
                }
                last_step = Some((k, s));
            }
            (None, Some(t)) => {
                if !(t.is_finite() && t >= 0.0) {
                    bad(
                        format!("{at}.time"),
                        format!("must be a time >= 0, got {t}"),
                    );
                } else if let Some((j, before)) = last_time.filter(|&(_, b)| t < b) {
                    bad(
                        at.clone(),
                        format!("keys must be in time order: time {t} comes after timeline[{j}]'s time {before}"),
                    );
                }
                last_time = Some((k, t));
            }
        }
        if key.set.is_empty() {
            bad(format!("{at}.set"), "sets nothing".into());
        }
        for (name, v) in &key.set {
            let path = format!("{at}.set[{name:?}]");
            let Some(f) = LookField::parse(name) else {
                bad(
                    path,
                    format!(
                        "no look setting of that name can be keyed; those that can: {}",
                        keyable()
                    ),
                );
                continue;
            };
            if f.only_3d() && dim.is_some_and(|d| d != 3) {
                bad(path, "applies to 3D only (dim 3); this is 2D".into());
                continue;
            }
            let v = v.values();
            if v.len() != f.components() {
                let want = match f.components() {
                    1 => "a number".to_string(),
                    n => format!("{n} numbers [{}]", ["X", "Y", "Z"][..n].join(", ")),
                };
                bad(path, format!("must be {want}, got {} number(s)", v.len()));
            } else if let Some(why) = f.check(v) {
                bad(path, why);
            }
        }
    }
}

/// Whether any key sets a fixed camera's eye or target (which asks for the fixed camera).
pub fn places_camera(keys: &[LookKey]) -> bool {
    keys.iter()
        .any(|k| k.set.contains_key("eye") || k.set.contains_key("target"))
}

/// One keyed setting, each of its numbers a keyed value.
#[derive(Clone, Debug, PartialEq)]
pub struct Keyed {
    pub field: LookField,
    /// Per number: its value before the first key, and its keys.
    pub parts: Vec<(f32, Vec<Point>)>,
}

/// The keys resolved against a recording: at solver steps, from the settings' values.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LookKeys {
    pub keyed: Vec<Keyed>,
}

impl LookKeys {
    /// `keys` (checked by [`problems`]) at steps (a time: `time / dt`), each setting starting
    /// from `base(field)`; an error (the key's field and why) for keys out of step order once
    /// times are steps, or a setting `base` has no value for.
    pub fn resolve(
        keys: &[LookKey],
        dt: f32,
        base: impl Fn(LookField) -> Option<Vec<f32>>,
    ) -> Result<LookKeys, (String, String)> {
        /// A key's step, values and interpolation.
        type At<'a> = (u64, &'a [f32], Interpolation);
        let mut by_field: BTreeMap<&str, (LookField, Vec<At>)> = BTreeMap::new();
        let mut last: Option<(usize, u64)> = None;
        for (k, key) in keys.iter().enumerate() {
            let step = match (key.step, key.time) {
                (Some(s), _) => s,
                (None, Some(t)) => {
                    super::interp::step_of_time(t, dt, u64::MAX >> 12).ok_or_else(|| {
                        (
                            format!("timeline[{k}].time"),
                            format!("must be a time >= 0, got {t}"),
                        )
                    })?
                }
                (None, None) => {
                    return Err((
                        format!("timeline[{k}]"),
                        "needs \"step\" or \"time\"".into(),
                    ))
                }
            };
            if let Some((j, before)) = last.filter(|&(_, b)| step < b) {
                return Err((
                    format!("timeline[{k}]"),
                    format!(
                        "keys must be in step order: step {step} (time {}) comes after \
                         timeline[{j}]'s step {before}",
                        step as f64 * dt as f64
                    ),
                ));
            }
            last = Some((k, step));
            for (name, v) in &key.set {
                let field = LookField::parse(name).ok_or_else(|| {
                    (
                        format!("timeline[{k}].set[{name:?}]"),
                        "cannot be keyed".to_string(),
                    )
                })?;
                let e = by_field.entry(field.name()).or_insert((field, Vec::new()));
                if e.1.last().is_some_and(|p| p.0 == step) {
                    return Err((
                        format!("timeline[{k}].set[{name:?}]"),
                        format!("set twice at step {step}"),
                    ));
                }
                e.1.push((step, v.values(), key.interpolation));
            }
        }
        let mut keyed = Vec::new();
        for (_, (field, points)) in by_field {
            let Some(b) = base(field).filter(|b| b.len() == field.components()) else {
                return Err((
                    "timeline".to_string(),
                    format!("{}: the camera in use has no such setting", field.name()),
                ));
            };
            let parts = b
                .iter()
                .enumerate()
                .map(|(i, &x)| {
                    let pts = points
                        .iter()
                        .map(|&(step, v, interpolation)| Point {
                            step,
                            value: v[i],
                            interpolation,
                            live: false,
                        })
                        .collect();
                    (x, pts)
                })
                .collect();
            keyed.push(Keyed { field, parts });
        }
        Ok(LookKeys { keyed })
    }

    /// The largest value one-number setting `field` takes at any step, with `base` its value
    /// where it is not keyed (ramps never overshoot their keys, so the keys bound it).
    pub fn most(&self, field: LookField, base: f32) -> f32 {
        self.keyed
            .iter()
            .filter(|k| k.field == field)
            .flat_map(|k| &k.parts)
            .flat_map(|(b, pts)| std::iter::once(*b).chain(pts.iter().map(|p| p.value)))
            .fold(base, f32::max)
    }

    /// Each keyed setting's value at `step`.
    pub fn at(&self, step: u64) -> Vec<(LookField, [f32; 3])> {
        self.keyed
            .iter()
            .map(|k| {
                let mut v = [0.0; 3];
                for (x, (base, pts)) in v.iter_mut().zip(&k.parts) {
                    *x = value_at(*base, pts, step);
                }
                (k.field, v)
            })
            .collect()
    }
}
