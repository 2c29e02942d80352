//! The library's messages on standard error, as `forge` shows them: the library says what it
//! has to say as `log` records (its own, targets under `forge`; wgpu's and the drivers' stay
//! silent), and this logger prints each on a line — a warning behind `warning: `, an error
//! behind `error: `, a note as it is written.

use std::io::Write;

use log::{Level, LevelFilter, Log, Metadata, Record};

struct Stderr;

static LOGGER: Stderr = Stderr;

impl Log for Stderr {
    fn enabled(&self, m: &Metadata) -> bool {
        let t = m.target();
        m.level() <= Level::Info && (t == "forge" || t.starts_with("forge::"))
    }

    fn log(&self, r: &Record) {
        if !self.enabled(r.metadata()) {
            return;
        }
        let prefix = match r.level() {
            Level::Error => "error: ",
            Level::Warn => "warning: ",
            _ => "",
        };
        // A failed write (standard error closed) loses the line; the work goes on.
        let _ = writeln!(std::io::stderr().lock(), "{prefix}{}", r.args());
    }

    fn flush(&self) {}
}

/// Makes this logger the process's (once; a second call changes nothing).
pub fn install() {
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(LevelFilter::Info);
    }
}
