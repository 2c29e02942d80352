//! The bar below the image: the timeline (click or drag to scrub), the transport (play,
//! step, ends, speed, reverse, loop) and the HUD (frame, time, agents, polarization, frame
//! rate, what the player is doing).

use egui::{Color32, Sense, Slider, Ui};

use super::clock::{Clock, SPEEDS};
use super::input::Action;

/// What the HUD says about the frame shown.
#[derive(Clone, Debug, Default)]
pub struct Hud {
    pub frame: u64,
    pub step: u64,
    /// Simulated seconds.
    pub time: f64,
    pub agents: usize,
    pub polarization: f64,
    /// Frames drawn per second, lately.
    pub fps: f64,
    /// "playing", "paused", "settling", …
    pub state: &'static str,
}

impl Hud {
    /// The HUD in one line (the window's title carries it too).
    pub fn line(&self, len: u64) -> String {
        format!(
            "frame {} of {len} · t = {:.2} s (step {}) · {} agents · polarization {:.3} · {:.1} fps · {}",
            self.frame, self.time, self.step, self.agents, self.polarization, self.fps, self.state
        )
    }
}

/// The timeline's height, in points.
const TIMELINE_PT: f32 = 18.0;

pub fn show(ui: &mut Ui, clock: &Clock, live: bool, hud: &Hud, out: &mut Vec<Action>) {
    timeline(ui, clock, live, out);
    ui.horizontal(|ui| {
        if ui
            .button("|<")
            .on_hover_text("first frame (Home)")
            .clicked()
        {
            out.push(Action::Start);
        }
        if ui.button("<").on_hover_text("one frame back (←)").clicked() {
            out.push(Action::Step(-1));
        }
        let play = if clock.playing { "pause" } else { "play" };
        if ui
            .button(play)
            .on_hover_text("play / pause (space)")
            .clicked()
        {
            out.push(Action::Toggle);
        }
        if ui.button(">").on_hover_text("one frame on (→)").clicked() {
            out.push(Action::Step(1));
        }
        if ui.button(">|").on_hover_text("last frame (End)").clicked() {
            out.push(Action::End);
        }
        let mut speed = clock.speed;
        let s = Slider::new(&mut speed, SPEEDS)
            .logarithmic(true)
            .text("speed")
            .max_decimals(2);
        if ui.add(s).changed() {
            out.push(Action::Speed(speed));
        }
        let mut rev = clock.reverse;
        if !live && ui.checkbox(&mut rev, "reverse (r)").changed() {
            out.push(Action::ToggleReverse);
        }
        let mut looping = clock.looping;
        if !live && ui.checkbox(&mut looping, "loop (l)").changed() {
            out.push(Action::ToggleLoop);
        }
    });
    ui.label(hud.line(clock.len));
}

/// The timeline: the whole recording across the bar's width; a click or drag moves there
/// (not in a live run, whose frames are not kept).
fn timeline(ui: &mut Ui, clock: &Clock, live: bool, out: &mut Vec<Action>) {
    let width = ui.available_width();
    let sense = if live {
        Sense::hover()
    } else {
        Sense::click_and_drag()
    };
    let (rect, resp) = ui.allocate_exact_size(egui::vec2(width, TIMELINE_PT), sense);
    let last = clock.len.saturating_sub(1).max(1) as f32;
    if let Some(p) = resp.interact_pointer_pos() {
        if resp.clicked() || resp.dragged() {
            let t = ((p.x - rect.left()) / rect.width()).clamp(0.0, 1.0);
            out.push(Action::Seek((t * last).round() as u64));
        }
    }
    let painter = ui.painter_at(rect);
    painter.rect_filled(rect, 3.0, Color32::from_gray(40));
    let x = rect.left() + rect.width() * (clock.frame() as f32 / last).min(1.0);
    let done = egui::Rect::from_min_max(rect.min, egui::pos2(x, rect.max.y));
    painter.rect_filled(done, 3.0, Color32::from_rgb(70, 90, 140));
    painter.line_segment(
        [egui::pos2(x, rect.top()), egui::pos2(x, rect.bottom())],
        egui::Stroke::new(2.0, Color32::WHITE),
    );
}
