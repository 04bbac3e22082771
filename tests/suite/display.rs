//! What a live run shows on an 80-column terminal: the real binary under a pseudo-terminal
//! (`script`), its screen output read back with the escape sequences removed. No line of the
//! live display or of the final tables is wider than 80 columns, and the display shows the
//! time left, the active fault, retries per second and the budget level.

use std::time::Duration;

use crate::support::process::{bin, tmp_dir, watch, write};
use crate::support::three_seconds_of_503;

/// `text` with ANSI escape sequences (CSI and two-byte escapes) removed.
fn strip_escapes(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if chars.next_if_eq(&'[').is_some() {
            // Parameters and intermediates up to the final byte (@ to ~).
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        } else {
            chars.next();
        }
    }
    out
}

#[test]
fn nothing_wraps_on_an_80_column_terminal() {
    let dir = tmp_dir("display");
    let scenario = write(
        &dir,
        "display.toml",
        &three_seconds_of_503("display", "aws-standard-with-a-rather-long-name"),
    );
    let command = format!(
        "stty cols 80 rows 40; exec '{}' run '{}' --out '{}'",
        env!("CARGO_BIN_EXE_stormrig"),
        scenario.display(),
        dir.join("out").display()
    );
    let mut cmd = std::process::Command::new("script");
    cmd.args(["-q", "-e", "-c", &command, "/dev/null"]);
    let w = watch(cmd, Duration::from_secs(30));
    assert_eq!(w.code(), 0, "{}{}", w.stdout, w.stderr);
    let screen = strip_escapes(&w.stdout);
    let lines: Vec<&str> = screen.split(['\n', '\r']).collect();
    for line in &lines {
        assert!(
            line.chars().count() <= 80,
            "{} columns: {line:?}\n{screen}",
            line.chars().count()
        );
    }
    // The live display was drawn, with what it promises.
    let seen = |s: &str| lines.iter().any(|l| l.contains(s));
    for promised in [
        "ETA",
        "fault: 503",
        "retries/s",
        "budget",
        "aws-standard-wi",
    ] {
        assert!(seen(promised), "{promised:?} never shown:\n{screen}");
    }
    // The final tables, the long name on a line of its own.
    assert!(seen("downstream") && seen("recovery"), "{screen}");
    assert!(
        lines
            .iter()
            .any(|l| l.trim_end() == "aws-standard-with-a-rather-long-name"),
        "{screen}"
    );
    // Without a terminal the same bin prints plain progress lines that fit as well.
    let mut cmd = bin();
    cmd.arg("run")
        .arg(&scenario)
        .arg("--out")
        .arg(dir.join("plain"))
        .arg("--duration")
        .arg("1s");
    let w = watch(cmd, Duration::from_secs(30));
    assert_eq!(w.code(), 0, "{}", w.stderr);
    for line in w.stdout.lines().chain(w.stderr.lines()) {
        assert!(line.chars().count() <= 80, "{line:?}");
    }
}
