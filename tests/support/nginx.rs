//! A real nginx (Debian's package) as a target, started and stopped with
//! `targets/nginx/run.sh`: plain HTTP/1.1, and on request HTTPS and HTTP/2 in clear.
//!
//! Without nginx a test using it fails, saying how to install it (`tests/run.sh`, the test
//! command, installs it first): no test passes by skipping the real target.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use tokio::time::Instant;

const NGINX: &str = "/usr/sbin/nginx";

/// A running nginx, stopped (and its folder removed) when dropped.
pub struct Nginx {
    pub prefix: PathBuf,
    pub port: u16,
    /// HTTPS (HTTP/1.1 and h2 by ALPN) and HTTP/2-in-clear ports, when started with TLS.
    pub tls_port: Option<u16>,
    pub h2c_port: Option<u16>,
}

impl Nginx {
    /// Starts nginx with the shipped script.
    pub fn start() -> Nginx {
        Nginx::start_with(None)
    }

    /// [`Nginx::start`], also serving HTTPS with `tls` (certificate and key, PEM) and h2c.
    pub fn start_with(tls: Option<(&str, &str)>) -> Nginx {
        assert!(
            Path::new(NGINX).exists(),
            "nginx is not installed ({NGINX} missing): run the tests with `bash tests/run.sh`, \
             which installs it, or `apt-get update && apt-get install -y nginx`"
        );
        let free_port = || {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let port = free_port();
        let prefix =
            std::env::temp_dir().join(format!("stormrig-nginx-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&prefix);
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("targets/nginx/run.sh");
        let mut cmd = Command::new("sh");
        cmd.arg(&script)
            .arg("start")
            .arg(&prefix)
            .arg(port.to_string());
        let (mut tls_port, mut h2c_port) = (None, None);
        if let Some((cert, key)) = tls {
            std::fs::create_dir_all(&prefix).unwrap();
            std::fs::write(prefix.join("tls.crt"), cert).unwrap();
            std::fs::write(prefix.join("tls.key"), key).unwrap();
            let (t, h) = (free_port(), free_port());
            cmd.arg(t.to_string()).arg(h.to_string());
            (tls_port, h2c_port) = (Some(t), Some(h));
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "run.sh start failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Nginx {
            prefix,
            port,
            tls_port,
            h2c_port,
        }
    }

    /// nginx as a gRPC gateway: HTTP/2 in clear on its port, every call passed to
    /// `upstream` with `grpc_pass` (a pool of kept-alive upstream connections). Its access
    /// log, one line per call it answered: `$http_x_stormrig_config $http_x_stormrig_request
    /// $http_x_stormrig_attempt $status $request_uri`, then the call's `grpc-status` as sent
    /// in the trailers, then as sent in the headers (a trailers-only answer; "-" where none).
    pub fn start_grpc(upstream: SocketAddr) -> Nginx {
        Nginx::start_conf("grpc", |p, port| {
            format!(
                r#"    log_format grpc '$http_x_stormrig_config $http_x_stormrig_request $http_x_stormrig_attempt '
                    '$status $request_uri $sent_trailer_grpc_status $sent_http_grpc_status';
    access_log {p}/access.log grpc;
    upstream grpcio {{
        server {upstream};
        keepalive 16;
    }}
    server {{
        listen 127.0.0.1:{port} http2;
        location / {{
            grpc_pass grpc://grpcio;
        }}
    }}
"#
            )
        })
    }

    /// nginx answering 200 to every request, with two access logs of the same requests:
    /// `access.log` in the predefined `combined` format and `access.json` in a JSON
    /// `log_format` with `$msec` (the formats `kind = "trace"` replays).
    pub fn start_recording() -> Nginx {
        Nginx::start_conf("rec", |p, port| {
            format!(
                r#"    log_format json escape=json '{{"msec":"$msec","request_method":"$request_method","request_uri":"$request_uri","status":$status}}';
    access_log {p}/access.log combined;
    access_log {p}/access.json json;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            return 200 "ok\n";
        }}
    }}
"#
            )
        })
    }

    /// nginx on a free loopback port, its folder named by `tag`, with `http` (given the
    /// folder and the port) as the body of its `http` block, after the temp paths every
    /// configuration needs; running once its pid file exists.
    fn start_conf(tag: &str, http: impl FnOnce(&str, u16) -> String) -> Nginx {
        assert!(
            Path::new(NGINX).exists(),
            "nginx is not installed ({NGINX} missing): run the tests with `bash tests/run.sh`, \
             which installs it, or `apt-get update && apt-get install -y nginx`"
        );
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let prefix = std::env::temp_dir().join(format!(
            "stormrig-nginx-{tag}-{}-{port}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&prefix);
        std::fs::create_dir_all(prefix.join("tmp")).unwrap();
        std::fs::create_dir_all(prefix.join("logs")).unwrap();
        let p = prefix.display().to_string();
        // `getuid` has no preconditions and cannot fail.
        let root = unsafe { libc::getuid() } == 0;
        let conf = format!(
            r#"{user}
worker_processes 1;
daemon on;
pid {p}/nginx.pid;
error_log {p}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    client_body_temp_path {p}/tmp/body;
    proxy_temp_path {p}/tmp/proxy;
    fastcgi_temp_path {p}/tmp/fastcgi;
    uwsgi_temp_path {p}/tmp/uwsgi;
    scgi_temp_path {p}/tmp/scgi;
    keepalive_requests 1000000;
{body}}}
"#,
            user = if root { "user root;" } else { "" },
            body = http(&p, port),
        );
        std::fs::write(prefix.join("nginx.conf"), conf).unwrap();
        std::fs::write(prefix.join("access.log"), "").unwrap();
        let out = Command::new(NGINX)
            .arg("-p")
            .arg(&prefix)
            .arg("-c")
            .arg(prefix.join("nginx.conf"))
            .arg("-e")
            .arg(prefix.join("error.log"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "nginx ({tag}) did not start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The master binds the listener before it daemonizes and writes its pid.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !prefix.join("nginx.pid").exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "nginx wrote no pid file"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Nginx {
            prefix,
            port,
            tls_port: None,
            h2c_port: None,
        }
    }

    /// Points `plan` at this nginx (plain HTTP/1.1), its fault windows stretched over the
    /// whole (shortened) run.
    pub fn target(&self, plan: &mut stormrig::plan::Plan) {
        plan.scenario.target = stormrig::scenario::Target::Url {
            url: format!("http://127.0.0.1:{}", self.port),
            host: "127.0.0.1".into(),
            port: self.port,
            dedup: None,
            model: None,
            wire: Default::default(),
            upstream_timeout: None,
        };
        for f in &mut plan.scenario.faults {
            f.at = Duration::ZERO;
            f.length = plan.scenario.duration;
        }
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    pub fn log(&self) -> Vec<String> {
        std::fs::read_to_string(self.prefix.join("access.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// The log once it holds `n` lines (nginx writes a line after answering), bounded.
    pub async fn log_with(&self, n: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            let log = self.log();
            if log.len() >= n || Instant::now() > deadline {
                // A little longer, so that extra lines (a miscount) would show up too.
                tokio::time::sleep(Duration::from_millis(100)).await;
                return self.log();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("targets/nginx/run.sh");
        let _ = Command::new("sh")
            .arg(script)
            .arg("stop")
            .arg(&self.prefix)
            .status();
        let _ = std::fs::remove_dir_all(&self.prefix);
    }
}
