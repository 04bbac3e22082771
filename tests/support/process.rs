//! The real binary as a child process, watched: its exit, its wall time and its peak
//! resident memory (VmHWM from /proc/PID/status, sampled until it exits); and tiny hostile
//! HTTP servers on 127.0.0.1 for it to meet. Everything is bounded in time.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_stormrig"))
}

/// Runs `cmd` to its end and requires exit `code`; a failure shows the command and the
/// child's standard error, so a test says why the binary refused instead of what it lacked.
pub fn exits(cmd: &mut Command, code: i32) -> Output {
    let out = cmd.output().expect("binary runs");
    assert_eq!(
        out.status.code(),
        Some(code),
        "{cmd:?}\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs `cmd` to its end and requires exit 0 (see [`exits`]).
pub fn succeed(cmd: &mut Command) -> Output {
    exits(cmd, 0)
}

/// A fresh, empty directory for one test.
pub fn tmp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("stormrig-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Writes `text` to `dir/file`, runs `check` on it and requires the refusal of a bad value:
/// exit 2, before any load, with a message naming `at` (`file:LINE`) and `field`.
pub fn check_refuses(dir: &Path, file: &str, text: &str, at: &str, field: &str) {
    let path = write(dir, file, text);
    let o = bin()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["check", path.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{text}\n{err}");
    assert!(err.contains(at), "{text}\nwanted {at}: {err}");
    assert!(err.contains(field), "{text}\nwanted {field}: {err}");
}

/// What a watched child did.
pub struct Watched {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub wall: Duration,
    /// Peak resident set (VmHWM), KiB; 0 if it could not be read.
    pub peak_rss_kib: u64,
}

impl Watched {
    pub fn code(&self) -> i32 {
        self.status.code().unwrap_or(-1)
    }
}

fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs `cmd` to its end (killed after `limit`), sampling its peak RSS every 20 ms.
pub fn watch(mut cmd: Command, limit: Duration) -> Watched {
    let start = Instant::now();
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    wait_watched(child, start, limit)
}

/// [`watch`] for a child already spawned (with piped output) at `start`.
pub fn wait_watched(mut child: Child, start: Instant, limit: Duration) -> Watched {
    let pid = child.id();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let mut peak = 0;
    let status = loop {
        if let Some(kib) = vm_hwm_kib(pid) {
            peak = peak.max(kib);
        }
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Watched {
        status,
        stdout: out_t.join().unwrap(),
        stderr: err_t.join().unwrap(),
        wall: start.elapsed(),
        peak_rss_kib: peak,
    }
}

/// What a child cost: its exit code, stderr, CPU time (user + system), wall time and
/// peak resident memory.
pub struct Cost {
    pub code: i32,
    pub stderr: String,
    pub cpu: Duration,
    pub wall: Duration,
    /// `ru_maxrss`: the child's largest resident set, in KiB (Linux).
    pub max_rss_kib: u64,
}

/// Runs `cmd` to its end and reads its own CPU time from wait4(2): a figure that other
/// load on the machine does not inflate, unlike the wall time.
// The child is reaped by wait4, which clippy cannot see.
#[allow(clippy::zombie_processes)]
pub fn cost(mut cmd: Command) -> Cost {
    let start = Instant::now();
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    let mut err = child.stderr.take().unwrap();
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let mut status = 0;
    // SAFETY: zeroed rusage is a valid value; wait4 on our own child's pid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert!(pid > 0, "wait4 failed");
    let wall = start.elapsed();
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Cost {
        code: if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            -1
        },
        stderr: err_t.join().unwrap(),
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        wall,
        max_rss_kib: usage.ru_maxrss.max(0) as u64,
    }
}

/// How a hostile server answers every request.
#[derive(Clone, Copy, Debug)]
pub enum Hostile {
    /// Bytes that are not HTTP, then close.
    Garbage,
    /// `200`, chunked, and chunks forever (until the peer leaves).
    EndlessChunked,
    /// `200` with a 100 MB body.
    HugeBody,
    /// `503` with `Retry-After: 99999999` (three years).
    YearsRetryAfter,
}

/// Starts a hostile server on 127.0.0.1 (a thread per connection; each ends when its
/// peer leaves). Returns its address.
pub fn hostile_server(kind: Hostile) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(s) = stream else { continue };
            std::thread::spawn(move || serve(s, kind));
        }
    });
    addr
}

fn read_head(s: &mut TcpStream) -> bool {
    let mut buf = Vec::new();
    let mut b = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut b) {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&b[..n]),
        }
        if buf.len() > 1 << 16 {
            return false;
        }
    }
    true
}

fn serve(mut s: TcpStream, kind: Hostile) {
    let _ = s.set_write_timeout(Some(Duration::from_secs(30)));
    let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
    while read_head(&mut s) {
        let chunk = vec![b'x'; 64 * 1024];
        let ok = match kind {
            Hostile::Garbage => {
                let _ = s.write_all(b"HTTP/1.1 2\x00\xff\xfe junk\r\n\x1b[31m\r\n\r\n\xc3\x28");
                false
            }
            Hostile::EndlessChunked => {
                if s
                    .write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
                    .is_err()
                {
                    return;
                }
                let mut framed = format!("{:x}\r\n", chunk.len()).into_bytes();
                framed.extend_from_slice(&chunk);
                framed.extend_from_slice(b"\r\n");
                while s.write_all(&framed).is_ok() {}
                false
            }
            Hostile::HugeBody => {
                let total: usize = 100 << 20;
                if s
                    .write_all(format!("HTTP/1.1 200 OK\r\ncontent-length: {total}\r\n\r\n").as_bytes())
                    .is_err()
                {
                    return;
                }
                let mut sent = 0;
                while sent < total {
                    let n = chunk.len().min(total - sent);
                    if s.write_all(&chunk[..n]).is_err() {
                        return;
                    }
                    sent += n;
                }
                true
            }
            Hostile::YearsRetryAfter => s
                .write_all(
                    b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 99999999\r\ncontent-length: 0\r\n\r\n",
                )
                .is_ok(),
        };
        if !ok {
            return;
        }
    }
}

/// Runs `cmd`'s child under an open-file limit of `n` (soft and hard), set between fork and
/// exec: the test harness's own limit is untouched.
pub fn limit_open_files(cmd: &mut Command, n: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only setrlimit, which is async-signal-safe, runs in the forked child.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: n,
                rlim_max: n,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
