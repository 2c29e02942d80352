//! The parameters a sweep varies and the `--vary NAME=VALUES` expressions that give their
//! values; `fmt_value`, the text of a value in the CSV.
//!
//! Values are numbers (`f64`). A categorical parameter (`noise_kind`) takes words, held as the
//! index of the word in its list and written back as the word ([`Param::fmt`]).

use std::collections::HashSet;

use anyhow::{anyhow, Result};

use crate::scene::{self, Model, NoiseKind};

/// A scene parameter a sweep can vary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    Noise,
    NoiseKind,
    V0,
    R,
    Agents,
    Density,
    World,
    RSep,
    RAli,
    RCoh,
    WSep,
    WAli,
    WCoh,
    MaxForce,
    VMin,
    VMax,
    /// Boids' topological neighbour count: a point with k uses `{"kind": "topological", "k": k}`.
    K,
}

const ALL_PARAMS: [Param; 17] = [
    Param::Noise,
    Param::NoiseKind,
    Param::V0,
    Param::R,
    Param::Agents,
    Param::Density,
    Param::World,
    Param::RSep,
    Param::RAli,
    Param::RCoh,
    Param::WSep,
    Param::WAli,
    Param::WCoh,
    Param::MaxForce,
    Param::VMin,
    Param::VMax,
    Param::K,
];

/// Most values one `--vary` may give, and most points a sweep may have.
pub const MAX_VALUES: usize = 100_000;

impl Param {
    pub fn name(self) -> &'static str {
        match self {
            Param::Noise => "noise",
            Param::NoiseKind => "noise_kind",
            Param::V0 => "v0",
            Param::R => "r",
            Param::Agents => "agents",
            Param::Density => "density",
            Param::World => "world",
            Param::RSep => "r_sep",
            Param::RAli => "r_ali",
            Param::RCoh => "r_coh",
            Param::WSep => "w_sep",
            Param::WAli => "w_ali",
            Param::WCoh => "w_coh",
            Param::MaxForce => "max_force",
            Param::VMin => "v_min",
            Param::VMax => "v_max",
            Param::K => "k",
        }
    }

    /// `noise`, also as `vicsek.noise`; `w_ali`, also as `boids.w_ali`.
    pub fn from_name(s: &str) -> Option<Param> {
        let p = ALL_PARAMS.iter().copied().find(|p| p.name() == s);
        p.or_else(|| {
            let (prefix, rest) = s.split_once('.')?;
            let p = ALL_PARAMS.iter().copied().find(|p| p.name() == rest)?;
            (p.model().map(|m| m.name()) == Some(prefix)).then_some(p)
        })
    }

    /// The model the parameter belongs to; None for agents, density and world.
    pub fn model(self) -> Option<Model> {
        match self {
            Param::Noise | Param::NoiseKind | Param::V0 | Param::R => Some(Model::Vicsek),
            Param::Agents | Param::Density | Param::World => None,
            _ => Some(Model::Boids),
        }
    }

    /// Symbol in plot legends and titles.
    pub fn symbol(self) -> &'static str {
        match self {
            Param::Noise => "η",
            Param::Agents => "N",
            Param::Density => "ρ",
            Param::World => "L",
            p => p.name(),
        }
    }

    /// Axis label.
    pub fn describe(self) -> String {
        match self {
            Param::Noise => "noise η".into(),
            Param::NoiseKind => "noise kind (0 = angular, 1 = vectorial)".into(),
            Param::Agents => "agents N".into(),
            Param::Density => "density ρ = N / L^dim".into(),
            Param::World => "box side L".into(),
            Param::K => "topological neighbours k".into(),
            p => p.name().into(),
        }
    }

    /// Whether its values are words (held as their index in [`Param::words`]) rather than
    /// numbers.
    pub fn is_categorical(self) -> bool {
        !self.words().is_empty()
    }

    /// The words a categorical parameter takes, in index order (empty for a number).
    pub fn words(self) -> Vec<&'static str> {
        match self {
            Param::NoiseKind => NoiseKind::ALL.iter().map(|k| k.name()).collect(),
            _ => Vec::new(),
        }
    }

    /// The text of one of its values in the CSV, in messages and legends: the word of a
    /// categorical value, else [`fmt_value`].
    pub fn fmt(self, v: f64) -> String {
        match self.words().get(v as usize) {
            Some(w) if self.is_categorical() => w.to_string(),
            _ => fmt_value(v),
        }
    }

    /// Whether one value is allowed.
    fn check(self, v: f64) -> Result<(), BadValue> {
        let two_pi = 2.0 * std::f64::consts::PI;
        let bad = match self {
            Param::NoiseKind => (v.fract() != 0.0 || v < 0.0 || v as usize >= self.words().len())
                .then_some(BadValue::NotAWord),
            Param::Agents => (v.fract() != 0.0 || v < 1.0 || v > scene::MAX_AGENTS as f64)
                .then_some(BadValue::NotAnAgentCount),
            Param::K => (v.fract() != 0.0 || v < 1.0 || v > scene::MAX_AGENTS as f64)
                .then_some(BadValue::NotANeighbourCount),
            Param::Noise => (!(0.0..=two_pi + 1e-6).contains(&v)).then_some(BadValue::NotAnAngle),
            Param::V0 | Param::R | Param::Density | Param::World | Param::VMax => {
                if v <= 0.0 || v > 1e30 {
                    Some(BadValue::NotPositive)
                } else {
                    (!(v as f32).is_normal()).then_some(BadValue::TooSmall)
                }
            }
            Param::RSep | Param::RAli | Param::RCoh | Param::MaxForce | Param::VMin => {
                if !(0.0..=1e30).contains(&v) {
                    Some(BadValue::Negative)
                } else {
                    (v > 0.0 && !(v as f32).is_normal()).then_some(BadValue::TooSmall)
                }
            }
            Param::WSep | Param::WAli | Param::WCoh => {
                (v.abs() > 1e30).then_some(BadValue::TooLarge)
            }
        };
        bad.map_or(Ok(()), Err)
    }
}

/// A value a parameter cannot take; the message completes "NAME=VALUE: ...".
#[derive(Debug, thiserror::Error)]
pub enum BadValue {
    #[error("must be a whole number in 1..={}", scene::MAX_AGENTS)]
    NotAnAgentCount,
    #[error(
        "must be a whole number in 1..={} (the nearest neighbours counted)",
        scene::MAX_AGENTS
    )]
    NotANeighbourCount,
    #[error("must be in [0, 2π]")]
    NotAnAngle,
    #[error("is not one of the words it takes")]
    NotAWord,
    #[error("must be > 0")]
    NotPositive,
    #[error("must be >= 0")]
    Negative,
    #[error("is too large")]
    TooLarge,
    /// Scenes hold 32-bit floats: 1e-50 would be stored as 0.
    #[error(
        "is too small to store as a 32-bit float (at least {:e})",
        f32::MIN_POSITIVE
    )]
    TooSmall,
}

/// One `--vary NAME=VALUES`, parsed.
#[derive(Clone, Debug)]
pub struct Vary {
    /// As written, for error messages.
    pub expr: String,
    pub param: Param,
    pub values: Vec<f64>,
}

/// A number, optionally followed by `pi` or `π` (`2pi`, `0.5π`, `pi`).
fn number(s: &str) -> Option<f64> {
    let s = s.trim();
    let (body, scale) = match s.strip_suffix("pi").or_else(|| s.strip_suffix('π')) {
        Some(b) => (b.trim(), std::f64::consts::PI),
        None => (s, 1.0),
    };
    let x = if body.is_empty() && scale != 1.0 {
        1.0
    } else {
        body.parse::<f64>().ok()?
    };
    let v = x * scale;
    v.is_finite().then_some(v)
}

/// Rounds away the binary noise of `a + i·step` (0.30000000000000004 → 0.3).
fn clean(v: f64) -> f64 {
    if v.abs() < 1e6 {
        let r = (v * 1e9).round() / 1e9;
        if r == 0.0 {
            0.0
        } else {
            r
        }
    } else {
        v
    }
}

/// The text of a value in the CSV (and the key resumed points are matched by): the shortest
/// text that reads back as the same f64, in scientific notation when tiny.
pub fn fmt_value(v: f64) -> String {
    if v != 0.0 && v.abs() < 1e-5 {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// Parse `NAME=a:b:step` or `NAME=a,b,c`. Errors name the expression.
pub fn parse_vary(expr: &str) -> Result<Vary> {
    let fail = |msg: String| anyhow!("--vary {expr:?}: {msg}");
    let Some((name, spec)) = expr.split_once('=') else {
        return Err(fail(
            "expected NAME=VALUES, such as noise=0:5:0.25 or agents=40,100,400".into(),
        ));
    };
    let name = name.trim();
    if name == "seed" || name == "seeds" {
        return Err(fail(
            "seeds are set by --seeds K (seed values scene.seed + 0..K)".into(),
        ));
    }
    let param = Param::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = ALL_PARAMS.iter().map(|p| p.name()).collect();
        fail(format!(
            "unknown parameter {name:?} (one of: {})",
            names.join(", ")
        ))
    })?;
    let spec = spec.trim();
    if spec.is_empty() {
        return Err(fail("no values after '='".into()));
    }
    let values = if param.is_categorical() {
        words(param, spec, &fail)?
    } else if spec.contains(':') {
        range(spec, &fail)?
    } else {
        list(spec, &fail)?
    };
    let mut seen = HashSet::new();
    for &v in &values {
        if let Err(m) = param.check(v) {
            return Err(fail(format!("{}={}: {m}", param.name(), param.fmt(v))));
        }
        if !seen.insert(param.fmt(v)) {
            return Err(fail(format!("value {} appears twice", param.fmt(v))));
        }
    }
    Ok(Vary {
        expr: expr.to_string(),
        param,
        values,
    })
}

/// Makes an error of `--vary`'s expression from what is wrong with it.
type Fail<'a> = &'a dyn Fn(String) -> anyhow::Error;

/// A categorical parameter's `a,b,c`: each word's index in `param.words()`.
fn words(param: Param, spec: &str, fail: Fail) -> Result<Vec<f64>> {
    let words = param.words();
    let mut out = Vec::new();
    for w in spec.split(',') {
        let w = w.trim();
        let k = words.iter().position(|x| *x == w).ok_or_else(|| {
            fail(format!(
                "{} takes a list of {}, got {w:?}",
                param.name(),
                words.join(", ")
            ))
        })?;
        out.push(k as f64);
    }
    Ok(out)
}

/// `start:end:step`, `end` included when it is within a millionth of a step of the grid.
fn range(spec: &str, fail: Fail) -> Result<Vec<f64>> {
    let parts: Vec<&str> = spec.split(':').collect();
    if parts.len() != 3 {
        return Err(fail(format!(
            "a range is start:end:step, got {} part{}",
            parts.len(),
            if parts.len() == 1 { "" } else { "s" }
        )));
    }
    let mut abc = [0.0; 3];
    for (k, p) in parts.iter().enumerate() {
        abc[k] = number(p).ok_or_else(|| {
            fail(format!(
                "{} {:?} is not a finite number",
                ["start", "end", "step"][k],
                p.trim()
            ))
        })?;
    }
    let [a, b, step] = abc;
    if step <= 0.0 {
        return Err(fail(format!("step must be > 0, got {}", fmt_value(step))));
    }
    if b < a {
        return Err(fail(format!(
            "end {} is below start {}",
            fmt_value(b),
            fmt_value(a)
        )));
    }
    let count = ((b - a) / step + 1e-6).floor() + 1.0;
    if count > MAX_VALUES as f64 {
        return Err(fail(format!(
            "{count} values, more than the {MAX_VALUES} allowed"
        )));
    }
    Ok((0..count as usize)
        .map(|i| clean(a + i as f64 * step))
        .collect())
}

/// `a,b,c`, numbers.
fn list(spec: &str, fail: Fail) -> Result<Vec<f64>> {
    let mut out = Vec::new();
    for p in spec.split(',') {
        out.push(
            number(p)
                .ok_or_else(|| fail(format!("value {:?} is not a finite number", p.trim())))?,
        );
    }
    if out.len() > MAX_VALUES {
        return Err(fail(format!(
            "{} values, more than the {MAX_VALUES} allowed",
            out.len()
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_include_the_end_and_round_cleanly() {
        let v = parse_vary("noise=0:1:0.1").unwrap();
        assert_eq!(v.values.len(), 11);
        assert_eq!(fmt_value(v.values[3]), "0.3");
        assert_eq!(fmt_value(v.values[10]), "1");
        let v = parse_vary("noise=0:5:0.25").unwrap();
        assert_eq!(v.values.len(), 21);
        let v = parse_vary("agents=40,100,400").unwrap();
        assert_eq!(v.values, vec![40.0, 100.0, 400.0]);
        let v = parse_vary("vicsek.noise=0:2pi:0.5pi").unwrap();
        assert_eq!(v.values.len(), 5);
        assert_eq!(v.param, Param::Noise);
    }

    #[test]
    fn noise_kind_takes_words() {
        let v = parse_vary("noise_kind=vectorial, angular").unwrap();
        assert_eq!(v.param, Param::NoiseKind);
        assert_eq!(v.values, vec![1.0, 0.0]);
        let text: Vec<String> = v.values.iter().map(|&x| v.param.fmt(x)).collect();
        assert_eq!(text, ["vectorial", "angular"]);
        assert_eq!(
            parse_vary("vicsek.noise_kind=angular").unwrap().values,
            [0.0]
        );
        assert_eq!(Param::Noise.fmt(1.0), "1");
    }

    #[test]
    fn bad_expressions_name_themselves() {
        for (e, want) in [
            ("noise", "expected NAME=VALUES"),
            ("speed=1,2", "unknown parameter"),
            ("noise=0:1", "start:end:step"),
            ("noise=0:1:0", "step must be > 0"),
            ("noise=1:0:0.1", "below start"),
            ("noise=a,b", "not a finite number"),
            ("agents=1.5", "whole number"),
            ("noise=7", "[0, 2π]"),
            ("noise=1,1", "appears twice"),
            ("seed=1,2", "--seeds"),
            ("boids.noise=1", "unknown parameter"),
            ("noise_kind=vector", "takes a list of angular, vectorial"),
            ("noise_kind=0:1:1", "takes a list of angular, vectorial"),
            ("noise_kind=1", "takes a list of angular, vectorial"),
            ("noise_kind=angular,angular", "appears twice"),
            ("k=0", "whole number in 1.."),
            ("k=2.5", "whole number in 1.."),
        ] {
            let msg = parse_vary(e).unwrap_err().to_string();
            assert!(msg.contains(&format!("{e:?}")), "{msg}");
            assert!(msg.contains(want), "{e}: {msg}");
        }
    }
}
