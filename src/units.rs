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

/// A parser's message in the user's words, not Rust's: "invalid type: floating point `1.5`,
/// expected i64" becomes "invalid type: the number `1.5`, expected a whole number".
pub fn types_in_words(msg: &str) -> String {
    const WORDS: &[(&str, &str)] = &[
        ("floating point `", "the number `"),
        ("expected i8", "expected a whole number"),
        ("expected i16", "expected a whole number"),
        ("expected i32", "expected a whole number"),
        ("expected i64", "expected a whole number"),
        ("expected isize", "expected a whole number"),
        ("expected u8", "expected a whole number, 0 or more"),
        ("expected u16", "expected a whole number, 0 or more"),
        ("expected u32", "expected a whole number, 0 or more"),
        ("expected u64", "expected a whole number, 0 or more"),
        ("expected usize", "expected a whole number, 0 or more"),
        ("expected f32", "expected a number"),
        ("expected f64", "expected a number"),
    ];
    let mut out = msg.to_string();
    for (rust, words) in WORDS {
        let mut from = 0;
        while let Some(i) = out[from..].find(rust).map(|i| i + from) {
            let end = i + rust.len();
            // A whole word only: "expected u8" is not the start of "expected u8x4".
            let word_end = rust.ends_with(|c: char| c.is_alphanumeric());
            if word_end
                && out[end..]
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
            {
                from = end;
                continue;
            }
            out.replace_range(i..end, words);
            from = i + words.len();
        }
    }
    out
}
