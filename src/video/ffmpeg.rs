//! Frames out to FFmpeg: an FFmpeg child reads raw yuv420p on stdin (H.264, BT.709 tags).

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use anyhow::{anyhow, bail, Context, Result};

/// Lines of FFmpeg's stderr kept for error messages.
const STDERR_TAIL: usize = 15;

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

/// Checks that FFmpeg runs (`ffmpeg -version`), before any slow work starts.
pub fn check() -> Result<()> {
    let prog = ffmpeg_program();
    match Command::new(&prog)
        .arg("-version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
    {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => {
            let said = String::from_utf8_lossy(&o.stderr);
            let said = said.trim();
            bail!(
                "FFmpeg ({}) does not run: `-version` exited with {}{}",
                prog.display(),
                o.status,
                if said.is_empty() {
                    String::new()
                } else {
                    format!("; it printed: {said}")
                }
            )
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(ffmpeg_missing(&prog)),
        Err(e) => Err(anyhow!("cannot start FFmpeg ({}): {e}", prog.display())),
    }
}

/// Video encoding settings.
#[derive(Clone, Debug)]
pub struct Encoding {
    pub encoder: String,
    pub crf: u32,
    pub preset: String,
}

/// An FFmpeg child reading raw yuv420p on stdin; a writer thread feeds it, so encoding
/// overlaps rendering.
pub struct FfmpegSink {
    tx: Option<SyncSender<Vec<u8>>>,
    free: Receiver<Vec<u8>>,
    writer: Option<JoinHandle<std::io::Result<()>>>,
    child: Child,
    stderr: Option<JoinHandle<VecDeque<String>>>,
    sent: u64,
}

impl FfmpegSink {
    pub fn start(
        out: &Path,
        width: u32,
        height: u32,
        fps: u32,
        enc: &Encoding,
    ) -> Result<FfmpegSink> {
        let prog = ffmpeg_program();
        let mut cmd = Command::new(&prog);
        cmd.args(["-hide_banner", "-loglevel", "error", "-nostdin", "-y"]);
        cmd.args(["-f", "rawvideo", "-pix_fmt", "yuv420p"]);
        cmd.args(["-s", &format!("{width}x{height}"), "-r", &fps.to_string()]);
        cmd.args([
            "-color_range",
            "tv",
            "-colorspace",
            "bt709",
            "-color_primaries",
            "bt709",
            "-color_trc",
            "bt709",
        ]);
        cmd.args(["-i", "-"]);
        cmd.args(["-c:v", &enc.encoder]);
        if matches!(enc.encoder.as_str(), "libx264" | "libx265") {
            cmd.args(["-crf", &enc.crf.to_string(), "-preset", &enc.preset]);
        }
        if enc.encoder == "libx264" {
            cmd.args([
                "-x264-params",
                "colorprim=bt709:transfer=bt709:colormatrix=bt709:range=tv",
            ]);
        }
        cmd.args(["-pix_fmt", "yuv420p"]);
        cmd.args([
            "-colorspace",
            "bt709",
            "-color_primaries",
            "bt709",
            "-color_trc",
            "bt709",
            "-color_range",
            "tv",
        ]);
        cmd.args(["-movflags", "+faststart", "-f", "mp4"]);
        cmd.arg(out);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                ffmpeg_missing(&prog)
            } else {
                anyhow!("cannot start FFmpeg ({}): {e}", prog.display())
            }
        })?;
        let mut stderr = child.stderr.take().expect("piped");
        let stderr = std::thread::spawn(move || {
            let mut tail = VecDeque::new();
            let mut text = String::new();
            let mut buf = [0u8; 4096];
            while let Ok(k) = stderr.read(&mut buf) {
                if k == 0 {
                    break;
                }
                text.push_str(&String::from_utf8_lossy(&buf[..k]));
                while let Some(i) = text.find('\n') {
                    let line: String = text.drain(..=i).collect();
                    tail.push_back(line.trim_end().to_string());
                    if tail.len() > STDERR_TAIL {
                        tail.pop_front();
                    }
                }
            }
            if !text.trim().is_empty() {
                tail.push_back(text.trim_end().to_string());
            }
            tail
        });
        let mut stdin: ChildStdin = child.stdin.take().expect("piped");
        let (tx, rx) = sync_channel::<Vec<u8>>(2);
        let (give, free) = sync_channel::<Vec<u8>>(4);
        let writer = std::thread::Builder::new()
            .name("forge ffmpeg writer".into())
            .spawn(move || -> std::io::Result<()> {
                for buf in rx {
                    stdin.write_all(&buf)?;
                    let _ = give.try_send(buf);
                }
                stdin.flush()
            })
            .context("cannot start the FFmpeg writer thread")?;
        Ok(FfmpegSink {
            tx: Some(tx),
            free,
            writer: Some(writer),
            child,
            stderr: Some(stderr),
            sent: 0,
        })
    }

    pub fn push(&mut self, frame: &[u8]) -> Result<()> {
        let mut buf = self.free.try_recv().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(frame);
        let ok = self
            .tx
            .as_ref()
            .map(|t| t.send(buf).is_ok())
            .unwrap_or(false);
        if !ok {
            return Err(self.failure());
        }
        self.sent += 1;
        Ok(())
    }

    /// FFmpeg stopped reading: wait for it and explain, with the tail of its stderr.
    fn failure(&mut self) -> anyhow::Error {
        self.tx = None;
        let write_err = self
            .writer
            .take()
            .and_then(|w| w.join().ok())
            .and_then(|r| r.err());
        let status = self.child.wait().ok();
        let tail = self
            .stderr
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
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

    /// Ends the stream and waits for FFmpeg to write the file.
    pub fn finish(mut self) -> Result<()> {
        self.tx = None;
        let w = self.writer.take().map(|w| w.join());
        let failed_write = !matches!(w, Some(Ok(Ok(()))));
        let status = self.child.wait().context("waiting for FFmpeg")?;
        if failed_write || !status.success() {
            let tail = self
                .stderr
                .take()
                .and_then(|t| t.join().ok())
                .unwrap_or_default();
            let mut msg = format!("FFmpeg failed ({status}) after {} frames", self.sent);
            for l in tail {
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
        if self.writer.is_some() {
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
