//! `scene.boids.flight`: each value checked (src/scene/flight.rs says what it is), the
//! defaults filled from the world and the speed band.

use super::super::flight::{Flight, FlightField, FlightFile};
use super::{any_f, fmt_num, BoidsParams, Ctx};

/// [`Flight`] from the section as written; None where it cannot run (an error is then
/// recorded): flight needs a 3D flock without species.
pub(super) fn resolve(
    cx: &mut Ctx,
    f: &FlightFile,
    dim: usize,
    world: &[f32; 3],
    b: &BoidsParams,
    species: bool,
) -> Option<Flight> {
    const AT: &str = "scene.boids.flight";
    if dim != 3 {
        cx.err(
            AT,
            format!("flight is 3D only (gravity and lift act along z), the scene's dim is {dim}"),
        );
        return None;
    }
    if species {
        cx.err(
            AT,
            "not with species: flight applies to a flock of one kind (leave scene.species \
             out, or flight out)",
        );
        return None;
    }
    let mut value = |field: FlightField, given: Option<f64>, default: f64| -> f32 {
        match given {
            Some(x) => key_value(cx, &format!("{AT}.{}", field.name()), field, x),
            None => default as f32,
        }
    };
    let band = (b.v_min as f64 + b.v_max as f64) * 0.5;
    let cruise = value(FlightField::CruiseSpeed, f.cruise_speed, band);
    let flight = Flight {
        cruise_speed: cruise,
        speed_time: value(FlightField::SpeedTime, f.speed_time, 1.0),
        gravity: value(FlightField::Gravity, f.gravity, 9.81),
        max_bank: value(FlightField::MaxBank, f.max_bank, 60.0),
        roost: [0.0; 2],
        roost_radius: value(
            FlightField::RoostRadius,
            f.roost_radius,
            world[0].min(world[1]) as f64 * 0.25,
        ),
        roost_height: value(
            FlightField::RoostHeight,
            f.roost_height,
            world[2] as f64 * 0.5,
        ),
        w_roost_h: value(FlightField::WRoostH, f.w_roost_h, 2.0),
        w_roost_v: value(FlightField::WRoostV, f.w_roost_v, 0.1),
    };
    let roost = roost(cx, f.roost.as_deref(), world);
    if cruise < b.v_min || cruise > b.v_max {
        cx.err(
            &format!("{AT}.cruise_speed"),
            format!(
                "must lie in the speed band [v_min, v_max] = [{}, {}], got {}",
                fmt_num(b.v_min as f64),
                fmt_num(b.v_max as f64),
                fmt_num(cruise as f64)
            ),
        );
    }
    Some(Flight { roost, ..flight })
}

/// `flight.roost`: the roost's centre [x, y], finite; the world's centre when left out.
fn roost(cx: &mut Ctx, given: Option<&[f64]>, world: &[f32; 3]) -> [f32; 2] {
    let centre = [world[0] * 0.5, world[1] * 0.5];
    let Some(r) = given else {
        return centre;
    };
    if r.len() != 2 {
        cx.err(
            "scene.boids.flight.roost",
            format!(
                "must be 2 numbers, the centre's x and y on the ground, got {}",
                r.len()
            ),
        );
        return centre;
    }
    let mut out = centre;
    for k in 0..2 {
        out[k] = any_f(
            cx,
            &format!("scene.boids.flight.roost[{k}]"),
            Some(r[k]),
            centre[k] as f64,
        );
    }
    out
}

/// A value of `field` given at `path` (the scene's section, a timeline key), checked; after an
/// error (recorded in `cx`) the value returned is never used.
pub(super) fn key_value(cx: &mut Ctx, path: &str, field: FlightField, x: f64) -> f32 {
    let v = any_f(cx, path, Some(x), 0.0);
    if x.is_finite() && !field.accepts(x) {
        cx.err(
            path,
            format!(
                "must be {}, got {}",
                field.rule().unwrap_or("finite"),
                fmt_num(x)
            ),
        );
    }
    v
}
