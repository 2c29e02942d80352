//! Numbers for people: SI prefixes and byte sizes in summaries.

/// `x` with an SI prefix: 1234567 → "1.23M".
pub fn si(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.2}G", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

/// A file size in KiB, MiB, GiB or TiB.
pub fn bytes(b: u64) -> String {
    if b >= 1 << 40 {
        format!("{:.2} TiB", b as f64 / (1u64 << 40) as f64)
    } else if b >= 1 << 30 {
        format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64)
    } else if b >= 1 << 20 {
        format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
    } else {
        format!("{:.1} KiB", b as f64 / 1024.0)
    }
}
