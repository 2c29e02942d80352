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
    "vicsek-hysteresis",
    "cuplan",
    "murmuration3d",
    "shoal3d",
    "obstacles",
    "murmuration-falcon",
    "murmuration-story",
    "two-flocks"
];

/// The scene `forge demo` (the README's main command) renders: flocks visible even at 10k agents.
pub const DEFAULT: &str = "murmuration";

pub fn find(name: &str) -> Option<&'static Builtin> {
    BUILTIN.iter().find(|b| b.name == name)
}

pub fn names() -> Vec<&'static str> {
    BUILTIN.iter().map(|b| b.name).collect()
}

/// The built-in scene a misspelt `name` most likely meant (Jaro–Winkler similarity above 0.8,
/// as close as clap's own suggestions), for a "did you mean" in the error.
pub fn closest(name: &str) -> Option<&'static str> {
    let name = name.to_lowercase();
    BUILTIN
        .iter()
        .map(|b| (strsim::jaro_winkler(&name, b.name), b.name))
        .filter(|&(score, _)| score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, n)| n)
}
