//! Frames out to FFmpeg: an FFmpeg child reads raw Y'CbCr on stdin (yuv420p for H.264, 10-bit
//! for H.265, AV1 and ProRes: see `codec.rs`) and writes an MP4 or MOV with BT.709 tags.
//!
//! `ffmpeg-sidecar` builds and spawns the child and parses its log; forge feeds stdin from a
//! writer thread, so encoding overlaps rendering.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use ffmpeg_sidecar::child::FfmpegChild;
use ffmpeg_sidecar::command::FfmpegCommand;
use ffmpeg_sidecar::event::FfmpegEvent;
use ffmpeg_sidecar::log_parser::FfmpegLogParser;

use super::watch::{
    encoder_timeout, file_stamp, program_failed, Progress, Waited, ENCODER_TIMEOUT_S,
};
use crate::process::{self, Failed, Limit};

/// Lines of FFmpeg's stderr kept for error messages.
const STDERR_TAIL: usize = 15;

/// Colour tags, on the raw input and again on the output: limited ("tv") range, BT.709.
const COLOUR_IN: &str = "-color_range tv -colorspace bt709 -color_primaries bt709 -color_trc bt709";
const COLOUR_OUT: &str =
    "-colorspace bt709 -color_primaries bt709 -color_trc bt709 -color_range tv";

/// The FFmpeg program: `FORGE_FFMPEG` if set, else `ffmpeg` on the PATH.
pub fn ffmpeg_program() -> PathBuf {
    std::env::var_os("FORGE_FFMPEG")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("ffmpeg"))
}

fn ffmpeg_missing(prog: &Path) -> anyhow::Error {
    anyhow!(
        "FFmpeg not found ({}): install it (Debian/Ubuntu: apt-get install ffmpeg; macOS: brew install ffmpeg), set FORGE_FFMPEG to its path, or write PNG frames with --png DIR",
        prog.display()
    )
}

/// Why `prog` could not be started. Flattened to text on purpose: `main` treats an
/// `io::Error` of kind BrokenPipe in the chain as a quiet exit.
fn start_error(prog: &Path, e: &std::io::Error) -> anyhow::Error {
    if e.kind() == std::io::ErrorKind::NotFound {
        ffmpeg_missing(prog)
    } else {
        anyhow!("cannot start FFmpeg ({}): {e}", prog.display())
    }
}

/// Checks that FFmpeg runs (`ffmpeg -version` prints its version, within
/// `FORGE_ENCODER_TIMEOUT`) and that `FORGE_ENCODER_TIMEOUT` is valid, before any slow work
/// starts. A program that fails says why: its status and the last lines it printed.
pub fn check() -> Result<()> {
    // The programs that answered: a command checks before its slow work and again where it
    // resolves the codec, and each answer is a program start.
    static ANSWERED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let timeout = encoder_timeout()?;
    let prog = ffmpeg_program();
    let answered = ANSWERED.lock().unwrap_or_else(|e| e.into_inner());
    if answered.contains(&prog) {
        return Ok(());
    }
    drop(answered);
    let what = format!("FFmpeg ({})", prog.display());
    let mut cmd = Command::new(&prog);
    cmd.arg("-version");
    let out = process::run(&mut cmd, &Limit::within(timeout)).map_err(|e| match e {
        Failed::Start(io) => start_error(&prog, &io),
        e => program_failed(e, &what, "answer `ffmpeg -version`"),
    })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let versioned = text
        .lines()
        .any(|l| ffmpeg_sidecar::log_parser::try_parse_version(l).is_some());
    if out.status.success() && versioned {
        ANSWERED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(prog);
        return Ok(());
    }
    let mut msg = if out.status.success() {
        format!("{what} does not run: `ffmpeg -version` printed no FFmpeg version")
    } else {
        format!(
            "{what} does not run: `ffmpeg -version` failed ({})",
            out.status
        )
    };
    for l in out.stderr_tail(4) {
        msg.push_str("\n    ");
        msg.push_str(&l);
    }
    bail!(msg)
}

pub use super::encoding::Encoding;

/// FFmpeg's niceness beside a software renderer. lavapipe's threads work in lock step, each
/// pass waiting for the slowest: an encoder thread that preempts one stalls the others. At a
/// lower priority the encoder takes what the renderer leaves (a 720p 2000-agent film on two
/// cores: 13.2–13.8 s instead of 14.4–14.8 s end to end, two runs each, 2026-12-01).
pub const YIELDING_NICE: i32 = 10;

/// Makes the child `cmd` starts run at niceness [`YIELDING_NICE`] (its threads inherit it).
fn yield_cpu(cmd: &mut Command) {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: the hook only makes the nice(2) system call between fork and exec (no
        // allocation, no lock); its failure leaves the priority as it was, which is harmless.
        unsafe {
            cmd.pre_exec(|| {
                let _ = rustix::process::nice(YIELDING_NICE);
                Ok(())
            });
        }
    }
    #[cfg(not(unix))]
    let _ = cmd;
}

/// Makes the child `cmd` starts, FFmpeg, take its memory in ordinary pages, not transparent
/// huge pages (Linux; elsewhere nothing). libx264 asks for huge pages for its large buffers,
/// and the kernel zeroes each such page, 2 MiB, as it is first touched: `perf record` of x264
/// encoding a 61-frame 1080p clip through a pipe put 2-10 ms of CPU a frame on that zeroing,
/// and about 0.2 ms with ordinary pages. The video is the same bytes either way.
fn small_pages(cmd: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: the hook only makes the prctl(2) system call between fork and exec (no
        // allocation, no lock); its failure leaves the setting as it was, which is harmless.
        unsafe {
            cmd.pre_exec(|| {
                let _ = rustix::thread::disable_transparent_huge_pages(true);
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}

/// The encoder's command line: raw Y'CbCr on stdin, an MP4 (or MOV) at `out`, with `tags` in its
/// metadata (custom keys kept by `-movflags +use_metadata_tags`; readable with ffprobe).
fn command(
    prog: &Path,
    out: &Path,
    width: u32,
    height: u32,
    fps: u32,
    enc: &Encoding,
    tags: &[(String, String)],
) -> FfmpegCommand {
    // Not `FfmpegCommand::new_with_path`: it puts `-loglevel level+info` first, for sidecar's
    // full log parsing; forge asks for errors only.
    let mut cmd = FfmpegCommand::from(Command::new(prog));
    cmd.hide_banner()
        .args(["-loglevel", "error", "-nostdin"])
        .overwrite();
    let (pix_in, pix_out) = enc.pix_fmts();
    cmd.format("rawvideo")
        .pix_fmt(pix_in)
        .size(width, height)
        .args(["-r", &fps.to_string()]);
    if enc.alpha {
        // sRGB-encoded RGB with alpha: the matrix and range are for the output only.
        cmd.args(["-color_primaries", "bt709", "-color_trc", "bt709"]);
    } else {
        cmd.args(COLOUR_IN.split(' '));
    }
    cmd.input("-");
    cmd.codec_video(&enc.encoder);
    cmd.args(enc.encoder_args());
    cmd.pix_fmt(pix_out).args(COLOUR_OUT.split(' '));
    for (k, v) in tags {
        cmd.args(["-metadata", &format!("{k}={v}")]);
    }
    let movflags = if tags.is_empty() {
        "+faststart"
    } else {
        "+faststart+use_metadata_tags"
    };
    cmd.args(["-movflags", movflags])
        .format(enc.container.name())
        .output(out);
    // Sidecar's child wants all three pipes; stdout carries nothing (the MP4 goes to a file).
    cmd.as_inner_mut()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Reads FFmpeg's stderr to the end through sidecar's log parser, keeping the last lines.
///
/// The parser is driven here rather than through `FfmpegChild::iter`: that iterator never ends
/// if the parser fails on a line (it keeps a sender to its own channel), which would hang
/// `finish`.
fn log_tail(stderr: impl Read) -> VecDeque<String> {
    let mut parser = FfmpegLogParser::new(stderr);
    let mut tail = VecDeque::new();
    loop {
        let line = match parser.parse_next_event() {
            Ok(FfmpegEvent::LogEOF) => break,
            Ok(event) => match log_line(event) {
                Some(line) => line,
                None => continue,
            },
            Err(e) if e.is::<std::io::Error>() => break,
            // A line the parser could not place; it is in the message.
            Err(e) => e.to_string(),
        };
        if line.is_empty() {
            continue;
        }
        tail.push_back(line);
        if tail.len() > STDERR_TAIL {
            tail.pop_front();
        }
    }
    tail
}

/// The line of FFmpeg's log an event came from; none for progress and output data.
fn log_line(event: FfmpegEvent) -> Option<String> {
    Some(match event {
        FfmpegEvent::Log(_, line) | FfmpegEvent::Error(line) => line,
        FfmpegEvent::ParsedStreamMapping(line) => line,
        FfmpegEvent::ParsedVersion(v) => v.raw_log_message,
        FfmpegEvent::ParsedConfiguration(c) => c.raw_log_message,
        FfmpegEvent::ParsedInput(i) => i.raw_log_message,
        FfmpegEvent::ParsedOutput(o) => o.raw_log_message,
        FfmpegEvent::ParsedInputStream(s) | FfmpegEvent::ParsedOutputStream(s) => s.raw_log_message,
        FfmpegEvent::ParsedDuration(d) => d.raw_log_message,
        _ => return None,
    })
}

/// Bytes written to the encoder at a time: progress is counted per chunk.
const CHUNK: usize = 1 << 16;

/// While waiting on the encoder, how often SIGINT/SIGTERM are looked for.
const SIGNAL_POLL: Duration = Duration::from_millis(100);

/// An FFmpeg child reading raw yuv420p on stdin; a writer thread feeds it, so encoding
/// overlaps rendering.
///
/// An encoder that stalls fails the render instead of hanging it: when it has accepted no
/// input (and, once the input has ended, changed its output file not at all) for
/// [`encoder_timeout`], forge stops it and says so. One that exits 0 without a playable MP4
/// (empty, no index, cut short) fails too.
pub struct FfmpegSink {
    tx: Option<SyncSender<Vec<u8>>>,
    free: Receiver<Vec<u8>>,
    writer: Option<JoinHandle<std::io::Result<()>>>,
    child: FfmpegChild,
    log: Option<Receiver<VecDeque<String>>>,
    sent: u64,
    progress: Progress,
    timeout: Duration,
    prog: PathBuf,
    /// The file FFmpeg writes.
    out: PathBuf,
    /// The output as the user named it (for messages).
    shown: PathBuf,
}

impl FfmpegSink {
    pub fn start(
        out: &Path,
        width: u32,
        height: u32,
        fps: u32,
        enc: &Encoding,
    ) -> Result<FfmpegSink> {
        Self::start_tagged(out, width, height, fps, enc, &[], false)
    }

    /// [`FfmpegSink::start`], with `tags` written into the MP4's metadata (a chunk's manifest);
    /// `yielding`: FFmpeg runs at a lower priority (nice [`YIELDING_NICE`]), for a renderer
    /// that shares the CPUs with it (a software driver).
    pub fn start_tagged(
        out: &Path,
        width: u32,
        height: u32,
        fps: u32,
        enc: &Encoding,
        tags: &[(String, String)],
        yielding: bool,
    ) -> Result<FfmpegSink> {
        let timeout = encoder_timeout()?;
        let prog = ffmpeg_program();
        let mut cmd = command(&prog, out, width, height, fps, enc, tags);
        if yielding {
            yield_cpu(cmd.as_inner_mut());
        }
        small_pages(cmd.as_inner_mut());
        let mut child = cmd.spawn().map_err(|e| start_error(&prog, &e))?;
        drop(child.take_stdout()); // unused: the MP4 goes to a file
        let stderr = child.take_stderr().expect("piped");
        let mut stdin = child.take_stdin().expect("piped");
        let (tx, rx) = sync_channel::<Vec<u8>>(2);
        let (give, free) = sync_channel::<Vec<u8>>(4);
        let (log_tx, log) = sync_channel(1);
        // Should a thread not start, FFmpeg reads the end of its input and exits by itself.
        std::thread::Builder::new()
            .name("forge ffmpeg log".into())
            .spawn(move || {
                let _ = log_tx.send(log_tail(stderr));
            })
            .context("cannot start the FFmpeg log thread")?;
        let progress = Progress::new();
        let fed = progress.clone();
        let writer = std::thread::Builder::new()
            .name("forge ffmpeg writer".into())
            .spawn(move || -> std::io::Result<()> {
                let r = (|| {
                    for buf in rx {
                        for chunk in buf.chunks(CHUNK) {
                            stdin.write_all(chunk)?;
                            fed.update(|f| f.last = Instant::now());
                        }
                        let _ = give.try_send(buf);
                    }
                    stdin.flush()
                })();
                drop(stdin); // FFmpeg sees the end of its input
                fed.update(|f| f.ended = true);
                r
            })
            .context("cannot start the FFmpeg writer thread")?;
        Ok(FfmpegSink {
            tx: Some(tx),
            free,
            writer: Some(writer),
            child,
            log: Some(log),
            sent: 0,
            progress,
            timeout,
            prog,
            out: out.to_path_buf(),
            shown: out.to_path_buf(),
        })
    }

    /// Names the output as the user knows it in messages (FFmpeg may write a temporary file).
    pub fn shown_as(mut self, path: &Path) -> FfmpegSink {
        self.shown = path.to_path_buf();
        self
    }

    pub fn push(&mut self, frame: &[u8]) -> Result<()> {
        let mut buf = self.free.try_recv().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(frame);
        loop {
            let since = self.progress.last();
            let Some(tx) = self.tx.as_ref() else {
                return Err(self.failure());
            };
            match tx.try_send(buf) {
                Ok(()) => break,
                Err(TrySendError::Disconnected(_)) => return Err(self.failure()),
                Err(TrySendError::Full(b)) => {
                    buf = b;
                    self.await_progress(since)?;
                }
            }
        }
        self.sent += 1;
        Ok(())
    }

    /// The last lines FFmpeg logged (once it has exited its stderr ends; a process it left
    /// behind holding stderr open is not waited for).
    fn log_tail(&mut self) -> VecDeque<String> {
        self.log
            .take()
            .and_then(|r| r.recv_timeout(Duration::from_secs(2)).ok())
            .unwrap_or_default()
    }

    fn encoder(&self) -> String {
        format!("the encoder FFmpeg ({})", self.prog.display())
    }

    /// The encoder made no progress for the timeout: stop it, explain.
    fn stalled(&mut self, what: &str) -> anyhow::Error {
        self.tx = None;
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The writer may stay blocked on a pipe that a child of the encoder holds open: it
        // is not waited for (it ends with forge).
        self.writer = None;
        let secs = self.timeout.as_secs_f64();
        anyhow!(
            "{} {what} for {secs} s (after {} frame{}, writing {}): stopped it. \
             A slow encoder may need more: set FORGE_ENCODER_TIMEOUT (seconds, default {ENCODER_TIMEOUT_S})",
            self.encoder(),
            self.sent,
            if self.sent == 1 { "" } else { "s" },
            self.shown.display()
        )
    }

    /// Waits until the writer gets more input into the encoder than it had at `since` (or
    /// ends); fails if the encoder stalls or a signal arrives (FFmpeg is then stopped on drop).
    fn await_progress(&mut self, since: Instant) -> Result<()> {
        loop {
            crate::signal::check()?;
            match self.progress.wait(since, self.timeout, SIGNAL_POLL) {
                Waited::Progressed => return Ok(()),
                Waited::Stalled => return Err(self.stalled("accepted no input")),
                Waited::Pending => {}
            }
        }
    }

    /// Waits for the encoder to exit, as long as it makes progress (its output file changes);
    /// `None` if it made none for the timeout. A signal stops the wait (and, on drop, FFmpeg).
    fn wait_exit(&mut self) -> Result<Option<std::process::ExitStatus>> {
        let mut stamp = file_stamp(&self.out);
        let mut last = Instant::now();
        loop {
            crate::signal::check()?;
            if let Some(s) = self
                .child
                .as_inner_mut()
                .try_wait()
                .context("waiting for FFmpeg")?
            {
                return Ok(Some(s));
            }
            let now = file_stamp(&self.out);
            if now != stamp {
                stamp = now;
                last = Instant::now();
            } else if last.elapsed() >= self.timeout {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// FFmpeg stopped reading: wait for it and explain, with the tail of its stderr.
    fn failure(&mut self) -> anyhow::Error {
        self.tx = None;
        let write_err = self
            .writer
            .take()
            .and_then(|w| w.join().ok())
            .and_then(|r| r.err());
        let status = match self.wait_exit() {
            Ok(Some(s)) => Some(s),
            Ok(None) => return self.stalled("stopped reading its input but did not exit"),
            Err(e) => return e,
        };
        let tail = self.log_tail();
        let mut msg = format!(
            "FFmpeg stopped after {} frame{} ({})",
            self.sent,
            if self.sent == 1 { "" } else { "s" },
            match status {
                Some(s) => s.to_string(),
                None => "status unknown".into(),
            }
        );
        if let Some(e) = write_err {
            // Not an io::Error in the chain: a broken pipe here is a failure, not a quiet exit.
            msg.push_str(&format!("; writing to it: {e}"));
        }
        if tail.is_empty() {
            msg.push_str("; it printed nothing");
        } else {
            msg.push_str("; its last output:");
            for l in tail {
                msg.push_str("\n    ");
                msg.push_str(&l);
            }
        }
        anyhow!(msg)
    }

    /// Ends the stream and waits for FFmpeg to write the file; checks that it is a playable
    /// MP4.
    pub fn finish(mut self) -> Result<()> {
        self.tx = None;
        // The writer hands over what is queued, then closes FFmpeg's input.
        loop {
            let since = self.progress.last();
            if self.progress.lock().ended {
                break;
            }
            self.await_progress(since)?;
        }
        let w = self.writer.take().map(|w| w.join());
        let failed_write = !matches!(w, Some(Ok(Ok(()))));
        let Some(status) = self.wait_exit()? else {
            return Err(self.stalled("wrote nothing more after its input ended"));
        };
        if failed_write || !status.success() {
            let mut msg = format!("FFmpeg failed ({status}) after {} frames", self.sent);
            for l in self.log_tail() {
                msg.push_str("\n    ");
                msg.push_str(&l);
            }
            bail!(msg);
        }
        let frames = |n: u64| format!("{n} frame{}", if n == 1 { "" } else { "s" });
        let problem = match super::mp4::check(&self.out) {
            Err(why) => Some(format!("is not a playable MP4: {why}")),
            Ok(s) => match s.frames {
                Some(n) if n == self.sent => None,
                Some(n) => Some(format!(
                    "holds {} of the {} sent to it",
                    frames(n),
                    self.sent
                )),
                None => Some("has no video track with a sample table".into()),
            },
        };
        if let Some(why) = problem {
            let mut msg = format!(
                "{} exited 0 after {} but {} {why}",
                self.encoder(),
                frames(self.sent),
                self.shown.display()
            );
            for l in self.log_tail() {
                msg.push_str("\n    ");
                msg.push_str(&l);
            }
            bail!(msg);
        }
        Ok(())
    }
}

impl Drop for FfmpegSink {
    fn drop(&mut self) {
        // An abandoned render: stop FFmpeg rather than leave it running.
        self.tx = None;
        if self.writer.is_some() || !self.progress.lock().ended {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl super::sink::FrameSink for FfmpegSink {
    fn frame(&mut self, bytes: &[u8]) -> Result<()> {
        self.push(bytes)
    }
    fn finish(self: Box<Self>) -> Result<()> {
        FfmpegSink::finish(*self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(encoder: &str) -> Vec<String> {
        let enc = Encoding {
            encoder: encoder.into(),
            ..Encoding::h264()
        };
        with(&enc)
    }

    fn with(enc: &Encoding) -> Vec<String> {
        command(
            Path::new("ffmpeg"),
            Path::new("out.mp4"),
            160,
            90,
            30,
            enc,
            &[],
        )
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
    }

    /// The command line is exactly the one forge passed FFmpeg before it used sidecar.
    #[test]
    fn command_line() {
        let head = "-hide_banner -loglevel error -nostdin -y -f rawvideo -pix_fmt yuv420p \
                    -s 160x90 -r 30 -color_range tv -colorspace bt709 -color_primaries bt709 \
                    -color_trc bt709 -i -";
        let tail = "-pix_fmt yuv420p -colorspace bt709 -color_primaries bt709 -color_trc bt709 \
                    -color_range tv -movflags +faststart -f mp4 out.mp4";
        assert_eq!(
            args("libx264").join(" "),
            format!(
                "{head} -c:v libx264 -crf 18 -preset veryfast -x264-params \
                 colorprim=bt709:transfer=bt709:colormatrix=bt709:range=tv {tail}"
            )
        );
        let enc = Encoding {
            encoder: "h264_nvenc".into(),
            crf: None,
            preset: None,
            ..Encoding::h264()
        };
        assert_eq!(
            with(&enc).join(" "),
            format!("{head} -c:v h264_nvenc {tail}")
        );
    }

    /// 10-bit H.265 in MP4: the raw input and the stream are yuv420p10le, tagged hvc1.
    #[test]
    fn ten_bit_hevc_and_prores_command_lines() {
        let hevc = Encoding {
            encoder: "libx265".into(),
            codec: "hevc".into(),
            format: crate::render::YuvFormat::Yuv420p10,
            crf: Some(20),
            preset: Some("medium".into()),
            ..Encoding::h264()
        };
        let line = with(&hevc).join(" ");
        assert!(line.contains("-f rawvideo -pix_fmt yuv420p10le"), "{line}");
        assert!(
            line.contains("-c:v libx265 -crf 20 -preset medium -x265-params colorprim=bt709"),
            "{line}"
        );
        assert!(line.contains("-tag:v hvc1 -pix_fmt yuv420p10le"), "{line}");
        let prores = Encoding {
            encoder: "prores_ks".into(),
            codec: "prores".into(),
            format: crate::render::YuvFormat::Yuv422p10,
            container: super::super::encoding::Container::Mov,
            crf: None,
            preset: None,
            alpha: false,
        };
        let line = with(&prores).join(" ");
        assert!(
            line.contains("-c:v prores_ks -profile:v 3 -vendor apl0 -pix_fmt yuv422p10le"),
            "{line}"
        );
        assert!(line.ends_with("-f mov out.mp4"), "{line}");
        // With alpha: 16-bit RGBA in, FFmpeg's BT.709 conversion, 4444 with a 16-bit alpha.
        let alpha = prores.with_alpha("--alpha").unwrap();
        let line = with(&alpha).join(" ");
        assert!(line.contains("-f rawvideo -pix_fmt rgba64le"), "{line}");
        assert!(
            line.contains(
                "-profile:v 4 -vendor apl0 -alpha_bits 16 -vf scale=out_color_matrix=bt709"
            ),
            "{line}"
        );
        assert!(
            line.contains("-pix_fmt yuva444p10le -colorspace bt709"),
            "{line}"
        );
    }

    /// The tail keeps the last lines, including one the parser cannot place, and ends at EOF.
    #[test]
    fn tail_of_the_log() {
        let mut log = String::new();
        for i in 0..20 {
            log.push_str(&format!("line {i}\n"));
        }
        log.push_str("Stream #0:0: Video: rawvideo, yuv420p, 160x90, 30 fps\nlast words");
        let tail: Vec<String> = log_tail(log.as_bytes()).into();
        assert_eq!(tail.len(), STDERR_TAIL);
        assert_eq!(tail[0], "line 7");
        assert!(tail[STDERR_TAIL - 2].contains("Stream #0:0"), "{tail:?}");
        assert_eq!(tail[STDERR_TAIL - 1], "last words");
    }
}
