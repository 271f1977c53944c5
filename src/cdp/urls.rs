//! How a runtime's script URLs name files on disk, both ways: the `urlRegex` that makes V8 bind
//! a breakpoint in a file's scripts before they load, and the file a loaded script's URL names.
//!
//! Node and Deno load `file://` URLs: one file, one URL (spelled more than one way). A page
//! loads what a server serves (`http://127.0.0.1:5173/src/main.js`): the file on disk is the one
//! whose path ends with the URL's path, as VS Code's `webRoot` maps them. Without a web root any
//! such suffix matches (`/main.js` and `/src/main.js` both name `/app/src/main.js`, `/lib/main.js`
//! does not); with one, only the path under it. This module knows no runtime and does no I/O
//! beyond asking whether a file exists.

use std::path::{Path, PathBuf};

use crate::debugger::model::PathMapping;
use crate::debugger::paths::{self, components};

/// Where a program's files are here: the mappings (given or guessed) of one attached to that
/// runs them from elsewhere; none for one that runs them here. Node and Deno keep one.
#[derive(Clone, Debug, Default)]
pub(crate) struct Files(Vec<PathMapping>);

impl Files {
    /// An attached program's, with the mappings the call gave.
    pub(crate) fn attached(mappings: Vec<PathMapping>) -> Files {
        Files(mappings)
    }

    /// `file://` URLs as they are until a mapping says the program runs elsewhere (a program
    /// attached on this machine keeps its paths, a missing file among them unmarked).
    pub(crate) fn form(&self) -> UrlForm {
        match self.0.is_empty() {
            true => UrlForm::File,
            false => UrlForm::Remote(self.0.clone()),
        }
    }

    /// Adds a mapping found once attached (guessed).
    pub(crate) fn map(&mut self, mapping: PathMapping) {
        self.0.push(mapping);
    }
}

/// How a runtime's script URLs name files.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum UrlForm {
    /// `file://` URLs (Node, Deno).
    File,
    /// `file://` URLs of a program attached to, which may run its files from elsewhere (a
    /// container's `/app`): each mapping's `remote` folder is its `local` one here; a file
    /// outside them that is not here is shown marked remote.
    Remote(Vec<PathMapping>),
    /// A page's URLs: a served file is the one on disk whose path ends with the URL's path.
    #[allow(dead_code)] // until the browser runtime constructs it
    Web {
        /// Where the server's `/` is on disk: given (`webRoot`), or the working directory.
        root: PathBuf,
        /// The root was given: only paths under it match, not any suffix.
        strict: bool,
    },
}

impl UrlForm {
    /// The file a script URL names (`file:///a%20b.js` is `/a b.js`; a served URL is the file
    /// under the web root when it is there). Other URLs (`node:internal/main`, a page's URL
    /// whose file is not found) come back as they are.
    pub(crate) fn to_path(&self, url: &str) -> String {
        match self {
            UrlForm::File => file_url_to_path(url),
            UrlForm::Remote(mappings) if url.starts_with("file://") => {
                local_path(mappings, file_url_to_path(url))
            }
            UrlForm::Remote(_) => url.to_string(),
            UrlForm::Web { root, .. } => match url_path(url) {
                Some(path) if url.starts_with("file://") => path,
                Some(path) => {
                    let file =
                        crate::sourcemap::normalize(&root.join(path.trim_start_matches('/')));
                    if file.is_file() {
                        file.display().to_string()
                    } else {
                        url.to_string()
                    }
                }
                None => url.to_string(),
            },
        }
    }

    /// Whether a script's URL names `file` (absolute).
    pub(crate) fn names(&self, url: &str, file: &Path) -> bool {
        match self {
            UrlForm::File => {
                url.starts_with("file://") && file_url_to_path(url) == *file.to_string_lossy()
            }
            UrlForm::Remote(_) => {
                url.starts_with("file://") && Path::new(&self.to_path(url)) == file
            }
            UrlForm::Web { root, strict } => {
                let Some(path) = url_path(url) else { return false };
                if url.starts_with("file://") {
                    return Path::new(&path) == file;
                }
                if *strict {
                    return root.join(path.trim_start_matches('/')) == file;
                }
                let served = components(Path::new(&path));
                let on_disk = components(file);
                !served.is_empty() && on_disk.ends_with(&served)
            }
        }
    }

    /// A `urlRegex` for `Debugger.setBreakpointByUrl` that matches every URL `paths` load under.
    pub(crate) fn regex(&self, paths: &[&Path]) -> String {
        match self {
            UrlForm::File => file_url_regex(paths),
            UrlForm::Remote(mappings) => {
                let remote: Vec<PathBuf> = paths.iter().map(|p| remote_path(mappings, p)).collect();
                let remote: Vec<&Path> = remote.iter().map(PathBuf::as_path).collect();
                file_url_regex(&remote)
            }
            UrlForm::Web { root, strict } => {
                let alternatives: Vec<String> = paths
                    .iter()
                    .map(|path| match path.strip_prefix(root) {
                        Ok(under) if *strict => {
                            let parts: Vec<String> = components(under);
                            parts.iter().map(|p| path_pattern(p)).collect::<Vec<_>>().join("/")
                        }
                        // Outside the web root the server does not serve it: nothing matches.
                        Err(_) if *strict => "(?!)".to_string(),
                        _ => suffix_pattern(&components(path)),
                    })
                    .collect();
                // Any scheme and host (a page's own server, a `file://` page with an empty
                // host); a query or fragment after the path (`?v=3f2a`, `?t=1700000000`).
                // `./` segments: webpack names its modules `webpack://app/./src/a.js`.
                format!(
                    "^[a-z][a-z0-9+.-]*://[^/]*/(?:\\./)*(?:{})(?:[?#].*)?$",
                    alternatives.join("|")
                )
            }
        }
    }
}

/// Where a file of an attached program's is here: under a mapping's `local` folder, else where
/// it is, marked remote when it is not here.
fn local_path(mappings: &[PathMapping], path: String) -> String {
    mapped(mappings, &path).unwrap_or_else(|| paths::shown(path))
}

/// A path of an attached program's under one of `mappings`, as the local file (a source map's
/// sources too: one outside them keeps its path, its text being the map's).
pub(crate) fn mapped(mappings: &[PathMapping], path: &str) -> Option<String> {
    mappings.iter().find_map(|m| {
        let rest = path.strip_prefix(&m.remote)?;
        let rest = rest.strip_prefix('/').or(rest.is_empty().then_some(""))?;
        Some(m.local.join(rest).display().to_string())
    })
}

/// Where the program finds a local file: under a mapping's `remote` folder, or where it is.
fn remote_path(mappings: &[PathMapping], path: &Path) -> PathBuf {
    if let Some(remote) = path.to_str().and_then(paths::unmarked) {
        return PathBuf::from(remote);
    }
    mappings
        .iter()
        .find_map(|m| Some(Path::new(&m.remote).join(path.strip_prefix(&m.local).ok()?)))
        .unwrap_or_else(|| path.to_path_buf())
}

/// `a/b/c.js` as a pattern matching `c.js`, `b/c.js` and `a/b/c.js`: any tail of the path
/// that keeps its file name.
fn suffix_pattern(parts: &[String]) -> String {
    let Some((name, dirs)) = parts.split_last() else { return String::new() };
    let mut prefix = String::new();
    for dir in dirs {
        prefix = format!("(?:{prefix}{}/)?", path_pattern(dir));
    }
    format!("{prefix}{}", path_pattern(name))
}

/// The percent-decoded path of a URL with a scheme (`http://h:1/a%20b.js?x` is `/a b.js`).
fn url_path(url: &str) -> Option<String> {
    let (_, rest) = url.split_once("://")?;
    let path = &rest[rest.find('/')?..];
    let path = path.split(['?', '#']).next().unwrap_or(path);
    Some(crate::sourcemap::percent_decode(path))
}

/// A `urlRegex` that matches the `file://` URL of any of `paths`, however the runtime spells
/// it: Node percent-encodes more than WHATWG asks (`[`, `^`, `|`, `~` included), and not every
/// version the same, so every character that is not plainly safe matches both its literal and
/// its encoded form.
pub(crate) fn file_url_regex(paths: &[&Path]) -> String {
    let alternatives: Vec<String> =
        paths.iter().map(|path| path_pattern(&path.to_string_lossy())).collect();
    format!("^file://(?:{})$", alternatives.join("|"))
}

/// A regex for a path as a URL spells it: safe characters as they are, every other one as
/// itself or percent-encoded.
fn path_pattern(path: &str) -> String {
    let mut regex = String::new();
    for c in path.chars() {
        if c.is_ascii_alphanumeric() || c == '/' || c == '-' || c == '_' {
            regex.push(c);
            continue;
        }
        let mut utf8 = [0u8; 4];
        let encoded: String = c
            .encode_utf8(&mut utf8)
            .bytes()
            .map(|b| format!("%{}{}", hex_digit(b >> 4), hex_digit(b & 15)))
            .collect();
        let literal = if c.is_ascii() { format!("\\x{:02x}", c as u32) } else { c.to_string() };
        regex.push_str(&format!("(?:{literal}|{encoded})"));
    }
    regex
}

/// The path of a `file://` URL, percent-decoded; other URLs (`node:internal/...`) unchanged.
/// Whether a file (a frame's, as `Scripts` names it) is the program's own code: not the
/// runtime's (`node:`, `internal/`, Deno's `ext:`), nor an installed package's (`node_modules`,
/// Deno's npm cache).
pub(crate) fn is_own(file: &str) -> bool {
    !(file.is_empty()
        || file.starts_with("node:")
        || file.starts_with("ext:")
        || file.starts_with("internal/")
        || file.contains("/node_modules/")
        || file.contains("/deno/npm/"))
}

pub(crate) fn file_url_to_path(url: &str) -> String {
    match url.strip_prefix("file://") {
        Some(path) => crate::sourcemap::percent_decode(path),
        None => url.to_string(),
    }
}

/// A regex for one hex digit in either case.
fn hex_digit(nibble: u8) -> String {
    match nibble {
        0..=9 => char::from(b'0' + nibble).to_string(),
        _ => {
            let upper = char::from(b'A' + nibble - 10);
            format!("[{upper}{}]", upper.to_ascii_lowercase())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_urls_decode() {
        assert_eq!(file_url_to_path("file:///a%20b/%C3%A9%23.js"), "/a b/é#.js");
        assert_eq!(file_url_to_path("file:///100%"), "/100%");
        assert_eq!(file_url_to_path("node:internal/main"), "node:internal/main");
    }

    #[test]
    fn remote_file_urls_name_local_files() {
        let mapping =
            PathMapping { remote: "/app".into(), local: PathBuf::from("/home/me/project") };
        let remote = UrlForm::Remote(vec![mapping]);
        assert_eq!(remote.to_path("file:///app/src/a.js"), "/home/me/project/src/a.js");
        assert_eq!(remote.to_path("file:///application/a.js"), "remote:/application/a.js");
        // Attached on this machine (no mapping given or guessed): paths as they are.
        let mut here = Files::attached(Vec::new());
        assert_eq!(here.form(), UrlForm::File);
        assert_eq!(here.form().to_path("file:///application/a.js"), "/application/a.js");
        here.map(PathMapping { remote: "/app".into(), local: PathBuf::from("/home/me/project") });
        assert_eq!(here.form(), remote);
        assert_eq!(remote.to_path("file:///"), "/");
        assert_eq!(remote.to_path("node:internal/main"), "node:internal/main");
        let file = Path::new("/home/me/project/src/a.js");
        assert!(remote.names("file:///app/src/a.js", file));
        assert!(!remote.names("file:///app/src/b.js", file));
        assert_eq!(remote.regex(&[file]), file_url_regex(&[Path::new("/app/src/a.js")]));
        // A breakpoint given as an answer showed a file that is not here: the program's path.
        let marked = Path::new("remote:/usr/lib/x.js");
        assert!(remote.names("file:///usr/lib/x.js", marked));
        assert_eq!(remote.regex(&[marked]), file_url_regex(&[Path::new("/usr/lib/x.js")]));
    }

    #[test]
    fn url_regex_matches_both_spellings() {
        let regex = file_url_regex(&[Path::new("/a b/é#[x].js")]);
        assert_eq!(
            regex,
            r"^file://(?:/a(?:\x20|%20)b/(?:é|%[Cc]3%[Aa]9)(?:\x23|%23)(?:\x5b|%5[Bb])x(?:\x5d|%5[Dd])(?:\x2e|%2[Ee])js)$"
        );
    }

    /// A small regex engine is not at hand: the patterns are checked by their text, and which
    /// URLs name which files by `names` (the same rule, said once more).
    #[test]
    fn web_urls_match_by_path_suffix() {
        let web = UrlForm::Web { root: PathBuf::from("/srv/app"), strict: false };
        assert_eq!(
            web.regex(&[Path::new("/srv/app/src/a.js")]),
            r"^[a-z][a-z0-9+.-]*://[^/]*/(?:\./)*(?:(?:(?:(?:srv/)?app/)?src/)?a(?:\x2e|%2[Ee])js)(?:[?#].*)?$"
        );
        let file = Path::new("/srv/app/src/a.js");
        let check = |form: &UrlForm, url: &str, expected: bool| {
            assert_eq!(form.names(url, file), expected, "{form:?} {url}");
        };
        check(&web, "http://127.0.0.1:5173/src/a.js", true);
        check(&web, "http://127.0.0.1:5173/a.js?v=12", true);
        check(&web, "http://127.0.0.1:5173/lib/a.js", false);
        check(&web, "file:///srv/app/src/a.js", true);
        check(&web, "file:///other/src/a.js", false);
        let strict = UrlForm::Web { root: PathBuf::from("/srv/app"), strict: true };
        assert_eq!(
            strict.regex(&[file]),
            r"^[a-z][a-z0-9+.-]*://[^/]*/(?:\./)*(?:src/a(?:\x2e|%2[Ee])js)(?:[?#].*)?$"
        );
        check(&web, "webpack://app/./src/a.js", true);
        check(&strict, "http://localhost/src/a.js#x", true);
        check(&strict, "http://localhost/a.js", false);
        assert_eq!(web.to_path("http://h/no/such/file.js"), "http://h/no/such/file.js");
        assert_eq!(web.to_path("file:///x%20y.js"), "/x y.js");
    }
}
