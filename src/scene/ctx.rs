//! Where validation problems are collected, each with its JSON path (`parse` then finds the
//! line of each path that is in the text), and the bound every scene number is held to.

use super::SceneError;

/// The largest size a number in a scene may have: well inside f32 (3.4e38), so that sums and
/// products of a few of them stay finite.
const LARGEST: f64 = 1e30;

/// Whether `x` is at most [`LARGEST`] either way as the scene stores it (a float): 1e30 is
/// stored as 1.0000000150474662e30, which a saved scene then holds, and must load again.
pub(in crate::scene) fn within_largest(x: f64) -> bool {
    (x as f32).abs() <= LARGEST as f32
}

pub(super) struct Ctx {
    pub(super) errors: Vec<SceneError>,
}

impl Ctx {
    pub(super) fn err(&mut self, path: &str, message: impl Into<String>) {
        self.errors.push(SceneError {
            path: path.to_string(),
            message: message.into(),
            line: None,
        });
    }
}
