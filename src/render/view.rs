//! Where the camera looks: the 2D view (fit, follow), the 3D camera (orbit, fixed, follow,
//! top), and the centres of mass they follow.

use super::agents::AgentParams;
use super::camera::{self, Camera, CameraMode};
use super::{Fit, Renderer, World, BOX_LEVEL};
use crate::bfs::Frame;

/// Follow camera: fraction of the way to the new centre (and radius) taken each frame.
const FOLLOW_EASE: f32 = 0.15;
const FOLLOW_RADIUS_EASE: f32 = 0.05;
/// Follow camera: the framed radius is this many times the agents' RMS distance from the
/// centre of mass.
const FOLLOW_RADIUS_RMS: f32 = 2.0;
/// Agents sampled per frame for the follow camera's radius.
const FOLLOW_SAMPLE_AGENTS: usize = 50_000;
/// 3D trails: the light they keep fades by e for every this many pixels the camera's move
/// shifts the flock across the frame (so the camera smears it a couple of pixels at most).
/// The flock's near side is taken [`FLOCK_FILL`] of the frame's half-height from its centre.
const FLOCK_FILL: f32 = 2.0 / 3.0;
const CAMERA_SMEAR_PX: f32 = 3.0;

/// The trails an orbit camera turning `speed` degrees a second of video at `fps` keeps, in a
/// frame `height` pixels high: the flock's near side, [`FLOCK_FILL`] of the half-height from
/// its centre, moves across the frame by the angle turned each frame.
pub fn orbit_trails(trails: f32, speed: f32, fps: u32, height: u32) -> f32 {
    let turn = (speed / fps.max(1) as f32).abs().to_radians();
    camera_kept_trails(trails, turn * FLOCK_FILL * height as f32 / 2.0)
}

/// The trails kept out of a frame whose camera move shifted the flock `moved` pixels.
fn camera_kept_trails(trails: f32, moved: f32) -> f32 {
    trails.min((-moved / CAMERA_SMEAR_PX).exp())
}

/// Centre of mass of x, y (circular mean per axis in a periodic world); `None` if no agent
/// has finite coordinates.
pub fn centre_of_mass(frame: &Frame, n: usize, world: &World) -> Option<[f32; 2]> {
    let mut out = [0.0f32; 2];
    for (axis, o) in out.iter_mut().enumerate() {
        let xs = &frame.pos[axis * n..(axis + 1) * n];
        let l = world.size[axis] as f64;
        let (mut a, mut b, mut count) = (0.0f64, 0.0f64, 0usize);
        for &x in xs.iter().filter(|x| x.is_finite()) {
            if world.wrap {
                let t = x as f64 / l * std::f64::consts::TAU;
                a += t.cos();
                b += t.sin();
            } else {
                a += x as f64;
            }
            count += 1;
        }
        if count == 0 {
            return None;
        }
        *o = if world.wrap {
            let t = b.atan2(a).rem_euclid(std::f64::consts::TAU);
            (t / std::f64::consts::TAU * l) as f32
        } else {
            (a / count as f64) as f32
        };
    }
    Some(out)
}

/// Centre of mass in 3D (circular mean per axis in a periodic world); `None` if no agent has
/// finite coordinates.
pub fn centre_of_mass3(frame: &Frame, n: usize, size: [f32; 3], wrap: bool) -> Option<[f32; 3]> {
    let mut out = [0.0f32; 3];
    for (axis, o) in out.iter_mut().enumerate() {
        let xs = frame.pos.get(axis * n..(axis + 1) * n)?;
        let l = size[axis] as f64;
        let periodic = wrap && l > 0.0;
        let (mut a, mut b, mut count) = (0.0f64, 0.0f64, 0usize);
        for &x in xs.iter().filter(|x| x.is_finite()) {
            if periodic {
                let t = x as f64 / l * std::f64::consts::TAU;
                a += t.cos();
                b += t.sin();
            } else {
                a += x as f64;
            }
            count += 1;
        }
        if count == 0 {
            return None;
        }
        *o = if periodic {
            let t = b.atan2(a).rem_euclid(std::f64::consts::TAU);
            (t / std::f64::consts::TAU * l) as f32
        } else {
            (a / count as f64) as f32
        };
    }
    Some(out)
}

/// The flock's mean direction of motion in x–y (radians, as `atan2` gives): the direction
/// of the mean unit velocity; 0 if no agent moves.
pub fn mean_heading(frame: &Frame, dim: usize, n: usize) -> f32 {
    let (mut sx, mut sy) = (0.0f64, 0.0f64);
    for i in 0..n {
        let (vx, vy) = (frame.vel[i] as f64, frame.vel[n + i] as f64);
        let vz = if dim == 3 {
            frame.vel[2 * n + i] as f64
        } else {
            0.0
        };
        let s = (vx * vx + vy * vy + vz * vz).sqrt();
        if s > 0.0 && s.is_finite() {
            sx += vx / s;
            sy += vy / s;
        }
    }
    sy.atan2(sx) as f32
}

impl Renderer {
    /// Where the camera looks: world point at the viewport's lower-left, and world units spanned.
    pub(super) fn view(&mut self, frame: &Frame, n: usize) -> ([f32; 2], [f32; 2], [f32; 2]) {
        let (w, h) = (self.look.width as f32, self.look.height as f32);
        let [ww, wh] = self.world.size;
        let sx = w / ww.max(1e-6);
        let sy = h / wh.max(1e-6);
        let scale = match self.look.fit {
            Fit::Letterbox | Fit::Tile => sx.min(sy),
            Fit::Cover => sx.max(sy),
        } * self.look.zoom;
        let size = [w / scale, h / scale];
        let mut centre = self.look.center.unwrap_or([ww / 2.0, wh / 2.0]);
        if self.look.follow {
            if let Some(target) = centre_of_mass(frame, n, &self.world) {
                // Ease towards the centre of mass so the camera does not jitter.
                let c = match self.centre {
                    None => target,
                    Some(prev) => {
                        let mut c = prev;
                        for k in 0..2 {
                            let mut d = target[k] - prev[k];
                            if self.world.wrap {
                                let l = self.world.size[k];
                                d -= (d / l).round() * l;
                            }
                            c[k] = prev[k] + 0.15 * d;
                            // Back into the world: a flock that keeps crossing the seam one way
                            // would otherwise take the camera worlds away from the copies drawn
                            // around it (a periodic world looks the same a world length on).
                            if self.world.wrap {
                                c[k] = c[k].rem_euclid(self.world.size[k]);
                            }
                        }
                        c
                    }
                };
                self.centre = Some(c);
                centre = c;
            }
        }
        (
            [centre[0] - size[0] / 2.0, centre[1] - size[1] / 2.0],
            size,
            centre,
        )
    }

    /// 3D through a perspective camera: the camera for this frame, as the 3D fields of the
    /// agents pass's parameters. `None` for 2D and for the `top` camera.
    pub(super) fn camera3(&mut self, frame: &Frame, n: usize) -> Option<AgentParams> {
        self.fade_before = self.fade_now;
        self.fade_now = self.look.trails;
        let v = self.look.view3.clone()?;
        if v.mode == CameraMode::Top {
            return None;
        }
        let size = [self.world.size[0], self.world.size[1], self.world.depth];
        let aspect = self.look.width as f32 / self.look.height as f32;
        let box_centre = size.map(|s| s / 2.0);
        let box_radius = camera::distance(size, [0.0; 3]) / 2.0;
        let (cam, centre, radius, min_image) = match v.mode {
            CameraMode::Orbit | CameraMode::Top => {
                // Circling the flock (its eased centre and size, as the follow camera frames
                // it: about two thirds of the frame), one turn per orbit period. The phase is
                // the frame's time from its index (output frames are `frame_dt` apart).
                let t = frame.index as f64 * self.world.frame_dt as f64;
                let phase = if v.orbit_period != 0.0 {
                    (t / v.orbit_period as f64).fract() as f32
                } else {
                    0.0
                };
                let (c, r) = self.follow_sphere(frame, n, size, box_centre, box_radius);
                let cam = camera::orbit(c, r, v.fov, aspect, phase);
                (cam, c, r, self.world.wrap)
            }
            CameraMode::Fixed => {
                let target = v.target.unwrap_or(box_centre);
                let eye = v
                    .eye
                    .unwrap_or_else(|| camera::orbit(target, box_radius, v.fov, aspect, 0.0).eye);
                let cam = Camera {
                    eye,
                    target,
                    fov_y: v.fov,
                };
                (cam, target, box_radius, false)
            }
            CameraMode::Follow => {
                let (c, r) = self.follow_sphere(frame, n, size, box_centre, box_radius);
                let d = camera::fit_distance(r, v.fov, aspect);
                let cam = Camera {
                    eye: camera::eye_around(c, d, camera::START_AZIMUTH_DEG),
                    target: c,
                    fov_y: v.fov,
                };
                (cam, c, r, self.world.wrap)
            }
        };
        let ref_dist = camera::distance(cam.eye, centre).max(1e-6);
        let (near, far) = camera::planes(cam.eye, centre, radius);
        let m = camera::view_proj(&cam, aspect, near, far);
        // Trails stay attached to the agents when the camera moves: light kept from the
        // frames before sits where the camera saw it then, so the trails fade faster the
        // farther the flock moved across the frame since the last frame (what the camera
        // smears stays within a couple of pixels).
        if let Some(last) = self.last_view_proj.replace(m) {
            let moved = self.camera_motion_px(&last, &m, centre, radius * FLOCK_FILL);
            self.fade_now = camera_kept_trails(self.look.trails, moved);
        }
        Some(AgentParams {
            view_proj: camera::columns(&m),
            eye: cam.eye,
            fog: v.fog,
            period: size,
            ref_dist,
            anchor: centre,
            min_image: min_image as u32,
            fog_near: (ref_dist - radius).max(0.0),
            fog_far: ref_dist + radius,
            box_level: BOX_LEVEL,
            near,
            ..Default::default()
        })
    }

    /// How far, in pixels, the camera's move from `last` to `now` shifts the flock across the
    /// frame: the most any of its centre and the six points `reach` from it along the axes
    /// moves (points behind either eye left out).
    fn camera_motion_px(
        &self,
        last: &camera::Mat4,
        now: &camera::Mat4,
        c: [f32; 3],
        reach: f32,
    ) -> f32 {
        let half = [self.look.width as f32 / 2.0, self.look.height as f32 / 2.0];
        let screen = |m: &camera::Mat4, p: [f32; 3]| {
            let q = camera::transform(m, p);
            (q[3] > 1e-6).then(|| [q[0] / q[3] * half[0], q[1] / q[3] * half[1]])
        };
        let mut points = vec![c];
        for a in 0..3 {
            for s in [-1.0, 1.0] {
                let mut p = c;
                p[a] += s * reach;
                points.push(p);
            }
        }
        points
            .into_iter()
            .filter_map(|p| Some((screen(last, p)?, screen(now, p)?)))
            .map(|(a, b)| (a[0] - b[0]).hypot(a[1] - b[1]))
            .fold(0.0, f32::max)
    }

    /// Follow camera: the eased centre of mass and framed radius.
    fn follow_sphere(
        &mut self,
        frame: &Frame,
        n: usize,
        size: [f32; 3],
        fallback_centre: [f32; 3],
        fallback_radius: f32,
    ) -> ([f32; 3], f32) {
        let wrap = self.world.wrap;
        let Some(target) = centre_of_mass3(frame, n, size, wrap) else {
            return self.follow3.unwrap_or((fallback_centre, fallback_radius));
        };
        // Offset of `p` from `c` (the nearest image in a periodic world).
        let offset = |p: f32, c: f32, l: f32| {
            let d = p - c;
            if wrap && l > 0.0 {
                d - (d / l).round() * l
            } else {
                d
            }
        };
        let step = (n / FOLLOW_SAMPLE_AGENTS).max(1);
        let (mut sum, mut count) = (0.0f64, 0usize);
        for i in (0..n).step_by(step) {
            let mut r2 = 0.0f64;
            for a in 0..3 {
                let d = offset(frame.pos[a * n + i], target[a], size[a]) as f64;
                r2 += d * d;
            }
            if r2.is_finite() {
                sum += r2;
                count += 1;
            }
        }
        let rms = if count > 0 {
            (sum / count as f64).sqrt() as f32
        } else {
            fallback_radius
        };
        let min_r = fallback_radius * 0.02;
        let r_target = (rms * FOLLOW_RADIUS_RMS).clamp(min_r.max(1e-3), fallback_radius * 2.0);
        let next = match self.follow3 {
            None => (target, r_target),
            Some((prev, r)) => {
                let mut c = prev;
                for a in 0..3 {
                    c[a] = prev[a] + FOLLOW_EASE * offset(target[a], prev[a], size[a]);
                    if wrap && size[a] > 0.0 {
                        c[a] = c[a].rem_euclid(size[a]);
                    }
                }
                (c, r + FOLLOW_RADIUS_EASE * (r_target - r))
            }
        };
        self.follow3 = Some(next);
        next
    }
}
