//! Keys and the mouse, as actions: the transport's keys (space, arrows, Home, End, …), the
//! hand-off's `s`, and the camera's drags and wheel over the image.
//!
//! | key | action |
//! |---|---|
//! | space | play / pause |
//! | ← → | one frame back / on (pauses) |
//! | Home End | first / last frame |
//! | + − (or ] [) | faster / slower |
//! | r | reverse |
//! | l | loop |
//! | s | save the look (`NAME.look.json`; a live run's scene too, `NAME.scene.json`) |
//! | f | follow the flock (2D) |
//! | 0 | fit: the whole world (2D), the recording's camera (3D) |
//! | q, Esc | quit |
//! | W A S D Q E with the right button held | fly (3D) |

use winit::event::{ElementState, MouseButton, MouseScrollDelta};
use winit::keyboard::{Key, NamedKey};

/// What the user asked for.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    Toggle,
    Step(i64),
    Seek(u64),
    Start,
    End,
    Faster(f32),
    Speed(f32),
    ToggleReverse,
    ToggleLoop,
    Save,
    Follow,
    Fit,
    Quit,
    /// The look as edited in the panel (every setting given).
    Look(Box<crate::look::Look>),
    /// A live run's parameter (a timeline path) set to a value from the next step on.
    Physics(String, f64),
    Camera(Move),
}

/// A camera move, in the image's pixels.
#[derive(Clone, Debug, PartialEq)]
pub enum Move {
    /// Left drag: 2D pan, 3D orbit.
    Drag([f32; 2]),
    /// Right (or shift-left) drag: 2D pan, 3D pan.
    DragPan([f32; 2]),
    /// Wheel notches (up: positive) at a pixel of the image.
    Wheel { at: [f32; 2], notches: f32 },
    /// 3D fly: forward, right, up.
    Fly([f32; 3]),
}

/// The action of a key pressed (`right` says whether the right button is held: fly keys).
pub fn key(k: &Key, repeat: bool, right: bool) -> Option<Action> {
    if right {
        let fly = match k {
            Key::Character(c) => match c.to_lowercase().as_str() {
                "w" => Some([1.0, 0.0, 0.0]),
                "s" => Some([-1.0, 0.0, 0.0]),
                "a" => Some([0.0, -1.0, 0.0]),
                "d" => Some([0.0, 1.0, 0.0]),
                "e" => Some([0.0, 0.0, 1.0]),
                "q" => Some([0.0, 0.0, -1.0]),
                _ => None,
            },
            _ => None,
        };
        if let Some(f) = fly {
            return Some(Action::Camera(Move::Fly(f)));
        }
    }
    match k {
        Key::Named(NamedKey::Space) if !repeat => Some(Action::Toggle),
        Key::Named(NamedKey::ArrowRight) => Some(Action::Step(1)),
        Key::Named(NamedKey::ArrowLeft) => Some(Action::Step(-1)),
        Key::Named(NamedKey::Home) => Some(Action::Start),
        Key::Named(NamedKey::End) => Some(Action::End),
        Key::Named(NamedKey::Escape) => Some(Action::Quit),
        Key::Character(c) if !repeat => match c.as_str() {
            "+" | "=" | "]" => Some(Action::Faster(2.0)),
            "-" | "[" => Some(Action::Faster(0.5)),
            "r" | "R" => Some(Action::ToggleReverse),
            "l" | "L" => Some(Action::ToggleLoop),
            "s" | "S" => Some(Action::Save),
            "f" | "F" => Some(Action::Follow),
            "0" => Some(Action::Fit),
            "q" | "Q" => Some(Action::Quit),
            _ => None,
        },
        _ => None,
    }
}

/// The mouse over the image.
#[derive(Debug, Default)]
pub struct Pointer {
    /// Where it is, in the window's pixels.
    pub at: Option<[f32; 2]>,
    left: bool,
    pub right: bool,
    shift: bool,
    /// A drag started over the image (drags that start over the panel are egui's).
    dragging: bool,
}

impl Pointer {
    pub fn shift(&mut self, held: bool) {
        self.shift = held;
    }

    /// The pointer moved to `to`: a drag, if a button is held since a press over the image.
    pub fn moved(&mut self, to: [f32; 2]) -> Option<Action> {
        let from = self.at.replace(to)?;
        if !self.dragging {
            return None;
        }
        let by = [to[0] - from[0], to[1] - from[1]];
        if self.right || (self.left && self.shift) {
            Some(Action::Camera(Move::DragPan(by)))
        } else if self.left {
            Some(Action::Camera(Move::Drag(by)))
        } else {
            None
        }
    }

    /// A button went down or up; `over_image` says whether the pointer is over the image.
    pub fn button(&mut self, b: MouseButton, s: ElementState, over_image: bool) {
        let down = s == ElementState::Pressed;
        match b {
            MouseButton::Left => self.left = down,
            MouseButton::Right => self.right = down,
            _ => return,
        }
        if down && over_image {
            self.dragging = true;
        } else if !self.left && !self.right {
            self.dragging = false;
        }
    }

    /// The wheel turned over the image.
    pub fn wheel(&self, d: MouseScrollDelta) -> Option<Action> {
        let notches = match d {
            MouseScrollDelta::LineDelta(_, y) => y,
            MouseScrollDelta::PixelDelta(p) => p.y as f32 / 40.0,
        };
        let at = self.at?;
        (notches != 0.0).then_some(Action::Camera(Move::Wheel { at, notches }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_map_to_the_transport() {
        assert_eq!(
            key(&Key::Named(NamedKey::Space), false, false),
            Some(Action::Toggle)
        );
        assert_eq!(key(&Key::Named(NamedKey::Space), true, false), None);
        assert_eq!(
            key(&Key::Named(NamedKey::ArrowLeft), true, false),
            Some(Action::Step(-1))
        );
        assert_eq!(
            key(&Key::Character("s".into()), false, false),
            Some(Action::Save)
        );
        // With the right button held, S flies backwards instead.
        assert_eq!(
            key(&Key::Character("s".into()), false, true),
            Some(Action::Camera(Move::Fly([-1.0, 0.0, 0.0])))
        );
    }

    #[test]
    fn only_drags_that_start_over_the_image_move_the_camera() {
        let mut p = Pointer::default();
        p.moved([10.0, 10.0]);
        p.button(MouseButton::Left, ElementState::Pressed, false);
        assert_eq!(p.moved([20.0, 10.0]), None);
        p.button(MouseButton::Left, ElementState::Released, false);
        p.button(MouseButton::Left, ElementState::Pressed, true);
        assert_eq!(
            p.moved([25.0, 5.0]),
            Some(Action::Camera(Move::Drag([5.0, -5.0])))
        );
    }
}
