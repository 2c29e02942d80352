//! The `forge` command: parses its arguments, gives a command that may open a GPU a private
//! runtime folder where none is set, and runs it (`forge::cli`).

use std::process::ExitCode;

fn main() -> ExitCode {
    // First the arguments: `--help`, `--version` and usage errors exit inside, and leave
    // nothing behind.
    // build.rs stamps the version with the commit.
    let cli = forge::cli::parse(env!("FORGE_VERSION"));
    // Mesa's Wayland probe complains (twice: once per backend) when XDG_RUNTIME_DIR is unset.
    // A command that may open a GPU gets a private one for its lifetime, made before any
    // thread starts (setting the environment is only sound while the process has a single
    // thread) and removed when it ends.
    let _runtime_dir = match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(v) if !v.is_empty() => None,
        _ if !cli.may_open_gpu() => None,
        _ => tempfile::Builder::new()
            .prefix("forge-runtime-")
            .tempdir()
            .ok()
            .inspect(|d| std::env::set_var("XDG_RUNTIME_DIR", d.path())),
    };
    forge::cli::main(cli)
}
