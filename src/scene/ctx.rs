//! Where validation problems are collected: each with its JSON path, and the line when the
//! field is in the text.

use std::collections::HashMap;

use super::SceneError;

pub(super) struct Ctx {
    pub(super) lines: HashMap<String, usize>,
    pub(super) errors: Vec<SceneError>,
}

impl Ctx {
    pub(super) fn err(&mut self, path: &str, message: impl Into<String>) {
        let line = self.lines.get(path).copied();
        self.errors.push(SceneError {
            path: path.to_string(),
            message: message.into(),
            line,
        });
    }
}
