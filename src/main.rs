use std::process::ExitCode;

fn main() -> ExitCode {
    forge::cli::main()
}
