//! Ready scenes, embedded in the binary: `forge simulate turbulence` finds them by name.

pub struct Builtin {
    pub name: &'static str,
    pub text: &'static str,
}

macro_rules! builtin {
    ($($name:literal),* $(,)?) => {
        &[$(Builtin { name: $name, text: include_str!(concat!("../../scenes/", $name, ".json")) }),*]
    };
}

pub const BUILTIN: &[Builtin] = builtin![
    "turbulence",
    "murmuration",
    "schooling",
    "plasma",
    "vicsek",
    "vicsek-bands",
    "cuplan",
    "murmuration3d",
    "shoal3d"
];

/// The scene `forge demo` (the README's main command) renders: flocks visible even at 10k agents.
pub const DEFAULT: &str = "murmuration";

pub fn find(name: &str) -> Option<&'static Builtin> {
    BUILTIN.iter().find(|b| b.name == name)
}

pub fn names() -> Vec<&'static str> {
    BUILTIN.iter().map(|b| b.name).collect()
}
