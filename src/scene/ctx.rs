//! Where validation problems are collected, each with its JSON path; `parse` then finds the
//! line of each path that is in the text.

use super::SceneError;

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
