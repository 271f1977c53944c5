//! Finding the source maps that cover a file: on disk before the program runs (the command's
//! script and the files around it), and from `Debugger.scriptParsed` while it runs.
//!
//! A breakpoint in `src/app.ts` must become a breakpoint in the JavaScript Node runs. When the
//! JavaScript is on disk (tsc output, a bundle), its `//# sourceMappingURL=` comment leads to
//! the map (a file or an inline `data:` URL) and the breakpoint is set by the generated file's
//! URL before anything runs. When code is compiled while it loads (tsx, ts-node), nothing is on
//! disk; `cdp/script.rs` then stops the module before its body runs and uses the map that
//! `scriptParsed` carries, through [`load_for_script`].

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::sourcemap::{self, SourceMap};

/// A generated file whose map covers the breakpoint's file.
#[derive(Debug, Clone)]
pub(crate) struct Covered {
    /// The generated JavaScript file (symlinks resolved: its URL is what Node reports).
    pub(crate) generated: PathBuf,
    pub(crate) map: Arc<SourceMap>,
    /// The breakpoint file's index in `map.sources()`.
    pub(crate) source: usize,
}

/// What the search found, and what it looked at (for the error when nothing covers the file).
#[derive(Debug, Default)]
pub(crate) struct Search {
    pub(crate) covered: Vec<Covered>,
    pub(crate) looked_at: Vec<String>,
}

/// Files scanned at most, and directory depth, so a search never walks a whole disk.
const MAX_FILES: usize = 2000;
const MAX_DEPTH: usize = 4;
/// Larger JavaScript files are not read for their map comment.
const MAX_SCRIPT_BYTES: u64 = 64 * 1024 * 1024;

/// Whether a file is JavaScript Node runs as it is; anything else (`.ts`, `.tsx`, `.vue`, ...)
/// can only run compiled, so a breakpoint in it needs a map.
pub(crate) fn is_javascript(file: &Path) -> bool {
    matches!(file.extension().and_then(|e| e.to_str()), Some("js" | "mjs" | "cjs"))
}

/// Looks for maps covering `file`: in `entry` (the command's script) first, then in the
/// JavaScript files under the entry's directory (not `node_modules`, not hidden folders).
pub(crate) fn search(file: &Path, entry: Option<&Path>) -> Search {
    let mut search = Search::default();
    let entry = entry.and_then(|e| fs::canonicalize(e).ok());
    if entry.as_deref() == Some(file) {
        // The breakpoint is in the script Node runs: nothing to map.
        return search;
    }
    // A set: the entry is also among the scripts of its folder, and a script read twice would
    // carry the breakpoint twice (V8 refuses the second: "Breakpoint at specified location
    // already exists").
    let mut candidates = BTreeSet::new();
    if let Some(entry) = entry {
        if let Some(dir) = entry.parent() {
            collect_scripts(dir, 0, &mut candidates);
        }
        candidates.insert(entry);
    }
    // A file that exists only in a map's `sourcesContent` (a package that ships its build
    // and map, not its `src/`): its builds are near where it would be.
    if let Some(dir) = absent_file_base(file) {
        collect_scripts(&dir, 0, &mut candidates);
    }
    if candidates.is_empty() {
        return search;
    }
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    for script in candidates.iter().filter(|c| is_javascript(c)) {
        match map_of_script(script, &name) {
            Ok(Some(map)) => match map.find_source(file) {
                Some(source) => {
                    search.covered.push(Covered { generated: script.clone(), map, source })
                }
                None => search.looked_at.push(format!(
                    "{} (its map lists {})",
                    script.display(),
                    list_sources(&map)
                )),
            },
            Ok(None) => search.looked_at.push(format!("{} (no source map)", script.display())),
            Err(e) => search.looked_at.push(format!("{} ({e})", script.display())),
        }
    }
    search
}

/// For a file that is not on disk, the nearest existing folder above it (at most
/// [`MAX_DEPTH`] levels up), where the build that lists it in its map would be.
fn absent_file_base(file: &Path) -> Option<PathBuf> {
    if file.exists() {
        return None;
    }
    file.ancestors().skip(1).take(MAX_DEPTH).find(|dir| dir.is_dir()).map(Path::to_path_buf)
}

/// The text of a source file that is not on disk but that a map near it carries in
/// `sourcesContent` (see [`search`]). Answers are kept: a stop in such a file asks each time.
pub(crate) fn original_text(file: &Path) -> Option<Arc<str>> {
    const KEEP: usize = 16;
    static KNOWN: std::sync::Mutex<Vec<(PathBuf, Arc<str>)>> = std::sync::Mutex::new(Vec::new());
    let file = sourcemap::normalize(file);
    let mut known = KNOWN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, text)) = known.iter().find(|(path, _)| *path == file) {
        return Some(text.clone());
    }
    let found = search(&file, None).covered.into_iter().find_map(|covered| {
        let json = map_text_of(&covered.generated).ok()?;
        sourcemap::source_content(&json, covered.source)
    })?;
    let text: Arc<str> = found.into();
    if known.len() == KEEP {
        known.remove(0);
    }
    known.push((file, text.clone()));
    Some(text)
}

/// The JSON text of a script's map (inline or a file beside it).
fn map_text_of(script: &Path) -> Result<String, String> {
    let text = fs::read_to_string(script).map_err(|e| e.to_string())?;
    let url = source_mapping_url(&text).ok_or("no source map")?;
    if url.starts_with("data:") {
        return sourcemap::data_url_text(url);
    }
    let path = map_path(script.parent().unwrap_or(Path::new("/")), url);
    fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))
}

fn list_sources(map: &SourceMap) -> String {
    let names: Vec<&str> = map.sources().iter().map(|s| s.name.as_str()).take(5).collect();
    let more = map.sources().len().saturating_sub(names.len());
    match more {
        0 => names.join(", "),
        n => format!("{} and {n} more", names.join(", ")),
    }
}

fn collect_scripts(dir: &Path, depth: usize, out: &mut BTreeSet<PathBuf>) {
    if depth > MAX_DEPTH || out.len() >= MAX_FILES {
        return;
    }
    let Ok(entries) = fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        if out.len() >= MAX_FILES {
            return;
        }
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name == "node_modules" {
            continue;
        }
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => collect_scripts(&path, depth + 1, out),
            Ok(_) if is_javascript(&path) => {
                if let Ok(real) = fs::canonicalize(&path) {
                    out.insert(real);
                }
            }
            _ => {}
        }
    }
}

/// The map a JavaScript file on disk points to, if any.
pub(crate) fn map_of(script: &Path) -> Result<Option<Arc<SourceMap>>, String> {
    map_of_script(script, "")
}

/// The map a JavaScript file on disk points to, if any. A map that does not mention
/// `wanted_name` (the breakpoint file's name) is not parsed: it cannot cover it.
fn map_of_script(script: &Path, wanted_name: &str) -> Result<Option<Arc<SourceMap>>, String> {
    let size = fs::metadata(script).map_err(|e| e.to_string())?.len();
    if size > MAX_SCRIPT_BYTES {
        return Err(format!("larger than {} MiB, not read", MAX_SCRIPT_BYTES >> 20));
    }
    // The comment is at the end: read the tail, and the whole file only for an inline map.
    let tail = read_tail(script, TAIL_BYTES).map_err(|e| e.to_string())?;
    let Some(url) = source_mapping_url(&tail) else { return Ok(None) };
    let dir = script.parent().unwrap_or(Path::new("/"));
    let mentions = |json: &str| wanted_name.is_empty() || json.contains(wanted_name);
    if url.starts_with("data:") {
        let text = if url.len() + 64 < tail.len() || size <= TAIL_BYTES {
            tail.clone()
        } else {
            fs::read_to_string(script).map_err(|e| e.to_string())?
        };
        let url = source_mapping_url(&text).unwrap_or(url);
        let json = sourcemap::data_url_text(url)?;
        if !mentions(&json) {
            return Err(format!("its inline map does not mention {wanted_name}"));
        }
        return SourceMap::parse(&json, Some(dir)).map(|m| Some(Arc::new(m)));
    }
    let path = map_path(dir, url);
    let json = fs::read_to_string(&path).map_err(|e| format!("its map {}: {e}", path.display()))?;
    if !mentions(&json) {
        return Err(format!("its map {} does not mention {wanted_name}", path.display()));
    }
    let base = path.parent().unwrap_or(dir);
    SourceMap::parse(&json, Some(base))
        .map(|m| Some(Arc::new(m)))
        .map_err(|e| format!("its map {}: {e}", path.display()))
}

/// How much of a script's end is read to find its map comment.
const TAIL_BYTES: u64 = 4096;

fn read_tail(path: &Path, bytes: u64) -> std::io::Result<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = fs::File::open(path)?;
    let len = file.metadata()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(bytes)))?;
    let mut tail = Vec::with_capacity(bytes as usize);
    file.read_to_end(&mut tail)?;
    Ok(String::from_utf8_lossy(&tail).into_owned())
}

/// A map URL relative to the directory of the file that names it (or a `file://` URL).
fn map_path(dir: &Path, url: &str) -> PathBuf {
    let url = url.split(['?', '#']).next().unwrap_or(url);
    match url.strip_prefix("file://") {
        Some(path) => PathBuf::from(sourcemap::percent_decode(path)),
        None => sourcemap::normalize(&dir.join(sourcemap::percent_decode(url))),
    }
}

/// The URL in the last `//# sourceMappingURL=` (or legacy `//@`) comment of a script.
fn source_mapping_url(text: &str) -> Option<&str> {
    let at = text.rfind("sourceMappingURL=")?;
    let before = text[..at].trim_end_matches(' ');
    if !(before.ends_with("//#") || before.ends_with("//@") || before.ends_with("/*#")) {
        return None;
    }
    let url = text[at + "sourceMappingURL=".len()..].split_whitespace().next()?;
    let url = url.strip_suffix("*/").unwrap_or(url);
    (!url.is_empty()).then_some(url)
}

/// The map of a script Node parsed: `source_map_url` from `Debugger.scriptParsed`, relative
/// to the script's URL when it is not a `data:` URL.
pub(crate) fn load_for_script(script_url: &str, source_map_url: &str) -> Result<SourceMap, String> {
    if script_url.starts_with("http://") || script_url.starts_with("https://") {
        return load_for_served(script_url, source_map_url);
    }
    let script_path = script_url.strip_prefix("file://").map(sourcemap::percent_decode);
    let dir = script_path.as_deref().map(Path::new).and_then(Path::parent).map(Path::to_path_buf);
    if source_map_url.starts_with("data:") {
        let json = sourcemap::data_url_text(source_map_url)?;
        return SourceMap::parse(&json, dir.as_deref());
    }
    let dir =
        dir.ok_or_else(|| format!("cannot place the map {source_map_url} of {script_url}"))?;
    let path = map_path(&dir, source_map_url);
    let json = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    SourceMap::parse(&json, path.parent())
}

/// The map of a script a page loaded from a server: inline, or fetched from that server as
/// DevTools would (a dev server keeps its maps in memory, not on disk).
fn load_for_served(script_url: &str, source_map_url: &str) -> Result<SourceMap, String> {
    if source_map_url.starts_with("data:") {
        let json = sourcemap::data_url_text(source_map_url)?;
        return SourceMap::parse_at_url(&json, script_url);
    }
    let map_url = sourcemap::join_url(script_url, source_map_url);
    // Only from the server that served the script: a map elsewhere is not fetched.
    if origin(&map_url) != origin(script_url) {
        return Err(format!("its map {map_url} is on another server than the script; not fetched"));
    }
    let rest = map_url.strip_prefix("http://").ok_or_else(|| {
        format!("its map {map_url} is not fetched: only plain http (a local dev server) is")
    })?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(':') => {
            (host, port.parse().map_err(|_| format!("no port in {map_url}"))?)
        }
        _ => (authority, 80),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let json = crate::cdp::http_get(host, port, path, MAP_FETCH_TIMEOUT, MAX_MAP_BYTES)
        .map_err(|e| format!("its map {map_url}: {e}"))?;
    SourceMap::parse_at_url(&json, &map_url).map_err(|e| format!("its map {map_url}: {e}"))
}

/// `http://host:port` of a URL.
fn origin(url: &str) -> Option<&str> {
    let (scheme, rest) = url.split_once("://")?;
    Some(&url[..scheme.len() + 3 + rest.find('/').unwrap_or(rest.len())])
}

/// How long fetching one source map may take, and its size at most.
const MAP_FETCH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
const MAX_MAP_BYTES: u64 = 256 * 1024 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_map_comment() {
        let check = |text: &str, expected: Option<&str>| {
            assert_eq!(source_mapping_url(text), expected, "{text}");
        };
        check("x;\n//# sourceMappingURL=app.js.map\n", Some("app.js.map"));
        check("x;\n//@ sourceMappingURL=app.js.map", Some("app.js.map"));
        check("x;\n/*# sourceMappingURL=app.css.map */", Some("app.css.map"));
        check(
            "x;\n//# sourceMappingURL=data:application/json;base64,eyJ9\n",
            Some("data:application/json;base64,eyJ9"),
        );
        check("let s = 'sourceMappingURL=nope';", None);
        check("x;", None);
    }

    #[test]
    fn resolves_map_paths() {
        assert_eq!(
            map_path(Path::new("/p/dist"), "app.js.map"),
            PathBuf::from("/p/dist/app.js.map")
        );
        assert_eq!(
            map_path(Path::new("/p/dist"), "../maps/a%20b.map?v=1"),
            PathBuf::from("/p/maps/a b.map")
        );
        assert_eq!(
            map_path(Path::new("/p/dist"), "file:///m/app.map"),
            PathBuf::from("/m/app.map")
        );
    }
}
