//! The house's shape rules, checked on the source so that a regression fails CI:
//! no function over 150 lines, no file under `src/` over 900 lines (inline tests count), and the
//! top-level modules of `src/` import each other without a cycle (`crate::x` paths, as
//! `modgraph.py` reads them; test code and comments are ignored).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_FN_LINES: usize = 150;
const MAX_FILE_LINES: usize = 900;

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn rel(p: &Path) -> String {
    p.strip_prefix(src())
        .unwrap()
        .to_string_lossy()
        .replace('\\', "/")
}

/// The text with comments and the contents of string and char literals blanked (newlines kept),
/// so that braces and `fn` inside them do not count.
fn code_only(text: &str) -> Vec<char> {
    let s: Vec<char> = text.chars().collect();
    let n = s.len();
    let mut out = Vec::with_capacity(n);
    let blank = |out: &mut Vec<char>, from: &[char]| {
        out.extend(from.iter().map(|&c| if c == '\n' { '\n' } else { ' ' }))
    };
    let starts = |i: usize, pat: &str| {
        pat.chars()
            .enumerate()
            .all(|(k, c)| s.get(i + k) == Some(&c))
    };
    let mut i = 0;
    while i < n {
        let c = s[i];
        let ident_before = i > 0 && (s[i - 1].is_alphanumeric() || s[i - 1] == '_');
        if starts(i, "//") {
            let j = (i..n).find(|&j| s[j] == '\n').unwrap_or(n);
            blank(&mut out, &s[i..j]);
            i = j;
        } else if starts(i, "/*") {
            let (mut depth, mut j) = (0, i);
            while j < n {
                if starts(j, "/*") {
                    depth += 1;
                    j += 2;
                } else if starts(j, "*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &s[i..j.min(n)]);
            i = j.min(n);
        } else if !ident_before && (starts(i, "r\"") || starts(i, "r#") || starts(i, "br")) {
            // raw string: r"..", r#".."#, br".."
            let mut k = i + if c == 'b' { 2 } else { 1 };
            let mut hashes = 0;
            while k < n && s[k] == '#' {
                hashes += 1;
                k += 1;
            }
            if k < n && s[k] == '"' {
                let close: String = std::iter::once('"')
                    .chain(std::iter::repeat_n('#', hashes))
                    .collect();
                let mut j = k + 1;
                while j < n && !starts(j, &close) {
                    j += 1;
                }
                let end = (j + 1 + hashes).min(n);
                blank(&mut out, &s[i..end]);
                i = end;
            } else {
                out.push(c);
                i += 1;
            }
        } else if c == '"' {
            let mut j = i + 1;
            while j < n && s[j] != '"' {
                j += if s[j] == '\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(n);
            blank(&mut out, &s[i..end]);
            i = end;
        } else if c == '\'' && s.get(i + 1) == Some(&'\\') {
            // escaped char literal
            let j = (i + 2..n).find(|&j| s[j] == '\'').unwrap_or(n);
            blank(&mut out, &s[i..(j + 1).min(n)]);
            i = (j + 1).min(n);
        } else if c == '\'' && s.get(i + 2) == Some(&'\'') {
            blank(&mut out, &s[i..i + 3]);
            i += 3;
        } else {
            // code, or a lifetime's quote
            out.push(c);
            i += 1;
        }
    }
    out
}

/// (first line, name, lines from `fn` to its closing brace) of every function with a body.
fn functions(text: &str) -> Vec<(usize, String, usize)> {
    let s = code_only(text);
    let n = s.len();
    let line_at = |i: usize| s[..i].iter().filter(|&&c| c == '\n').count() + 1;
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let mut i = 0;
    while i + 2 < n {
        let kw = s[i] == 'f' && s[i + 1] == 'n' && (i == 0 || !is_ident(s[i - 1]));
        if !kw || !s[i + 2].is_whitespace() {
            i += 1;
            continue;
        }
        let mut j = i + 2;
        while j < n && s[j].is_whitespace() {
            j += 1;
        }
        let name: String = s[j..].iter().take_while(|&&c| is_ident(c)).collect();
        if name.is_empty() {
            i += 2;
            continue;
        }
        // the body's `{` (or `;` for a declaration) outside parentheses and brackets
        let mut depth = 0i32;
        let mut body = None;
        while j < n {
            match s[j] {
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                ';' if depth == 0 => break,
                '{' if depth == 0 => {
                    body = Some(j);
                    break;
                }
                _ => {}
            }
            j += 1;
        }
        if let Some(open) = body {
            let mut d = 0;
            let mut k = open;
            while k < n {
                match s[k] {
                    '{' => d += 1,
                    '}' => {
                        d -= 1;
                        if d == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                k += 1;
            }
            let first = line_at(i);
            out.push((first, name, line_at(k.min(n - 1)) - first + 1));
        }
        i += 2;
    }
    out
}

#[test]
fn no_function_over_150_lines() {
    let mut long = Vec::new();
    for p in rust_files(&src()) {
        let text = std::fs::read_to_string(&p).unwrap();
        for (line, name, len) in functions(&text) {
            if len > MAX_FN_LINES {
                long.push(format!("{}:{line} fn {name}: {len} lines", rel(&p)));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_FN_LINES} lines (split them into named steps):\n{}",
        long.join("\n")
    );
}

#[test]
fn no_source_file_over_900_lines() {
    let mut big = Vec::new();
    for p in rust_files(&src()) {
        let r = rel(&p);
        let lines = std::fs::read_to_string(&p).unwrap().lines().count();
        if lines > MAX_FILE_LINES {
            big.push(format!("src/{r}: {lines} lines"));
        }
    }
    assert!(
        big.is_empty(),
        "files over {MAX_FILE_LINES} lines (move long test modules to their own file, split by \
         concept):\n{}",
        big.join("\n")
    );
}

/// Top-level module → (module it imports → a file that makes the edge).
fn module_graph() -> BTreeMap<String, BTreeMap<String, String>> {
    let root = src();
    let mods: BTreeSet<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            if p.is_dir() {
                p.file_name().map(|f| f.to_string_lossy().into_owned())
            } else if p.extension().is_some_and(|x| x == "rs") {
                p.file_stem().map(|f| f.to_string_lossy().into_owned())
            } else {
                None
            }
        })
        .filter(|m| m != "main" && m != "lib")
        .collect();
    let mut g: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for p in rust_files(&root) {
        let r = rel(&p);
        let me = r
            .split('/')
            .next()
            .unwrap()
            .trim_end_matches(".rs")
            .to_string();
        if !mods.contains(&me) || p.file_name().is_some_and(|f| f == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        // the inline test module (at the end of a file) is test code
        let text = match text.find("#[cfg(test)]\nmod tests") {
            Some(i) => &text[..i],
            None => &text[..],
        };
        let code: String = code_only(text).into_iter().collect();
        let mut edge = |t: &str| {
            if mods.contains(t) && t != me {
                g.entry(me.clone())
                    .or_default()
                    .entry(t.to_string())
                    .or_insert_with(|| format!("src/{r}"));
            }
        };
        for (i, _) in code.match_indices("crate::") {
            let after = &code[i + "crate::".len()..];
            if let Some(group) = after.strip_prefix('{') {
                // use crate::{a::x, b::{y, z}}: the first segment of each path at depth 0
                let mut depth = 0;
                let mut seg = String::new();
                let mut first = true;
                for c in group.chars() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => first = true,
                        _ => {}
                    }
                    if depth == 0 && first {
                        if c.is_alphanumeric() || c == '_' {
                            seg.push(c);
                        } else if c == ':' && !seg.is_empty() {
                            edge(&seg);
                            seg.clear();
                            first = false;
                        } else if !c.is_whitespace() {
                            seg.clear();
                        }
                    }
                }
            } else {
                let t: String = after
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                edge(&t);
            }
        }
    }
    g
}

#[test]
fn top_level_modules_have_no_import_cycle() {
    let g = module_graph();
    // depth-first search for a back edge; report the cycle with the files that make it
    fn visit(
        v: &str,
        g: &BTreeMap<String, BTreeMap<String, String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(v.to_string(), 1);
        path.push(v.to_string());
        for w in g.get(v).into_iter().flat_map(|m| m.keys()) {
            match state.get(w.as_str()) {
                Some(1) => {
                    let at = path.iter().position(|x| x == w).unwrap();
                    let mut cycle = path[at..].to_vec();
                    cycle.push(w.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(w, g, state, path) {
                        return Some(c);
                    }
                }
            }
        }
        path.pop();
        state.insert(v.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for v in g.keys() {
        if !state.contains_key(v) {
            if let Some(cycle) = visit(v, &g, &mut state, &mut Vec::new()) {
                let why: Vec<String> = cycle
                    .windows(2)
                    .map(|w| format!("{} -> {} ({})", w[0], w[1], g[&w[0]][&w[1]]))
                    .collect();
                panic!(
                    "the top-level modules import each other in a cycle (see the layer order in \
                     src/lib.rs):\n{}",
                    why.join("\n")
                );
            }
        }
    }
}

#[test]
fn the_checks_see_what_they_measure() {
    // a function of 3 lines, braces in strings, comments and char literals not counted
    let text = "fn a() {\n    let s = \"}}{\"; // }\n}\nfn b() -> char { '{' }\ntrait T { fn c(&self); }\n";
    let f = functions(text);
    assert_eq!(f, vec![(1, "a".into(), 3), (4, "b".into(), 1)], "{f:?}");
    // the engine imports from lower layers: the graph is not empty
    let g = module_graph();
    assert!(
        g.get("sweep").is_some_and(|m| m.contains_key("core")),
        "{g:?}"
    );
    assert!(
        g.get("tui").is_some_and(|m| m.contains_key("report")),
        "{g:?}"
    );
}
