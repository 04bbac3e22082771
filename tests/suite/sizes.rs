//! The house stays readable: no source file over 900 lines and no function over 120, so a
//! reader meets one job per file and per function. A file or function that grows past the
//! line is cut along its seam (see CONTRIBUTING.md), not waved through by raising it.

use std::path::Path;

use super::architecture::{rust_files, strip};

const MAX_FILE_LINES: usize = 900;
const MAX_FN_LINES: usize = 120;

/// Files that are not code a reader follows: test modules kept beside the core they test.
fn exempt(rel: &Path) -> bool {
    rel.file_name().is_some_and(|n| n == "tests.rs")
}

#[test]
fn files_and_functions_stay_small() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut over = Vec::new();
    for f in rust_files(&src) {
        let rel = f.strip_prefix(&src).unwrap().to_path_buf();
        if exempt(&rel) {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        let lines = text.lines().count();
        if lines > MAX_FILE_LINES {
            over.push(format!("src/{}: {lines} lines", rel.display()));
        }
        for (name, line, len) in functions(&strip(&text)) {
            if len > MAX_FN_LINES {
                over.push(format!(
                    "src/{}:{line}: fn {name} is {len} lines",
                    rel.display()
                ));
            }
        }
    }
    assert!(
        over.is_empty(),
        "over {MAX_FILE_LINES} lines per file or {MAX_FN_LINES} per function:\n{}",
        over.join("\n")
    );
}

/// Every function with a body in `code` (comments and literals already blanked): its name,
/// the line of `fn`, and its length in lines from `fn` to the closing brace.
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let b = code.as_bytes();
    let line_of = |i: usize| code[..i].bytes().filter(|&c| c == b'\n').count() + 1;
    let word = |i: usize| i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_');
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(p) = code[i..].find("fn ") {
        let at = i + p;
        i = at + 3;
        if at > 0 && word(at - 1) {
            continue;
        }
        let name: String = code[i..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            continue;
        }
        // The signature ends at `;` (no body) or `{` outside parentheses and brackets.
        let (mut j, mut nest) = (i, 0i32);
        while j < b.len() {
            match b[j] {
                b'(' | b'[' | b'<' => nest += 1,
                b')' | b']' => nest -= 1,
                b'>' if j > 0 && b[j - 1] != b'-' && b[j - 1] != b'=' => nest -= 1,
                b';' if nest <= 0 => break,
                b'{' if nest <= 0 => break,
                _ => {}
            }
            j += 1;
        }
        if j >= b.len() || b[j] == b';' {
            continue;
        }
        let mut depth = 0;
        let mut k = j;
        while k < b.len() {
            match b[k] {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            k += 1;
        }
        out.push((name, line_of(at), line_of(k) - line_of(at) + 1));
    }
    out
}

/// The finder on made-up code: bodies measured from `fn` to their brace, declarations
/// without a body skipped, nested functions found too.
#[test]
fn the_function_finder_measures_bodies() {
    let code = "fn a() {\n    1\n}\ntrait T { fn b(&self) -> [u8; 2]; }\nfn c<X: Into<u8>>(x: X) -> Vec<u8>\nwhere X: Copy\n{\n    fn d() {}\n    vec![x.into()]\n}\n";
    let found = functions(code);
    assert_eq!(
        found,
        vec![
            ("a".to_string(), 1, 3),
            ("c".to_string(), 5, 6),
            ("d".to_string(), 8, 1)
        ]
    );
}
