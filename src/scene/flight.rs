//! `boids.flight`: simplified flight aerodynamics and a roost, after StarDisplay
//! (Hildenbrandt, Carere & Hemelrijk, "Self-organized aerial displays of thousands of
//! starlings: a model", Behavioral Ecology 21:1349, 2010). The boids' three rules give what a
//! bird wants; the flight decides what it can do: it flies at a cruise speed, its lift grows
//! with the square of its speed and acts along its body's up axis, it turns by banking (rolling
//! so that part of the lift points into the turn), gravity pulls it down, and a roost with a
//! preferred height draws it back. The step's arithmetic is `flight` in src/sim/flight.rs (and
//! kernels/forge_math.h); the guide's scenes page gives the equations.

use serde::{Deserialize, Serialize};

/// `boids.flight`, as written: every field optional, unknown ones rejected (src/scene/file.rs
/// holds the rest of the file's schema; the section lives here so that its resolution,
/// src/scene/resolve/flight.rs, imports no file of the schema's).
#[derive(Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct FlightFile {
    pub(super) cruise_speed: Option<f64>,
    pub(super) speed_time: Option<f64>,
    pub(super) gravity: Option<f64>,
    pub(super) max_bank: Option<f64>,
    pub(super) roost: Option<Vec<f64>>,
    pub(super) roost_radius: Option<f64>,
    pub(super) roost_height: Option<f64>,
    pub(super) w_roost_h: Option<f64>,
    pub(super) w_roost_v: Option<f64>,
}

/// The resolved `boids.flight` section (3D boids without species), every value checked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flight {
    /// v₀: the speed a bird flies at when nothing pulls it faster or slower, in world units
    /// per time unit; its lift at v₀ carries its weight exactly.
    pub cruise_speed: f32,
    /// τ: the time a bird's speed takes to relax towards v₀ (its thrust, (v₀ − v)/τ).
    pub speed_time: f32,
    /// g: gravity's acceleration, in world units per time unit squared (downward, −z).
    pub gravity: f32,
    /// β_max: the steepest bank, in degrees, in (0, 90).
    pub max_bank: f32,
    /// The roost's centre on the ground (x, y).
    pub roost: [f32; 2],
    /// Within this horizontal distance of the roost's centre its pull fades to nothing at
    /// the centre; beyond it, the pull is `w_roost_h` whatever the distance.
    pub roost_radius: f32,
    /// The height (z) the birds prefer over the roost.
    pub roost_height: f32,
    /// The roost's horizontal pull (an acceleration).
    pub w_roost_h: f32,
    /// The roost's vertical pull per unit of height away from `roost_height`.
    pub w_roost_v: f32,
}

/// A flight parameter a timeline key may set (`boids.flight.<name>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlightField {
    CruiseSpeed,
    SpeedTime,
    Gravity,
    MaxBank,
    RoostRadius,
    RoostHeight,
    WRoostH,
    WRoostV,
}

impl FlightField {
    pub const ALL: [FlightField; 8] = [
        FlightField::CruiseSpeed,
        FlightField::SpeedTime,
        FlightField::Gravity,
        FlightField::MaxBank,
        FlightField::RoostRadius,
        FlightField::RoostHeight,
        FlightField::WRoostH,
        FlightField::WRoostV,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FlightField::CruiseSpeed => "cruise_speed",
            FlightField::SpeedTime => "speed_time",
            FlightField::Gravity => "gravity",
            FlightField::MaxBank => "max_bank",
            FlightField::RoostRadius => "roost_radius",
            FlightField::RoostHeight => "roost_height",
            FlightField::WRoostH => "w_roost_h",
            FlightField::WRoostV => "w_roost_v",
        }
    }

    pub fn get(self, f: &Flight) -> f32 {
        match self {
            FlightField::CruiseSpeed => f.cruise_speed,
            FlightField::SpeedTime => f.speed_time,
            FlightField::Gravity => f.gravity,
            FlightField::MaxBank => f.max_bank,
            FlightField::RoostRadius => f.roost_radius,
            FlightField::RoostHeight => f.roost_height,
            FlightField::WRoostH => f.w_roost_h,
            FlightField::WRoostV => f.w_roost_v,
        }
    }

    pub fn slot(self, f: &mut Flight) -> &mut f32 {
        match self {
            FlightField::CruiseSpeed => &mut f.cruise_speed,
            FlightField::SpeedTime => &mut f.speed_time,
            FlightField::Gravity => &mut f.gravity,
            FlightField::MaxBank => &mut f.max_bank,
            FlightField::RoostRadius => &mut f.roost_radius,
            FlightField::RoostHeight => &mut f.roost_height,
            FlightField::WRoostH => &mut f.w_roost_h,
            FlightField::WRoostV => &mut f.w_roost_v,
        }
    }

    /// What values it takes, as a message says it; None where any finite number will do.
    pub fn rule(self) -> Option<&'static str> {
        match self {
            FlightField::CruiseSpeed | FlightField::SpeedTime | FlightField::Gravity => Some("> 0"),
            FlightField::RoostRadius => Some("> 0"),
            FlightField::MaxBank => Some("in (0, 90) degrees"),
            FlightField::WRoostH | FlightField::WRoostV => Some(">= 0"),
            FlightField::RoostHeight => None,
        }
    }

    /// Whether `x` (finite) is a value it takes.
    pub fn accepts(self, x: f64) -> bool {
        match self {
            FlightField::CruiseSpeed
            | FlightField::SpeedTime
            | FlightField::Gravity
            | FlightField::RoostRadius => x > 0.0,
            FlightField::MaxBank => x > 0.0 && x < 90.0,
            FlightField::WRoostH | FlightField::WRoostV => x >= 0.0,
            FlightField::RoostHeight => true,
        }
    }
}
