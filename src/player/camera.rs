//! The window's camera moves, as changes to the look: 2D pan (drag) and zoom about the cursor
//! (wheel) set `center` and `zoom`; 3D orbit (drag), dolly (wheel), pan (right drag) and fly
//! (right button held, W A S D, Q E) move a fixed camera's `eye` and `target`, starting from
//! wherever the frame was seen from (the recording's orbit or follow camera included). So the
//! camera on screen is part of the look a render is handed.

use crate::look::{CameraMode, Look, Vec2, Vec3};
use crate::render::present::Seen;

/// Radians of orbit per pixel dragged.
const ORBIT_PER_PX: f32 = 0.006;
/// The steepest the orbit goes above or below the target, radians (short of straight up,
/// where the camera's up direction flips).
const MAX_ELEVATION: f32 = 1.45;
/// Zoom or dolly factor per wheel notch.
pub const WHEEL_FACTOR: f32 = 1.15;

/// 2D: the view moved by `by` pixels (the picture follows the pointer). The follow camera
/// stops: the view stays where it was put.
pub fn pan(look: &mut Look, seen: &Seen, image: [u32; 2], by: [f32; 2]) {
    let (_, span, centre) = seen.view;
    let per_px = span[0] / image[0].max(1) as f32;
    look.center = Some(Vec2([
        centre[0] - by[0] * per_px,
        centre[1] + by[1] * per_px,
    ]));
    look.follow = Some(false);
}

/// 2D: zoom by `factor` keeping the world point under pixel `at` where it is.
pub fn zoom_at(look: &mut Look, seen: &Seen, image: [u32; 2], at: [f32; 2], factor: f32) {
    let (origin, span, _) = seen.view;
    let old = look.zoom.unwrap_or(1.0);
    let new = (old * factor).clamp(0.01, 1000.0);
    look.zoom = Some(new);
    if look.follow == Some(true) {
        return;
    }
    let (w, h) = (image[0].max(1) as f32, image[1].max(1) as f32);
    let under = [
        origin[0] + at[0] / w * span[0],
        origin[1] + (1.0 - at[1] / h) * span[1],
    ];
    let shrink = old / new;
    let half = [span[0] * shrink / 2.0, span[1] * shrink / 2.0];
    look.center = Some(Vec2([
        under[0] - (at[0] / w * 2.0 - 1.0) * half[0],
        under[1] + (at[1] / h * 2.0 - 1.0) * half[1],
    ]));
}

/// 2D: the view the fit gives (the world's centre, zoom 1).
pub fn fit(look: &mut Look) {
    look.center = None;
    look.zoom = Some(1.0);
    look.follow = Some(false);
}

/// 3D: the eye and target the next move starts from: the fixed camera's own, else where the
/// last frame was seen from.
fn eye_target(look: &Look, seen: &Seen) -> Option<([f32; 3], [f32; 3])> {
    match (look.camera, look.eye, look.target) {
        (Some(CameraMode::Fixed), Some(e), Some(t)) => Some((e.0, t.0)),
        _ => seen.eye_target,
    }
}

fn set_fixed(look: &mut Look, eye: [f32; 3], target: [f32; 3]) {
    look.camera = Some(CameraMode::Fixed);
    look.eye = Some(Vec3(eye));
    look.target = Some(Vec3(target));
    look.orbit_speed = None;
    look.follow = Some(false);
}

fn sub(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn add_scaled(a: [f32; 3], b: [f32; 3], s: f32) -> [f32; 3] {
    [a[0] + b[0] * s, a[1] + b[1] * s, a[2] + b[2] * s]
}

fn len(a: [f32; 3]) -> f32 {
    (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt()
}

/// The camera's forward, right and up directions (unit vectors; z up).
fn basis(eye: [f32; 3], target: [f32; 3]) -> ([f32; 3], [f32; 3], [f32; 3]) {
    let d = sub(target, eye);
    let l = len(d).max(1e-12);
    let f = [d[0] / l, d[1] / l, d[2] / l];
    let up = if f[2].abs() > 0.999 {
        [0.0, 1.0, 0.0]
    } else {
        [0.0, 0.0, 1.0]
    };
    let r = [
        f[1] * up[2] - f[2] * up[1],
        f[2] * up[0] - f[0] * up[2],
        f[0] * up[1] - f[1] * up[0],
    ];
    let rl = len(r).max(1e-12);
    let r = [r[0] / rl, r[1] / rl, r[2] / rl];
    let u = [
        r[1] * f[2] - r[2] * f[1],
        r[2] * f[0] - r[0] * f[2],
        r[0] * f[1] - r[1] * f[0],
    ];
    (f, r, u)
}

/// 3D: orbit the target by `by` pixels dragged (right: the camera goes round to the left of the
/// scene; down: it rises).
pub fn orbit(look: &mut Look, seen: &Seen, by: [f32; 2]) {
    let Some((eye, target)) = eye_target(look, seen) else {
        return;
    };
    let v = sub(eye, target);
    let r = len(v).max(1e-6);
    let az = v[1].atan2(v[0]) - by[0] * ORBIT_PER_PX;
    let el = ((v[2] / r).clamp(-1.0, 1.0).asin() + by[1] * ORBIT_PER_PX)
        .clamp(-MAX_ELEVATION, MAX_ELEVATION);
    let eye = [
        target[0] + r * el.cos() * az.cos(),
        target[1] + r * el.cos() * az.sin(),
        target[2] + r * el.sin(),
    ];
    set_fixed(look, eye, target);
}

/// 3D: the eye `factor` times closer to the target (a wheel notch in: 1.15).
pub fn dolly(look: &mut Look, seen: &Seen, factor: f32) {
    let Some((eye, target)) = eye_target(look, seen) else {
        return;
    };
    let v = sub(eye, target);
    let r = len(v);
    let new = (r / factor).max(1e-3);
    set_fixed(look, add_scaled(target, v, new / r.max(1e-12)), target);
}

/// 3D: eye and target moved together by `by` pixels across a view `height` pixels high with
/// field of view `fov` degrees (the scene follows the pointer).
pub fn pan3(look: &mut Look, seen: &Seen, by: [f32; 2], height: u32, fov: f32) {
    let Some((eye, target)) = eye_target(look, seen) else {
        return;
    };
    let (_, right, up) = basis(eye, target);
    let per_px = 2.0 * len(sub(target, eye)) * (fov.to_radians() / 2.0).tan() / height as f32;
    let mut d = add_scaled([0.0; 3], right, -by[0] * per_px);
    d = add_scaled(d, up, by[1] * per_px);
    set_fixed(look, add_scaled(eye, d, 1.0), add_scaled(target, d, 1.0));
}

/// 3D: fly `along` (forward, right, up; each −1..1) by `step` times the distance to the target.
pub fn fly(look: &mut Look, seen: &Seen, along: [f32; 3], step: f32) {
    let Some((eye, target)) = eye_target(look, seen) else {
        return;
    };
    let (f, r, u) = basis(eye, target);
    let dist = len(sub(target, eye)) * step;
    let mut d = add_scaled([0.0; 3], f, along[0] * dist);
    d = add_scaled(d, r, along[1] * dist);
    d = add_scaled(d, u, along[2] * dist);
    set_fixed(look, add_scaled(eye, d, 1.0), add_scaled(target, d, 1.0));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen2() -> Seen {
        // 200 x 100 world units over 400 x 200 pixels, centred on (100, 50).
        Seen {
            eye_target: None,
            view: ([0.0, 0.0], [200.0, 100.0], [100.0, 50.0]),
        }
    }

    #[test]
    fn a_drag_moves_the_world_with_the_pointer() {
        let mut l = Look::default();
        pan(&mut l, &seen2(), [400, 200], [40.0, 20.0]);
        // Dragged right and down: the view's centre moves left and up in the world.
        assert_eq!(l.center, Some(Vec2([80.0, 60.0])));
        assert_eq!(l.follow, Some(false));
    }

    #[test]
    fn zoom_keeps_the_point_under_the_cursor() {
        let mut l = Look::default();
        // The cursor at pixel (100, 50): world (50, 75).
        zoom_at(&mut l, &seen2(), [400, 200], [100.0, 50.0], 2.0);
        assert_eq!(l.zoom, Some(2.0));
        let c = l.center.unwrap().0;
        // The new view spans 100 x 50; the cursor, a quarter in from the left and top, still
        // shows (50, 75).
        let origin = [c[0] - 50.0, c[1] - 25.0];
        let under = [origin[0] + 0.25 * 100.0, origin[1] + 0.75 * 50.0];
        assert!(
            (under[0] - 50.0).abs() < 1e-4 && (under[1] - 75.0).abs() < 1e-4,
            "{c:?}"
        );
    }

    #[test]
    fn orbit_and_dolly_keep_the_target_and_move_the_eye() {
        let seen = Seen {
            eye_target: Some(([0.0, -10.0, 0.0], [0.0, 0.0, 0.0])),
            view: Default::default(),
        };
        let mut l = Look::default();
        orbit(&mut l, &seen, [0.0, 100.0]);
        let e = l.eye.unwrap().0;
        assert_eq!(l.camera, Some(CameraMode::Fixed));
        assert!((len(e) - 10.0).abs() < 1e-4 && e[2] > 5.0, "{e:?}");
        dolly(&mut l, &seen, 2.0);
        assert!((len(l.eye.unwrap().0) - 5.0).abs() < 1e-4);
        assert_eq!(l.target, Some(Vec3([0.0; 3])));
        fly(&mut l, &seen, [1.0, 0.0, 0.0], 0.5);
        assert!(len(sub(l.eye.unwrap().0, l.target.unwrap().0)) - 5.0 < 1e-4);
    }
}
