use std::process::ExitCode;

fn main() -> ExitCode {
    // Mesa's Wayland probe complains (twice: once per backend) when XDG_RUNTIME_DIR is unset.
    // Give the process a private one for its lifetime, before any thread starts (setting the
    // environment is only sound while the process has a single thread).
    let _runtime_dir = match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(v) if !v.is_empty() => None,
        _ => tempfile::Builder::new()
            .prefix("forge-runtime-")
            .tempdir()
            .ok()
            .inspect(|d| std::env::set_var("XDG_RUNTIME_DIR", d.path())),
    };
    forge::cli::main()
}
