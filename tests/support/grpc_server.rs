//! The gRPC project's own server (grpcio, `tests/python/grpc_server.py`) as a real gRPC
//! service on loopback, counting the calls it received per `x-stormrig-config`; and nginx's
//! `grpc_pass` in front of it.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// What the server counted for one config (`x-stormrig-config`; "" for none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
pub struct Calls {
    /// Calls received.
    pub calls: u64,
    /// Of them, calls that carried a deadline (`grpc-timeout`).
    pub deadlines: u64,
    /// Calls to the `Unavailable` method (failed by the server itself).
    pub unavailable: u64,
}

/// A running grpcio server, stopped when dropped (its stdin closed, then killed if need be).
pub struct GrpcServer {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    pub addr: SocketAddr,
}

impl GrpcServer {
    /// Starts the server on a free loopback port; returns once it listens.
    pub fn start() -> GrpcServer {
        let mut child = Command::new(super::python::python())
            .arg(super::repo_root().join("tests/python/grpc_server.py"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the Python gRPC server starts");
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let first: serde_json::Value = serde_json::from_str(&read_line(&mut stdout))
            .expect("grpc_server.py prints its port first");
        let port = first["port"].as_u64().expect("a port") as u16;
        GrpcServer {
            child,
            stdin,
            stdout,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        }
    }

    /// The calls counted so far, per config.
    pub fn calls(&mut self) -> BTreeMap<String, Calls> {
        let stdin = self.stdin.as_mut().expect("the server runs");
        stdin.write_all(b"counts\n").unwrap();
        stdin.flush().unwrap();
        serde_json::from_str(&read_line(&mut self.stdout)).expect("counts as JSON")
    }
}

/// One line the server printed; panics when it printed none (it failed to start).
fn read_line(out: &mut BufReader<ChildStdout>) -> String {
    let mut line = String::new();
    let n = out.read_line(&mut line).expect("the server's output");
    assert!(
        n > 0,
        "grpc_server.py ended without printing (see its stderr)"
    );
    line
}

impl Drop for GrpcServer {
    fn drop(&mut self) {
        // End of stdin stops the server; a kill if it has not stopped by then is harmless.
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
