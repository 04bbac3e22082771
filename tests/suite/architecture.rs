//! The crate's shape, checked over its source: which top-level module may name which.
//!
//! The policy core is what users compare, so both engines must drive the very same code and
//! nothing in it may reach for a clock, a socket or an engine; reports must never know which
//! engine produced a result; the CLI edge depends on the library and never the reverse. A
//! reader sees the whole rule in [`TABLE`]; the test reads every file under `src/`, strips
//! comments and string literals, resolves `crate::`, `super::` and (in `main.rs`)
//! `stormrig::` paths, in `use` lines and inline in expressions alike, and fails on any
//! reference the table does not allow, and on any top-level module the table does not list.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Everything the crate holds may be named (the CLI edge and the benchmarks).
const ANY: &[&str] = &["*"];

/// Paths the pure policy core must never name: an async runtime, HTTP, sockets, files, a
/// clock or a global random number generator. Time and randomness come in as arguments.
const IMPURE: &[&str] = &[
    "tokio",
    "hyper",
    "hyper_util",
    "std::net",
    "std::fs",
    "Instant::now",
    "SystemTime::now",
    "thread_rng",
    "rand::random",
];

/// Who may import whom. One row per top-level module of the crate (`src/NAME.rs` or
/// `src/NAME/`), with the project modules it may name and the outside paths it must not.
#[rustfmt::skip]
const TABLE: &[Row] = &[
    // module       may import from the project                                         must not name
    ("policy",     &[],                                                                   IMPURE),
    ("draws",      &[],                                                                   IMPURE),
    ("headers",    &[],                                                                   &[]),
    ("idempotency", &[],                                                                  &[]),
    ("input",      &[],                                                                   &[]),
    ("scenario",   &["policy", "draws", "input", "headers"],                                       &[]),
    ("plan",       &["policy", "scenario", "metrics"],                                               &[]),
    ("metrics",    &["policy", "scenario"],                                               &[]),
    ("session",    &["policy", "metrics", "draws"],                                       IMPURE),
    ("shed",       &["scenario", "metrics", "draws"],                                     IMPURE),
    ("run_result", &["policy", "scenario", "metrics", "plan"],                            &[]),
    ("advice",     &["policy", "scenario", "plan", "metrics"],                            &[]),
    ("report",     &["policy", "scenario", "metrics", "input"],                                    &[]),
    ("tls",        &["scenario"],                                                         &[]),
    ("server",     &["policy", "scenario", "metrics", "plan", "headers", "draws", "tls", "idempotency", "shed"], &[]),
    ("sim",        &["policy", "scenario", "metrics", "plan", "headers", "draws", "session", "run_result", "idempotency", "shed"], &[]),
    ("live",       &["policy", "scenario", "metrics", "plan", "server", "headers", "draws", "session", "run_result", "tls", "shard"], &[]),
    ("shard",      &["policy", "scenario", "metrics", "plan", "run_result", "input"],              &[]),
    ("sweep",      &["policy", "scenario", "metrics", "plan", "sim", "report"],            &[]),
    ("calibrate",  &["scenario", "metrics", "plan", "sim"],                               &[]),
    ("bench",      ANY,                                                                   &[]),
    ("cli",        &[],                                                                   &[]),
    ("app",        ANY,                                                                   &[]),
    ("main",       ANY,                                                                   &[]),
    ("alloc",      &[],                                                                   &[]),
];

#[test]
fn every_reference_follows_the_table() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut broken = Vec::new();
    for module in top_level_modules(&src) {
        if row(&module).is_none() {
            broken.push(format!(
                "src/{module}: a top-level module tests/suite/architecture.rs does not know; add it to the table"
            ));
        }
    }
    for file in rust_files(&src) {
        let text = std::fs::read_to_string(&file).unwrap();
        let rel = file.strip_prefix(&src).unwrap();
        broken.extend(violations(rel, &text));
    }
    assert!(
        broken.is_empty(),
        "imports against the table in tests/suite/architecture.rs:\n  {}",
        broken.join("\n  ")
    );
}

#[test]
fn every_row_names_a_module_that_exists() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = top_level_modules(&src);
    for (name, may, _) in TABLE {
        assert!(
            modules.contains(*name),
            "the table lists {name}, which src/ does not hold; remove its row"
        );
        for m in may.iter().filter(|m| **m != "*") {
            assert!(modules.contains(*m), "row {name} allows {m}, unknown");
        }
    }
}

/// The rows that carry the design's promises, read back from the table itself, so that an
/// edit that loosens one of them fails here and not only in review.
#[test]
fn the_table_keeps_the_design_promises() {
    let may = |m: &str| row(m).unwrap().1;
    assert!(
        may("policy").is_empty(),
        "policy names nothing of the project"
    );
    for engine in ["live", "sim", "server"] {
        assert!(
            !may("report").contains(&engine),
            "report never names {engine}"
        );
        assert!(
            !may("metrics").contains(&engine),
            "metrics never names {engine}"
        );
    }
    assert!(
        may("cli").is_empty(),
        "cli names nothing of the project: what a default depends on, app resolves"
    );
    for (name, allowed, _) in TABLE {
        let edge = ["app", "cli", "main", "bench"].contains(name);
        if !edge {
            for m in ["app", "cli", "main", "bench"] {
                assert!(!allowed.contains(&m), "{name} may not name {m}");
            }
            assert_ne!(*allowed, ANY, "{name}: only the edge may name everything");
        }
    }
}

/// The scanner sees through what would fool a line grep, and only through that.
#[test]
fn the_scanner_resolves_paths_and_ignores_comments_and_strings() {
    let refs = |file: &str, text: &str| -> Vec<String> {
        references(Path::new(file), &strip(text))
            .into_iter()
            .map(|r| r.top)
            .collect()
    };
    // Inline paths in expressions, grouped use trees, `super::` out of a file at the top.
    assert_eq!(
        refs("report/x.rs", "fn f() { crate::live::run(); }"),
        ["live"]
    );
    assert_eq!(
        refs("report/x.rs", "use crate::{metrics::A, sim};"),
        ["metrics", "sim"]
    );
    assert_eq!(refs("app.rs", "use super::live::X;"), ["live"]);
    assert_eq!(
        refs("report/gates/deep.rs", "use super::super::super::sim;"),
        ["sim"]
    );
    // `super::` inside an inline module stays in the file's module.
    assert_eq!(
        refs(
            "app.rs",
            "mod tests { use super::*; fn f() { super::helper(); } }"
        ),
        ["app", "app"]
    );
    assert_eq!(refs("main.rs", "use stormrig::app::run;"), ["app"]);
    // Comments, strings, raw strings and char literals hide nothing and invent nothing.
    let hidden = r####"
        // use crate::live;
        /* crate::sim /* nested */ crate::live */
        /// doc: crate::server
        const S: &str = "crate::live \" crate::sim";
        const R: &str = r#"crate::live "still" crate::sim"#;
        const C: char = '"';
        fn f<'a>(x: &'a str) -> char { let _ = '\''; '{' }
        fn g() { crate::metrics::x(); }
    "####;
    assert_eq!(refs("report/x.rs", hidden), ["metrics"]);
    // A forbidden name is found through a `use` group and a later short path alike.
    let v = violations(
        Path::new("policy/x.rs"),
        "use std::time::{Duration, Instant};\nfn f() { let _ = Instant::now(); }",
    );
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(
        v[0].contains("policy/x.rs:2") && v[0].contains("Instant::now"),
        "{v:?}"
    );
    let v = violations(Path::new("metrics/x.rs"), "use crate::sim::Event;");
    assert!(v[0].contains("metrics names sim"), "{v:?}");
    let v = violations(Path::new("report/x.rs"), "use crate::session::Step;");
    assert!(v[0].contains("report names session"), "{v:?}");
    let v = violations(Path::new("report/x.rs"), "use crate::shards::Merge;");
    assert!(v[0].contains("add it to the table"), "{v:?}");
}

/// Import circles between files: sets of files (strongly connected components of the graph
/// "file A names a path into file B") in which each file reaches every other by imports,
/// so none of them can be read, moved or tested without the others. There are none: where
/// two files would read each other, what both need moves into a leaf of its own (the
/// virtual clock, a give-up reason, a load shape, the refusal helpers), or the file that
/// extends a type (`impl Sim` in `sim/target.rs`) names the type and is never named back.
#[test]
fn no_file_imports_in_a_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let circles = import_circles(&src);
    assert!(
        circles.is_empty(),
        "{} import circles between files:\n{}",
        circles.len(),
        show_circles(&circles)
    );
}

/// The finder on a made-up crate: a circle is found whole, a file that only imports into it
/// is not part of it, and `mod tests { use super::*; }` is no edge.
#[test]
fn the_circle_finder_finds_circles_and_only_them() {
    let files = [
        ("a.rs", "use crate::b::X;"),
        ("b/mod.rs", "use super::c::Y; mod tests { use super::*; }"),
        ("c.rs", "fn f() { crate::a::g(); }"),
        ("d.rs", "use crate::a::Z; use crate::b::inner::W;"),
        ("b/inner.rs", "use super::super::d::V;"),
    ];
    let graph: Vec<(Vec<String>, String)> = files
        .iter()
        .map(|(f, code)| (module_path(Path::new(f)), strip(code)))
        .collect();
    let rels: Vec<PathBuf> = files.iter().map(|(f, _)| PathBuf::from(f)).collect();
    let circles = circles_of(
        &rels,
        &graph.iter().map(|(_, c)| c.clone()).collect::<Vec<_>>(),
    );
    let names: Vec<Vec<String>> = circles
        .iter()
        .map(|c| c.iter().map(|(f, _)| f.clone()).collect())
        .collect();
    assert_eq!(
        names,
        [vec!["a.rs", "b/mod.rs", "c.rs"], vec!["b/inner.rs", "d.rs"]]
    );
}

/// A circle: its files (paths below `src/`, sorted), each with the files of the circle it
/// imports from.
type Circle = Vec<(String, Vec<String>)>;

/// The import circles of the crate under `src`, largest first.
fn import_circles(src: &Path) -> Vec<Circle> {
    let files = rust_files(src);
    let rels: Vec<PathBuf> = files
        .iter()
        .map(|f| f.strip_prefix(src).unwrap().to_path_buf())
        .collect();
    let codes: Vec<String> = files
        .iter()
        .map(|f| strip(&std::fs::read_to_string(f).unwrap()))
        .collect();
    circles_of(&rels, &codes)
}

/// The import circles among `rels` (paths below `src/`) with their stripped code. A path
/// names the file whose module is its longest prefix, so `crate::scenario::Load` names
/// `scenario/mod.rs` even where it re-exports it; paths are those the table checks
/// (`crate::`, `super::`, `stormrig::`), so a parent's `mod x;` and `pub use x::…` of its
/// own child, its table of contents, is no edge.
fn circles_of(rels: &[PathBuf], codes: &[String]) -> Vec<Circle> {
    let modules: Vec<Vec<String>> = rels.iter().map(|r| module_path(r)).collect();
    let index: std::collections::HashMap<&[String], usize> = modules
        .iter()
        .enumerate()
        .map(|(i, m)| (m.as_slice(), i))
        .collect();
    let edges: Vec<BTreeSet<usize>> = rels
        .iter()
        .zip(codes)
        .enumerate()
        .map(|(i, (rel, code))| {
            resolved_paths(rel, code)
                .into_iter()
                .filter_map(|(_, _, target)| {
                    (0..=target.len())
                        .rev()
                        .find_map(|n| index.get(&target[..n]).copied())
                })
                .filter(|&j| j != i)
                .collect()
        })
        .collect();
    let name = |i: usize| rels[i].display().to_string();
    let mut circles: Vec<Circle> = strongly_connected(&edges)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            let mut circle: Circle = c
                .iter()
                .map(|&i| {
                    let mut to: Vec<String> = edges[i]
                        .iter()
                        .filter(|j| c.contains(j))
                        .map(|&j| name(j))
                        .collect();
                    to.sort();
                    (name(i), to)
                })
                .collect();
            circle.sort();
            circle
        })
        .collect();
    circles.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    circles
}

/// Tarjan's strongly connected components of a graph given as edge lists.
fn strongly_connected(edges: &[BTreeSet<usize>]) -> Vec<Vec<usize>> {
    struct Walk<'a> {
        edges: &'a [BTreeSet<usize>],
        order: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on_stack: Vec<bool>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(w: &mut Walk, v: usize) {
        w.order[v] = Some(w.next);
        w.low[v] = w.next;
        w.next += 1;
        w.stack.push(v);
        w.on_stack[v] = true;
        for &u in w.edges[v].iter() {
            match w.order[u] {
                None => {
                    visit(w, u);
                    w.low[v] = w.low[v].min(w.low[u]);
                }
                Some(o) if w.on_stack[u] => w.low[v] = w.low[v].min(o),
                Some(_) => {}
            }
        }
        if Some(w.low[v]) == w.order[v] {
            let mut component = Vec::new();
            while let Some(u) = w.stack.pop() {
                w.on_stack[u] = false;
                component.push(u);
                if u == v {
                    break;
                }
            }
            w.out.push(component);
        }
    }
    let n = edges.len();
    let mut w = Walk {
        edges,
        order: vec![None; n],
        low: vec![0; n],
        stack: Vec::new(),
        on_stack: vec![false; n],
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if w.order[v].is_none() {
            visit(&mut w, v);
        }
    }
    w.out
}

/// One line per file of each circle, with what it imports inside the circle.
fn show_circles(circles: &[Circle]) -> String {
    let mut out = String::new();
    for (k, circle) in circles.iter().enumerate() {
        out.push_str(&format!("  circle {} ({} files):\n", k + 1, circle.len()));
        for (file, to) in circle {
            out.push_str(&format!("    {file} → {}\n", to.join(", ")));
        }
    }
    out
}

/// module, may import from the project, must not name.
type Row = (
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
);

fn row(module: &str) -> Option<&'static Row> {
    TABLE.iter().find(|(name, _, _)| *name == module)
}

/// The crate's top-level modules: `src/NAME.rs` and `src/NAME/` (the crate root `lib.rs`
/// aside; `main.rs`, the binary, is one of them).
fn top_level_modules(src: &Path) -> BTreeSet<String> {
    std::fs::read_dir(src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let name = if p.is_dir() {
                p.file_name()?.to_str()?.to_string()
            } else if p.extension().is_some_and(|x| x == "rs") {
                p.file_stem()?.to_str()?.to_string()
            } else {
                return None;
            };
            (name != "lib").then_some(name)
        })
        .collect()
}

pub(super) fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

/// What one file (path relative to `src/`) does against the table, one message per line.
fn violations(rel: &Path, text: &str) -> Vec<String> {
    let code = strip(text);
    let own = module_path(rel);
    let Some(top) = own.first().cloned() else {
        return Vec::new(); // lib.rs: only `mod` lines
    };
    let Some((_, may, must_not)) = row(&top) else {
        return Vec::new(); // reported once, as an unknown module
    };
    let mut out = Vec::new();
    let at = |line: usize| format!("src/{}:{line}", rel.display());
    for r in references(rel, &code) {
        if r.top == top || *may == ANY || may.contains(&r.top.as_str()) {
            continue;
        }
        if row(&r.top).is_none() {
            out.push(format!(
                "{}: `{}` names {}, a module the table does not know; add it to the table",
                at(r.line),
                r.path,
                r.top
            ));
        } else {
            out.push(format!(
                "{}: {top} names {} (`{}`), which the table does not allow",
                at(r.line),
                r.top,
                r.path
            ));
        }
    }
    for (line, path) in paths(&code) {
        let segs: Vec<&str> = path.split("::").collect();
        for bad in *must_not {
            let want: Vec<&str> = bad.split("::").collect();
            if segs.windows(want.len()).any(|w| w == want.as_slice()) {
                out.push(format!(
                    "{}: {top} must not name {bad} (`{path}`)",
                    at(line)
                ));
            }
        }
    }
    out
}

/// The module path of a file below `src/`: `live/driver.rs` → [live, driver].
fn module_path(rel: &Path) -> Vec<String> {
    let mut segs: Vec<String> = rel
        .iter()
        .map(|s| s.to_str().unwrap().trim_end_matches(".rs").to_string())
        .collect();
    if segs.last().is_some_and(|s| s == "mod" || s == "lib") {
        segs.pop();
    }
    segs
}

/// A reference from one file to a top-level module of the crate.
#[derive(Debug)]
struct Reference {
    line: usize,
    path: String,
    top: String,
}

/// Every path that leaves the file's own module by name: `crate::x`, `$crate::x`,
/// `super::…::x` (resolved against the file's module and the inline `mod` blocks it sits
/// in) and, in the binary, `stormrig::x`.
fn references(rel: &Path, code: &str) -> Vec<Reference> {
    resolved_paths(rel, code)
        .into_iter()
        .filter_map(|(line, path, target)| {
            let top = target.first().cloned()?;
            (top != "*" && top != "self").then_some(Reference { line, path, top })
        })
        .collect()
}

/// The paths of [`references`] with the module path each names, from the crate root:
/// (line, path as written, resolved segments).
fn resolved_paths(rel: &Path, code: &str) -> Vec<(usize, String, Vec<String>)> {
    let file_module = module_path(rel);
    let binary = rel == Path::new("main.rs");
    let mut out = Vec::new();
    for (line, path, inline_mods) in paths_in_modules(code) {
        let segs: Vec<&str> = path.split("::").collect();
        let target: Option<Vec<String>> = match segs[0] {
            "crate" if !binary => Some(segs[1..].iter().map(|s| s.to_string()).collect()),
            "stormrig" if binary => Some(segs[1..].iter().map(|s| s.to_string()).collect()),
            "super" => {
                let mut here = file_module.clone();
                here.extend(inline_mods);
                let ups = segs.iter().take_while(|s| **s == "super").count();
                here.truncate(here.len().saturating_sub(ups));
                here.extend(segs[ups..].iter().map(|s| s.to_string()));
                Some(here)
            }
            _ => None,
        };
        if let Some(target) = target {
            out.push((line, path, target));
        }
    }
    out
}

fn paths(code: &str) -> Vec<(usize, String)> {
    paths_in_modules(code)
        .into_iter()
        .map(|(line, path, _)| (line, path))
        .collect()
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Sep,
    Open,
    Close,
    Other(char),
}

fn tokens(code: &str) -> Vec<(usize, Tok)> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
        }
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push((line, Tok::Ident(chars[start..i].iter().collect())));
            continue;
        }
        let tok = match c {
            ':' if chars.get(i + 1) == Some(&':') => {
                i += 1;
                Tok::Sep
            }
            '{' => Tok::Open,
            '}' => Tok::Close,
            c if c.is_whitespace() => {
                i += 1;
                continue;
            }
            c => Tok::Other(c),
        };
        out.push((line, tok));
        i += 1;
    }
    out
}

/// Every `a::b::c` path with its line and the inline `mod` blocks around it; use trees
/// (`a::{b, c::d}`) expand to one path per leaf.
fn paths_in_modules(code: &str) -> Vec<(usize, String, Vec<String>)> {
    let toks = tokens(code);
    let mut out = Vec::new();
    let mut mods: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        match &toks[i].1 {
            Tok::Open => depth += 1,
            Tok::Close => {
                depth = depth.saturating_sub(1);
                if mods.last().is_some_and(|(_, d)| *d == depth) {
                    mods.pop();
                }
            }
            Tok::Ident(kw) if kw == "mod" => {
                if let (Some((_, Tok::Ident(name))), Some((_, Tok::Open))) =
                    (toks.get(i + 1), toks.get(i + 2))
                {
                    mods.push((name.clone(), depth));
                }
            }
            Tok::Ident(_) if i == 0 || toks[i - 1].1 != Tok::Sep => {
                let inline: Vec<String> = mods.iter().map(|(n, _)| n.clone()).collect();
                let mut found = Vec::new();
                let next = path_at(&toks, i, String::new(), &mut found);
                for (line, p) in found {
                    out.push((line, p, inline.clone()));
                }
                i = next;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Reads the path starting at `i` below `prefix`, pushing each complete path; returns the
/// index after it. Only paths with at least one `::` are pushed (a lone word is no path).
fn path_at(
    toks: &[(usize, Tok)],
    mut i: usize,
    prefix: String,
    out: &mut Vec<(usize, String)>,
) -> usize {
    let line = toks[i].0;
    let mut path = prefix;
    loop {
        let seg = match toks.get(i) {
            Some((_, Tok::Ident(s))) => s.as_str(),
            // `use a::*;`: the glob stands for the names of `a`.
            Some((_, Tok::Other('*'))) => "*",
            _ => break,
        };
        if !path.is_empty() {
            path.push_str("::");
        }
        path.push_str(seg);
        i += 1;
        if toks.get(i).map(|t| &t.1) != Some(&Tok::Sep) {
            break;
        }
        i += 1;
        if toks.get(i).map(|t| &t.1) == Some(&Tok::Open) {
            // A use tree: each item continues the path.
            i += 1;
            while i < toks.len() && toks[i].1 != Tok::Close {
                let start = i;
                i = path_at(toks, i, path.clone(), out);
                if i == start {
                    i += 1; // a comma, or anything else between items
                }
            }
            return i + 1;
        }
    }
    if path.contains("::") {
        out.push((line, path));
    }
    i
}

/// The code with comments, string, byte-string and char literals blanked out (newlines
/// kept, so line numbers stay true). Lifetimes stay.
pub(super) fn strip(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, s: &[char]| {
        out.extend(s.iter().map(|&ch| if ch == '\n' { '\n' } else { ' ' }));
    };
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut i = 0;
    while i < c.len() {
        let prev_ident = i > 0 && ident(c[i - 1]);
        // Line comment (doc comments too).
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            let end = c[i..]
                .iter()
                .position(|&ch| ch == '\n')
                .map_or(c.len(), |p| i + p);
            blank(&mut out, &c[i..end]);
            i = end;
            continue;
        }
        // Block comment, nested.
        if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            let (mut j, mut depth) = (i + 2, 1);
            while j < c.len() && depth > 0 {
                if c[j] == '/' && c.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if c[j] == '*' && c.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &c[i..j]);
            i = j;
            continue;
        }
        // Raw strings: r"…", r#"…"#, br#"…"#.
        if !prev_ident && (c[i] == 'r' || (c[i] == 'b' && c.get(i + 1) == Some(&'r'))) {
            let r = if c[i] == 'b' { i + 1 } else { i };
            let hashes = c[r + 1..].iter().take_while(|&&ch| ch == '#').count();
            if c.get(r + 1 + hashes) == Some(&'"') {
                let close: Vec<char> = std::iter::once('"')
                    .chain(std::iter::repeat_n('#', hashes))
                    .collect();
                let body = r + 2 + hashes;
                let end = (body..c.len())
                    .find(|&j| c[j..].starts_with(&close))
                    .map_or(c.len(), |j| j + close.len());
                blank(&mut out, &c[i..end]);
                i = end;
                continue;
            }
        }
        // Strings and byte strings.
        if c[i] == '"' {
            let mut j = i + 1;
            while j < c.len() && c[j] != '"' {
                j += if c[j] == '\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(c.len());
            blank(&mut out, &c[i..end]);
            i = end;
            continue;
        }
        // Char literals ('x', '\n', '\u{..}'); a lifetime ('a) has no closing quote.
        if c[i] == '\'' {
            let end = if c.get(i + 1) == Some(&'\\') {
                (i + 3..c.len()).find(|&j| c[j] == '\'').map(|j| j + 1)
            } else if c.get(i + 2) == Some(&'\'') {
                Some(i + 3)
            } else {
                None
            };
            if let Some(end) = end {
                blank(&mut out, &c[i..end]);
                i = end;
                continue;
            }
        }
        out.push(c[i]);
        i += 1;
    }
    out
}
