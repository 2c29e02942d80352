//! Perspective cameras for 3D recordings: view-projection matrices built on the CPU (pure
//! functions, tested without a GPU) and handed to the agents pass as a uniform.
//!
//! Conventions: the world is right-handed with z up; clip space is wgpu's (x, y in −1..1,
//! depth 0..1); pixels run from the top-left corner, rows downwards. Matrices are row-major
//! here (`m[row][col]`) and transposed to WGSL's column-major layout by [`columns`].

pub use crate::look::CameraMode;

/// Row-major 4×4 matrix.
pub type Mat4 = [[f32; 4]; 4];

/// Vertical field of view when none is given, degrees.
pub const DEFAULT_FOV: f32 = 45.0;
/// Height of the orbit (and of the follow and default fixed eye) above the target's
/// horizon, degrees.
pub const ELEVATION_DEG: f32 = 25.0;
/// Azimuth of the eye at the orbit's start, degrees: on the −y side looking towards +y, so
/// x runs left to right as in 2D.
pub const START_AZIMUTH_DEG: f32 = -90.0;

/// A pinhole camera.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    pub eye: [f32; 3],
    pub target: [f32; 3],
    /// Vertical field of view, degrees.
    pub fov_y: f32,
}

fn sub(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn dot(a: [f32; 3], b: [f32; 3]) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn cross(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn normalize(a: [f32; 3]) -> [f32; 3] {
    let l = dot(a, a).sqrt().max(1e-30);
    [a[0] / l, a[1] / l, a[2] / l]
}

pub fn distance(a: [f32; 3], b: [f32; 3]) -> f32 {
    let d = sub(a, b);
    dot(d, d).sqrt()
}

/// World → view (right-handed, the camera looking down −z). `up` is z unless the view is
/// (nearly) vertical, then y.
pub fn look_at(eye: [f32; 3], target: [f32; 3]) -> Mat4 {
    let f = normalize(sub(target, eye));
    let up = if f[2].abs() > 0.999 {
        [0.0, 1.0, 0.0]
    } else {
        [0.0, 0.0, 1.0]
    };
    let s = normalize(cross(f, up));
    let u = cross(s, f);
    [
        [s[0], s[1], s[2], -dot(s, eye)],
        [u[0], u[1], u[2], -dot(u, eye)],
        [-f[0], -f[1], -f[2], dot(f, eye)],
        [0.0, 0.0, 0.0, 1.0],
    ]
}

/// View → clip, depth 0 at `near` and 1 at `far`.
pub fn perspective(fov_y_deg: f32, aspect: f32, near: f32, far: f32) -> Mat4 {
    let ys = 1.0 / (fov_y_deg.to_radians() / 2.0).tan();
    let xs = ys / aspect;
    [
        [xs, 0.0, 0.0, 0.0],
        [0.0, ys, 0.0, 0.0],
        [0.0, 0.0, far / (near - far), near * far / (near - far)],
        [0.0, 0.0, -1.0, 0.0],
    ]
}

pub fn mul(a: &Mat4, b: &Mat4) -> Mat4 {
    let mut m = [[0.0f32; 4]; 4];
    for (r, row) in m.iter_mut().enumerate() {
        for (c, v) in row.iter_mut().enumerate() {
            *v = (0..4).map(|k| a[r][k] * b[k][c]).sum();
        }
    }
    m
}

/// World → clip for `cam` on a viewport of this aspect (width / height).
pub fn view_proj(cam: &Camera, aspect: f32, near: f32, far: f32) -> Mat4 {
    mul(
        &perspective(cam.fov_y, aspect, near, far),
        &look_at(cam.eye, cam.target),
    )
}

/// The matrix in WGSL's column-major layout.
pub fn columns(m: &Mat4) -> [[f32; 4]; 4] {
    let mut c = [[0.0f32; 4]; 4];
    for (r, row) in m.iter().enumerate() {
        for (k, v) in row.iter().enumerate() {
            c[k][r] = *v;
        }
    }
    c
}

/// Clip coordinates of a world point.
pub fn transform(m: &Mat4, p: [f32; 3]) -> [f32; 4] {
    let v = [p[0], p[1], p[2], 1.0];
    let mut o = [0.0f32; 4];
    for (r, out) in o.iter_mut().enumerate() {
        *out = (0..4).map(|k| m[r][k] * v[k]).sum();
    }
    o
}

/// Where a world point lands on a `width`×`height` image (pixels from the top-left corner);
/// `None` if it is behind the camera.
pub fn to_pixel(m: &Mat4, p: [f32; 3], width: f32, height: f32) -> Option<[f32; 2]> {
    let c = transform(m, p);
    if c[3] <= 0.0 {
        return None;
    }
    let (x, y) = (c[0] / c[3], c[1] / c[3]);
    Some([(x + 1.0) / 2.0 * width, (1.0 - y) / 2.0 * height])
}

/// Distance from which a sphere of `radius` just fills the narrower field of view.
pub fn fit_distance(radius: f32, fov_y_deg: f32, aspect: f32) -> f32 {
    let half_y = fov_y_deg.to_radians() / 2.0;
    let half_x = (half_y.tan() * aspect).atan();
    radius / half_y.min(half_x).sin()
}

/// An eye at `dist` from `centre`, at `azimuth_deg` around z and [`ELEVATION_DEG`] up.
pub fn eye_around(centre: [f32; 3], dist: f32, azimuth_deg: f32) -> [f32; 3] {
    let (a, e) = (azimuth_deg.to_radians(), ELEVATION_DEG.to_radians());
    [
        centre[0] + dist * e.cos() * a.cos(),
        centre[1] + dist * e.cos() * a.sin(),
        centre[2] + dist * e.sin(),
    ]
}

/// The orbit camera at `phase` (0..1: one full turn), framing the sphere.
pub fn orbit(centre: [f32; 3], radius: f32, fov_y: f32, aspect: f32, phase: f32) -> Camera {
    let d = fit_distance(radius, fov_y, aspect);
    Camera {
        eye: eye_around(centre, d, START_AZIMUTH_DEG + 360.0 * phase),
        target: centre,
        fov_y,
    }
}

/// Near and far planes that keep a sphere (`centre`, `radius`) seen from `eye` in range.
pub fn planes(eye: [f32; 3], centre: [f32; 3], radius: f32) -> (f32, f32) {
    let d = distance(eye, centre);
    let near = (d.max(radius) * 1e-3).max(1e-4);
    let far = (d + radius) * 8.0 + 1.0;
    (near, far)
}
