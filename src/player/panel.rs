//! The panel: every setting of the look, edited in place on a copy of it (the caller resolves
//! the copy when it changes), the hand-off's button, and what the last action said.

use egui::{ComboBox, DragValue, Slider, Ui};

use super::input::Action;
use crate::look::{
    name_of, CameraMode, ColorBy, ColorMode, Colormap, Fit, Look, Overlay, Overlays, Rgb, Shape,
    Span, Style, Vec2, Vec3,
};
use crate::render::present::Seen;

/// What the panel shows besides the look.
pub struct Info<'a> {
    pub dim: u8,
    /// The world's size (x, y), for the 2D view's centre.
    pub world: [f32; 2],
    pub seen: Seen,
    /// Whether the recording has species (`colour by` then offers `species`).
    pub species: bool,
    pub save_path: &'a str,
    /// The last message (a save, an error).
    pub message: &'a str,
    /// A live run: its scene as it runs (its keys so far) and the step shown.
    pub physics: Option<(&'a crate::scene::Scene, u64)>,
}

pub fn show(ui: &mut Ui, look: &mut Look, info: &Info, out: &mut Vec<Action>) {
    egui::ScrollArea::vertical().show(ui, |ui| {
        if let Some((scene, step)) = info.physics {
            super::physics::show(ui, scene, step, out);
            ui.separator();
        }
        ui.heading("Look");
        if let Some(s) = look.size {
            ui.label(format!("size {s} (the window's image)"));
        }
        style(ui, look);
        colours(ui, look, info.species);
        ui.separator();
        light(ui, look);
        ui.separator();
        grade(ui, look);
        ui.separator();
        overlays(ui, look);
        ui.separator();
        if info.dim == 3 {
            camera3(ui, look, info);
        }
        if info.dim != 3 || look.camera == Some(CameraMode::Top) {
            view2(ui, look, info, out);
        }
        ui.separator();
        if ui.button("Save look (s)").clicked() {
            out.push(Action::Save);
        }
        ui.label(format!("to {}", info.save_path));
        if !info.message.is_empty() {
            ui.label(info.message);
        }
    });
}

fn choose<T: clap::ValueEnum + PartialEq + Copy>(ui: &mut Ui, label: &str, v: &mut Option<T>) {
    choose_from(ui, label, v, T::value_variants());
}

/// [`choose`] among `options` only.
fn choose_from<T: clap::ValueEnum + PartialEq + Copy>(
    ui: &mut Ui,
    label: &str,
    v: &mut Option<T>,
    options: &[T],
) {
    let Some(mut cur) = *v else { return };
    ComboBox::from_label(label)
        .selected_text(name_of(&cur))
        .show_ui(ui, |ui| {
            for x in options {
                ui.selectable_value(&mut cur, *x, name_of(x));
            }
        });
    if Some(cur) != *v {
        *v = Some(cur);
    }
}

fn slider(
    ui: &mut Ui,
    label: &str,
    v: &mut Option<f32>,
    range: std::ops::RangeInclusive<f32>,
    default: f32,
) {
    let mut x = v.unwrap_or(default);
    if ui.add(Slider::new(&mut x, range).text(label)).changed() {
        *v = Some(x);
    }
}

/// The style, and the settings whose defaults follow it: changing it lets them be resolved
/// again for the new style (ink: dark agents on a dusk sky, no bloom).
fn style(ui: &mut Ui, look: &mut Look) {
    let before = look.style;
    choose::<Style>(ui, "style", &mut look.style);
    if look.style != before {
        look.bloom = None;
        look.stacking = None;
        look.background = None;
        look.background_top = None;
        look.vignette = None;
        look.exposure = None;
        look.point_size = None;
        if look.color.is_some_and(|c| c.mode == ColorMode::Fixed) {
            look.color = None;
        }
    }
    choose::<Shape>(ui, "shape", &mut look.shape);
    slider(ui, "stacking", &mut look.stacking, 0.0..=1.0, 0.7);
}

/// The colour modes, the colour map and its range; `species` only for a recording with species
/// (`species`), as a render refuses it on one without.
fn colours(ui: &mut Ui, look: &mut Look, species: bool) {
    let before = look.color;
    let mut mode = look.color.map(|c| c.mode);
    choose_from(ui, "colour by", &mut mode, &colour_modes(species));
    if let (Some(m), Some(c)) = (mode, look.color) {
        if m != c.mode {
            look.color = Some(ColorBy::mode(m));
        }
    }
    if let Some(c) = look.color.filter(|c| c.mode == ColorMode::Fixed) {
        ui.horizontal(|ui| {
            let mut own = c.fixed.is_some();
            let mut rgb = c.fixed.unwrap_or(Rgb([255, 255, 255])).0;
            ui.checkbox(&mut own, "own colour");
            if own {
                egui::widgets::color_picker::color_edit_button_srgb(ui, &mut rgb);
            }
            let fixed = own.then_some(Rgb(rgb));
            if fixed != c.fixed {
                look.color = Some(ColorBy {
                    mode: ColorMode::Fixed,
                    fixed,
                });
            }
        });
    }
    if look.color.map(|c| c.mode) != before.map(|c| c.mode) {
        // Another quantity: its range is measured again.
        look.range = None;
    }
    choose::<Colormap>(ui, "colour map", &mut look.colormap);
    slider(ui, "map start", &mut look.colormap_start, 0.0..=0.9, 0.0);
    if let Some(Span([a, b])) = look.range {
        let (mut a, mut b) = (a, b);
        ui.horizontal(|ui| {
            ui.label("range");
            let step = ((b - a).abs() / 200.0).max(1e-4);
            ui.add(DragValue::new(&mut a).speed(step));
            ui.add(DragValue::new(&mut b).speed(step));
        });
        if a < b && Some(Span([a, b])) != look.range {
            look.range = Some(Span([a, b]));
        }
    }
}

/// Grading after the tone curve.
fn grade(ui: &mut Ui, look: &mut Look) {
    slider(ui, "contrast", &mut look.contrast, 0.0..=4.0, 1.0);
    slider(ui, "saturation", &mut look.saturation, 0.0..=4.0, 1.0);
    slider(ui, "lift", &mut look.lift, -0.5..=0.5, 0.0);
    slider(ui, "gamma", &mut look.gamma, 0.1..=10.0, 1.0);
    slider(ui, "gain", &mut look.gain, 0.0..=4.0, 1.0);
}

fn light(ui: &mut Ui, look: &mut Look) {
    slider(ui, "exposure", &mut look.exposure, 0.0..=5.0, 1.0);
    slider(ui, "point size", &mut look.point_size, 0.0..=12.0, 1.5);
    slider(ui, "trails", &mut look.trails, 0.0..=0.99, 0.0);
    slider(ui, "bloom", &mut look.bloom, 0.0..=3.0, 0.5);
    slider(ui, "bloom radius", &mut look.bloom_radius, 0.25..=4.0, 1.0);
    slider(ui, "vignette", &mut look.vignette, 0.0..=1.5, 0.25);
    slider(ui, "motion blur °", &mut look.motion_blur, 0.0..=360.0, 0.0);
    ui.horizontal(|ui| {
        let mut c = look.background.unwrap_or(Rgb([0, 0, 0])).0;
        if egui::widgets::color_picker::color_edit_button_srgb(ui, &mut c).changed() {
            look.background = Some(Rgb(c));
        }
        ui.label("background");
        let mut top = look.background_top.is_some();
        let mut t = look
            .background_top
            .or(look.background)
            .unwrap_or(Rgb([0, 0, 0]))
            .0;
        ui.checkbox(&mut top, "to");
        if top {
            egui::widgets::color_picker::color_edit_button_srgb(ui, &mut t);
        }
        let t = top.then_some(Rgb(t));
        if t != look.background_top {
            look.background_top = t;
        }
        ui.label("at the top");
    });
    let mut fps = look.fps.unwrap_or(30);
    ui.horizontal(|ui| {
        ui.add(DragValue::new(&mut fps).range(1..=240));
        ui.label("frames per second");
    });
    if Some(fps) != look.fps {
        look.fps = Some(fps);
    }
}

fn overlays(ui: &mut Ui, look: &mut Look) {
    let mut list = look.overlay.clone().unwrap_or_default();
    ui.horizontal_wrapped(|ui| {
        for o in <Overlay as clap::ValueEnum>::value_variants() {
            let mut on = list.has(*o);
            if ui.checkbox(&mut on, name_of(o)).changed() {
                if on {
                    list.0.push(*o);
                    list.0.sort();
                } else {
                    list.0.retain(|x| x != o);
                }
            }
        }
    });
    if Some(&list) != look.overlay.as_ref() {
        look.overlay = Some(Overlays(list.0.clone()));
    }
    if list.has(Overlay::Title) {
        let mut t = look.title.clone().unwrap_or_default();
        if ui.text_edit_singleline(&mut t).changed() {
            look.title = Some(t);
        }
    }
}

fn view2(ui: &mut Ui, look: &mut Look, info: &Info, out: &mut Vec<Action>) {
    choose::<Fit>(ui, "fit", &mut look.fit);
    let mut follow = look.follow.unwrap_or(false);
    if ui.checkbox(&mut follow, "follow the flock (f)").changed() {
        look.follow = Some(follow);
    }
    let [x, y] = look
        .center
        .map(|c| c.0)
        .unwrap_or([info.world[0] / 2.0, info.world[1] / 2.0]);
    let (mut cx, mut cy) = (x, y);
    ui.horizontal(|ui| {
        ui.label("centre");
        let step = info.world[0].max(info.world[1]) / 500.0;
        ui.add(DragValue::new(&mut cx).speed(step));
        ui.add(DragValue::new(&mut cy).speed(step));
    });
    if [cx, cy] != [x, y] {
        look.center = Some(Vec2([cx, cy]));
    }
    let mut zoom = look.zoom.unwrap_or(1.0);
    ui.horizontal(|ui| {
        ui.add(DragValue::new(&mut zoom).speed(0.01).range(0.01..=1000.0));
        ui.label("zoom (wheel)");
        if ui.button("fit (0)").clicked() {
            out.push(Action::Fit);
        }
    });
    if Some(zoom) != look.zoom {
        look.zoom = Some(zoom);
    }
}

fn camera3(ui: &mut Ui, look: &mut Look, info: &Info) {
    let before = look.camera;
    choose::<CameraMode>(ui, "camera", &mut look.camera);
    if look.camera != before {
        set_camera(look, info);
    }
    if look.camera == Some(CameraMode::Orbit) {
        let mut p = look.orbit_speed.unwrap_or(18.0);
        ui.horizontal(|ui| {
            ui.add(DragValue::new(&mut p).speed(0.5).range(-36000.0..=36000.0));
            ui.label("orbit, °/s of video");
        });
        if Some(p) != look.orbit_speed {
            look.orbit_speed = Some(p);
        }
    }
    if look.camera == Some(CameraMode::Fixed) {
        for (label, v) in [("eye", &mut look.eye), ("target", &mut look.target)] {
            let Some(Vec3(p)) = v else { continue };
            let mut q = *p;
            ui.horizontal(|ui| {
                ui.label(label);
                for c in &mut q {
                    ui.add(DragValue::new(c).speed(0.05));
                }
            });
            if q != *p {
                *v = Some(Vec3(q));
            }
        }
    }
    if look.camera != Some(CameraMode::Top) {
        slider(ui, "field of view °", &mut look.fov, 5.0..=120.0, 45.0);
    }
    slider(ui, "fog", &mut look.fog, 0.0..=1.0, 0.0);
    let mut b = look.world_box.unwrap_or(false);
    if ui.checkbox(&mut b, "world box").changed() {
        look.world_box = Some(b);
    }
}

/// The colour modes the panel offers: every one, but `species` only for a recording with
/// species.
fn colour_modes(species: bool) -> Vec<ColorMode> {
    <ColorMode as clap::ValueEnum>::value_variants()
        .iter()
        .copied()
        .filter(|&m| species || m != ColorMode::Species)
        .collect()
}

/// Another 3D camera chosen: a fixed one starts where the frame was seen from; the others
/// place themselves (and the top camera has no field of view).
fn set_camera(look: &mut Look, info: &Info) {
    match look.camera {
        Some(CameraMode::Fixed) => {
            if let Some((e, t)) = info.seen.eye_target {
                look.eye = Some(Vec3(e));
                look.target = Some(Vec3(t));
            }
        }
        _ => {
            look.eye = None;
            look.target = None;
        }
    }
    if look.camera == Some(CameraMode::Top) {
        look.fov = None;
    } else if look.fov.is_none() {
        look.fov = Some(crate::render::camera::DEFAULT_FOV);
    }
    if look.camera != Some(CameraMode::Orbit) {
        look.orbit_speed = None;
    }
}
