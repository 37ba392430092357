//! Paths in a preset: `~` and environment variables expanded, relative paths made absolute.

use std::path::{Path, PathBuf};

/// `raw` with a leading `~` (alone or before `/`) replaced by the home directory and `$NAME` /
/// `${NAME}` by the variable's value (`$$` is a literal `$`), joined to `base` when relative.
/// An unset (or empty) variable is an error naming it.
pub fn expand(raw: &str, base: &Path) -> Result<PathBuf, String> {
    expand_with(raw, base, &|name| std::env::var_os(name), dirs::home_dir)
}

/// [`expand`] with the environment and home directory given (tests).
pub fn expand_with(
    raw: &str,
    base: &Path,
    var: &dyn Fn(&str) -> Option<std::ffi::OsString>,
    home: fn() -> Option<PathBuf>,
) -> Result<PathBuf, String> {
    let mut out = String::new();
    let rest = if raw == "~" || raw.starts_with("~/") {
        let h = home().ok_or_else(|| format!("`{raw}`: there is no home directory to expand ~"))?;
        out.push_str(&h.to_string_lossy());
        &raw[1..]
    } else {
        raw
    };
    let mut chars = rest.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        let name: String = match chars.peek() {
            Some((_, '$')) => {
                chars.next();
                out.push('$');
                continue;
            }
            Some((_, '{')) => {
                chars.next();
                let mut n = String::new();
                loop {
                    match chars.next() {
                        Some((_, '}')) => break,
                        Some((_, ch)) => n.push(ch),
                        None => {
                            return Err(format!("`{raw}`: `${{` at byte {i} is not closed by `}}`"))
                        }
                    }
                }
                n
            }
            _ => {
                let mut n = String::new();
                while let Some(&(_, ch)) = chars.peek() {
                    if ch.is_ascii_alphanumeric() || ch == '_' {
                        n.push(ch);
                        chars.next();
                    } else {
                        break;
                    }
                }
                n
            }
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "`{raw}`: `$` must start a variable ($NAME or ${{NAME}}; $$ for a literal $)"
            ));
        }
        match var(&name) {
            Some(v) if !v.is_empty() => out.push_str(&v.to_string_lossy()),
            _ => {
                return Err(format!(
                    "`{raw}`: the environment variable {name} is not set"
                ))
            }
        }
    }
    let p = PathBuf::from(out);
    Ok(if p.is_absolute() { p } else { base.join(p) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<std::ffi::OsString> {
        match name {
            "DATA" => Some("/srv/data".into()),
            "EMPTY" => Some("".into()),
            _ => None,
        }
    }
    fn home() -> Option<PathBuf> {
        Some(PathBuf::from("/home/u"))
    }

    #[test]
    fn expands_home_variables_and_relative_paths() {
        let base = Path::new("/p/presets");
        let e = |s: &str| expand_with(s, base, &env, home);
        assert_eq!(e("~/c10").unwrap(), PathBuf::from("/home/u/c10"));
        assert_eq!(e("~").unwrap(), PathBuf::from("/home/u"));
        assert_eq!(e("$DATA/x.bin").unwrap(), PathBuf::from("/srv/data/x.bin"));
        assert_eq!(e("${DATA}x").unwrap(), PathBuf::from("/srv/datax"));
        assert_eq!(e("a/b").unwrap(), PathBuf::from("/p/presets/a/b"));
        assert_eq!(e("../d").unwrap(), PathBuf::from("/p/presets/../d"));
        assert_eq!(e("/abs").unwrap(), PathBuf::from("/abs"));
        assert_eq!(e("a$$b").unwrap(), PathBuf::from("/p/presets/a$b"));
        // `~user` is a file name, not a home directory
        assert_eq!(e("~x").unwrap(), PathBuf::from("/p/presets/~x"));
        for (bad, says) in [
            ("$NOPE/x", "NOPE is not set"),
            ("${NOPE}", "NOPE is not set"),
            ("$EMPTY/x", "EMPTY is not set"),
            ("${DATA", "not closed"),
            ("a$/b", "must start a variable"),
        ] {
            let m = e(bad).unwrap_err();
            assert!(m.contains(says) && m.contains(bad), "{bad}: {m}");
        }
        // what it returns expands to itself
        let once = e("$DATA/y").unwrap();
        assert_eq!(e(once.to_str().unwrap()).unwrap(), once);
    }
}
