//! The progress bar every long command shows on a terminal (and hides otherwise).

use std::io::IsTerminal;

/// A bar over `len` `unit`s with rate and ETA; hidden when `quiet` or stderr is not a terminal.
pub fn bar(len: u64, quiet: bool, unit: &str) -> indicatif::ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    bar.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{{bar:40.cyan/blue}} {{pos}}/{{len}} {unit}  {{per_sec}}  ETA {{eta}}"
        ))
        .expect("valid template")
        .progress_chars("█▉▊▋▌▍▎▏ "),
    );
    // Cleared on every way out, an error's included, so a message is not printed after it.
    bar.with_finish(indicatif::ProgressFinish::AndClear)
}
