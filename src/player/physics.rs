//! The physics panel of a live run (`forge view SCENE`): every parameter of the scene a
//! timeline key may set (`crate::scene::timeline`), at its value for the step shown, and
//! whether each species is in the world. A change is sent to the solver, which makes it a key
//! at the step it is about to take; `s` saves the scene with those keys, and `forge simulate`
//! on that file writes what the session recorded.

use egui::{DragValue, Ui};

use super::input::Action;
use crate::scene::timeline::{self, BoidsField, HuntField, Target};
use crate::scene::{Model, Scene};

/// The keyable parameters of `s`: path and label.
fn parameters(s: &Scene) -> Vec<(String, String)> {
    let boids = |prefix: &str, label: &str| {
        BoidsField::ALL
            .iter()
            .map(|f| {
                (
                    format!("{prefix}.{}", f.name()),
                    format!("{label}{}", f.name()),
                )
            })
            .collect::<Vec<_>>()
    };
    match s.model {
        Model::Vicsek => vec![
            ("vicsek.noise".into(), "noise η".into()),
            ("vicsek.v0".into(), "speed v0".into()),
        ],
        Model::Boids if s.species.is_empty() => boids("boids", ""),
        Model::Boids => s
            .species
            .iter()
            .enumerate()
            .flat_map(|(i, sp)| {
                let prefix = format!("species[{i}].boids");
                let label = format!("{} ", sp.name);
                let mut v = boids(&prefix, &label);
                // The chase of a predator, the flight of a prey (where the scene has them).
                for h in HuntField::ALL {
                    let path = format!("{prefix}.{}", h.name());
                    if Target::Hunt(i, h).get(s).is_ok() {
                        v.push((path, format!("{label}{}", h.name())));
                    }
                }
                v
            })
            .collect(),
    }
}

/// The panel's part for a live run of `scene` showing `step`.
pub fn show(ui: &mut Ui, scene: &Scene, step: u64, out: &mut Vec<Action>) {
    ui.heading("Physics (live)");
    ui.label("a change is a key at the next step; s saves the scene");
    let tracks = timeline::tracks(scene);
    // Each species in or out of the world: an `add` or `remove` event at the next step.
    for (i, sp) in scene.species.iter().enumerate() {
        let path = format!("species[{i}].present");
        let there = tracks
            .iter()
            .find(|t| t.path == path)
            .is_none_or(|t| t.value(step) != 0.0);
        let mut v = there;
        ui.checkbox(&mut v, format!("{} in the world", sp.name));
        if v != there {
            out.push(Action::Physics(path, if v { 1.0 } else { 0.0 }));
        }
    }
    for (path, label) in parameters(scene) {
        let Ok(target) = Target::parse(&path) else {
            continue;
        };
        let Ok(base) = target.get(scene) else {
            continue;
        };
        let now = tracks
            .iter()
            .find(|t| t.path == path)
            .map_or(base, |t| t.value(step));
        let speed = (now.abs() * 0.01).max(0.001);
        ui.horizontal(|ui| {
            // A typed value is sent when it is committed (Enter, or the field left), never a
            // keystroke at a time ("3" of "3.7"); while it is typed, the field holds the value
            // it had when the typing began, so the run (a ramp, a key just taken) cannot
            // rewrite the text under the cursor.
            let id = ui.next_auto_id();
            let held = id.with("value when typing began");
            let shown = if ui.memory(|m| m.has_focus(id)) {
                ui.data_mut(|d| *d.get_temp_mut_or_insert_with(held, || now))
            } else {
                ui.data_mut(|d| d.remove::<f32>(held));
                now
            };
            let mut v = shown;
            ui.add(
                DragValue::new(&mut v)
                    .speed(speed)
                    .update_while_editing(false),
            );
            ui.label(label);
            if v != shown && v.is_finite() {
                out.push(Action::Physics(path, v as f64));
            }
        });
    }
    ui.label(format!("{} keys in the timeline", scene.timeline.len()));
}
