//! forge's messages in Python: the library says what it has to say (notes, warnings, errors it
//! recovered from) as `log` records, and this logger writes forge's own on standard error,
//! one line each, `forge: warning: …`. It writes to the file descriptor, not through
//! `sys.stderr`, so a message from a worker thread never waits for the GIL.

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
        if self.enabled(r.metadata()) {
            let level = match r.level() {
                Level::Error => "error: ",
                Level::Warn => "warning: ",
                _ => "",
            };
            let _ = writeln!(std::io::stderr().lock(), "forge: {level}{}", r.args());
        }
    }

    fn flush(&self) {}
}

/// Makes this logger the process's, unless another extension installed one first.
pub fn install() {
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(LevelFilter::Info);
    }
}
