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

/// The text with every `#[cfg(test)]` item (an inline `mod tests { … }`, a test-only `fn`, `use`
/// or `impl`) blanked, newlines kept; `code` is already [`code_only`]'s output. A declaration
/// `#[cfg(test)] mod x;` is blanked too: its file is test code, found by [`test_only_files`].
fn without_test_items(code: &[char]) -> Vec<char> {
    let mut out = code.to_vec();
    let pat: Vec<char> = "#[cfg(test)]".chars().collect();
    let n = code.len();
    let mut i = 0;
    while i + pat.len() <= n {
        if code[i..i + pat.len()] != pat[..] {
            i += 1;
            continue;
        }
        // the item ends at its first `;` outside brackets, or at the `}` closing its first `{`
        let mut j = i + pat.len();
        let (mut depth, mut end) = (0i32, n);
        while j < n {
            match code[j] {
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                ';' if depth == 0 => {
                    end = j + 1;
                    break;
                }
                '{' if depth == 0 => {
                    let mut d = 0;
                    while j < n {
                        match code[j] {
                            '{' => d += 1,
                            '}' => {
                                d -= 1;
                                if d == 0 {
                                    break;
                                }
                            }
                            _ => {}
                        }
                        j += 1;
                    }
                    end = (j + 1).min(n);
                    break;
                }
                _ => {}
            }
            j += 1;
        }
        for c in &mut out[i..end] {
            if *c != '\n' {
                *c = ' ';
            }
        }
        i = end;
    }
    out
}

/// The first segment of each path of a `{a::x, b::{y, z}, c}` group (the text after its `{`).
fn group_heads(group: &str) -> Vec<String> {
    let (mut depth, mut seg, mut first) = (0, String::new(), true);
    let mut out = Vec::new();
    for c in group.chars() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                if first && !seg.is_empty() {
                    out.push(std::mem::take(&mut seg));
                }
                seg.clear();
                first = true;
                continue;
            }
            _ => {}
        }
        if depth == 0 && first {
            if c.is_alphanumeric() || c == '_' {
                seg.push(c);
            } else if c == ':' && !seg.is_empty() {
                out.push(std::mem::take(&mut seg));
                first = false;
            } else if !c.is_whitespace() {
                seg.clear();
            }
        }
    }
    if first && !seg.is_empty() {
        out.push(seg);
    }
    out
}

/// The module path of a file under `root` (`a/b.rs` and `a/b/mod.rs` → [a, b]).
fn module_path(root: &Path, p: &Path) -> Vec<String> {
    let r = p.strip_prefix(root).unwrap();
    let mut parts: Vec<String> = r.iter().map(|s| s.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap();
    if last != "mod.rs" {
        parts.push(last.trim_end_matches(".rs").to_string());
    }
    parts
}

/// Files that only tests compile: declared `#[cfg(test)] mod x;` (optionally with `#[path]`) in
/// their parent, and everything below them.
fn test_only_files(root: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let decl = |text: &str| -> Vec<(String, Option<String>)> {
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let mut found = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            if *l != "#[cfg(test)]" {
                continue;
            }
            let (mut path, mut k) = (None, i + 1);
            while let Some(a) = lines.get(k).filter(|a| a.starts_with("#[")) {
                if let Some(v) = a.strip_prefix("#[path = \"") {
                    path = v.strip_suffix("\"]").map(str::to_string);
                }
                k += 1;
            }
            let item = lines.get(k).copied().unwrap_or("");
            let item = item
                .strip_prefix("pub(crate) ")
                .or_else(|| item.strip_prefix("pub(super) "))
                .or_else(|| item.strip_prefix("pub "))
                .unwrap_or(item);
            if let Some(name) = item.strip_prefix("mod ").and_then(|m| m.strip_suffix(';')) {
                found.push((name.trim().to_string(), path));
            }
        }
        found
    };
    for p in rust_files(root) {
        let text = std::fs::read_to_string(&p).unwrap();
        let name = p.file_name().unwrap().to_string_lossy();
        // children of a/mod.rs, lib.rs or main.rs live in a/; of a/b.rs in a/b/
        let dir = if name == "mod.rs"
            || p.parent() == Some(root) && (name == "lib.rs" || name == "main.rs")
        {
            p.parent().unwrap().to_path_buf()
        } else {
            p.with_extension("")
        };
        for (m, path) in decl(&text) {
            match path {
                Some(rel) => {
                    out.insert(p.parent().unwrap().join(rel));
                }
                None => {
                    out.insert(dir.join(format!("{m}.rs")));
                    out.insert(dir.join(&m).join("mod.rs"));
                }
            }
        }
    }
    let all = rust_files(root);
    let dirs: Vec<PathBuf> = out.iter().map(|f| f.with_extension("")).collect();
    for f in &all {
        if dirs.iter().any(|d| f.starts_with(d)) {
            out.insert(f.clone());
        }
    }
    out
}

/// Top-level module → (module it imports → a file that makes the edge), from every non-test line
/// of every file under `root`: `crate::a` paths (grouped `crate::{a::x, b::{y}}` too) and
/// `super::` chains that climb to the crate root.
fn module_graph_of(root: &Path) -> BTreeMap<String, BTreeMap<String, String>> {
    let mods: BTreeSet<String> = std::fs::read_dir(root)
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
    let tests = test_only_files(root);
    let mut g: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for p in rust_files(root) {
        let path = module_path(root, &p);
        let Some(me) = path.first().cloned().filter(|m| mods.contains(m)) else {
            continue;
        };
        if tests.contains(&p) {
            continue;
        }
        let r = p
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(&p).unwrap();
        let code: String = without_test_items(&code_only(&text)).into_iter().collect();
        let mut edge = |t: &str| {
            if mods.contains(t) && t != me {
                g.entry(me.clone())
                    .or_default()
                    .entry(t.to_string())
                    .or_insert_with(|| format!("src/{r}"));
            }
        };
        let ident = |s: &str| -> String {
            s.chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        };
        for (i, _) in code.match_indices("crate::") {
            if code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                continue; // `scaling_crate::` and the like
            }
            let after = &code[i + "crate::".len()..];
            match after.strip_prefix('{') {
                Some(group) => group_heads(group).iter().for_each(|t| edge(t)),
                None => edge(&ident(after)),
            }
        }
        // super::…::super::x from a module at depth d reaches the crate root after d supers
        for (i, _) in code.match_indices("super::") {
            if code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
                continue; // counted from the chain's first `super`
            }
            let mut rest = &code[i..];
            let mut ups = 0;
            while let Some(r) = rest.strip_prefix("super::") {
                ups += 1;
                rest = r.trim_start();
            }
            if ups == path.len() {
                match rest.strip_prefix('{') {
                    Some(group) => group_heads(group).iter().for_each(|t| edge(t)),
                    None => edge(&ident(rest)),
                }
            }
        }
    }
    g
}

fn module_graph() -> BTreeMap<String, BTreeMap<String, String>> {
    module_graph_of(&src())
}

/// The first cycle of `g`, as its edges with the files that make them.
fn find_cycle(g: &BTreeMap<String, BTreeMap<String, String>>) -> Option<Vec<String>> {
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
            if let Some(cycle) = visit(v, g, &mut state, &mut Vec::new()) {
                return Some(
                    cycle
                        .windows(2)
                        .map(|w| format!("{} -> {} ({})", w[0], w[1], g[&w[0]][&w[1]]))
                        .collect(),
                );
            }
        }
    }
    None
}

#[test]
fn top_level_modules_have_no_import_cycle() {
    if let Some(why) = find_cycle(&module_graph()) {
        panic!(
            "the top-level modules import each other in a cycle (see the layer order in \
             src/lib.rs):\n{}",
            why.join("\n")
        );
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

/// A source tree of `files` (path under src/, text) in a temporary directory, and its graph.
fn graph_of(files: &[(&str, &str)]) -> BTreeMap<String, BTreeMap<String, String>> {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("src");
    for (path, text) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    module_graph_of(&root)
}

/// The layering check finds a cycle planted in each file layout the crate uses (a top-level file,
/// a folder's mod.rs, a nested file, a file two folders down; `crate::` paths plain and grouped,
/// `super::` chains to the root; code after a `#[cfg(test)] mod tests;` declaration), and no edge
/// from test-only code (inline test modules and items, files declared `#[cfg(test)]`).
#[test]
fn the_layering_check_finds_a_cycle_in_every_layout() {
    let base: &[(&str, &str)] = &[
        ("lib.rs", "pub mod low;\npub mod high;\npub mod top;\n"),
        ("low/mod.rs", "//! The bottom.\npub mod x;\n#[cfg(test)]\nmod tests;\n#[cfg(test)]\nmod x_tests;\n"),
        ("low/x.rs", "pub fn f() {}\n"),
        ("low/tests.rs", "use crate::high::g;\n"),
        ("low/x_tests.rs", "use crate::top::h;\n"),
        ("high/mod.rs", "pub mod y;\nuse crate::low::x::f;\n"),
        ("high/y.rs", "pub fn g() { crate::low::x::f() }\n"),
        ("top.rs", "use crate::{high::y::g, low};\npub fn h() {}\n#[cfg(test)]\nmod tests {\n    use crate::high;\n}\n"),
    ];
    let g = graph_of(base);
    assert!(
        find_cycle(&g).is_none(),
        "test-only code made an edge: {g:?}"
    );
    assert!(
        g["top"].contains_key("high") && g["top"].contains_key("low"),
        "{g:?}"
    );
    // each planted upward import, in its layout, closes a cycle naming the file
    let planted: &[(&str, &str, &str)] = &[
        (
            "low/mod.rs",
            "pub mod x;\n#[cfg(test)]\nmod tests;\nuse crate::high::y;\n",
            "src/low/mod.rs",
        ),
        (
            "low/x.rs",
            "use crate::{top::h, low};\npub fn f() {}\n",
            "src/low/x.rs",
        ),
        (
            "low/x.rs",
            "pub fn f() { super::super::high::y::g() }\n",
            "src/low/x.rs",
        ),
        (
            "low/deep/z.rs",
            "pub fn z() { crate::top::h() }\n",
            "src/low/deep/z.rs",
        ),
        (
            "low/x.rs",
            "#[cfg(test)]\nfn t() {}\npub fn f() { crate::high::y::g() }\n",
            "src/low/x.rs",
        ),
        (
            "low/x.rs",
            "use crate::{\n    high::{y::{g}},\n};\n",
            "src/low/x.rs",
        ),
    ];
    for (path, text, file) in planted {
        let mut files = base.to_vec();
        files.retain(|(p, _)| p != path);
        files.push((path, text));
        let g = graph_of(&files);
        let cycle =
            find_cycle(&g).unwrap_or_else(|| panic!("no cycle found with {path}: {text:?}\n{g:?}"));
        assert!(
            cycle.iter().any(|e| e.contains(file)),
            "{cycle:?} does not name {file}"
        );
    }
    // a top-level file module reaching the root with `super::`
    let g = graph_of(&[
        ("lib.rs", ""),
        ("a.rs", "pub fn f() { super::b::g() }\n"),
        ("b.rs", "pub fn g() { crate::a::f() }\n"),
    ]);
    assert!(find_cycle(&g).is_some(), "{g:?}");
}
