//! What Node has loaded, from `Debugger.scriptParsed`: each script's URL and source map, and the
//! translation of generated locations into original ones for reporting (stack frames, where a
//! breakpoint landed).
//!
//! Maps are loaded the first time a location in their script needs translating, once each.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::cdp::maps;
use crate::cdp::runtime::UrlForm;
use crate::cdp::urls::mapped;
use crate::debugger::model::{Location, Source};
use crate::sourcemap::{Position, SourceMap};

pub(crate) struct Scripts {
    /// How the runtime's script URLs name files.
    urls: UrlForm,
    /// `scriptId` to (URL, sourceMapURL).
    parsed: HashMap<String, (String, String)>,
    /// Maps of scripts met so far (or why one cannot be read).
    maps: HashMap<String, Result<Arc<SourceMap>, String>>,
    /// Files the user named (breakpoints): a page's URL that names one by its path's suffix is
    /// shown as that file.
    known: Vec<std::path::PathBuf>,
}

/// A CDP location (`{scriptId, lineNumber, columnNumber}`) as a [`Position`].
pub(crate) fn position(location: &Value) -> Position {
    let field = |key: &str| location[key].as_u64().unwrap_or(0) as u32;
    Position { line: field("lineNumber"), column: field("columnNumber") }
}

/// `{file, line, column}` (1-based) of a generated position.
pub(crate) fn generated_json(file: &str, position: Position) -> Value {
    json!({"file": file, "line": position.line + 1, "column": position.column + 1})
}

impl Scripts {
    pub(crate) fn new(urls: UrlForm) -> Scripts {
        Scripts { urls, parsed: HashMap::new(), maps: HashMap::new(), known: Vec::new() }
    }

    /// How the runtime's script URLs name files, from now on (a mapping was found): maps read
    /// before are read again by it.
    pub(crate) fn set_urls(&mut self, urls: UrlForm) {
        self.urls = urls;
        self.maps.clear();
    }

    /// Remembers a file the user named, to show the URLs that name it as it.
    pub(crate) fn add_known(&mut self, file: &std::path::Path) {
        if !self.known.iter().any(|k| k == file) {
            self.known.push(file.to_path_buf());
        }
    }

    /// The file a URL names: by the runtime's URL form, else a known file it names (a page's
    /// script matched by suffix), else the URL itself.
    fn file_of(&self, url: &str) -> String {
        let path = self.urls.to_path(url);
        if path != url {
            return path;
        }
        let known = self.known.iter().find(|file| self.urls.names(url, file));
        known.map_or(path, |file| file.display().to_string())
    }

    /// Records a `Debugger.scriptParsed` event.
    pub(crate) fn on_parsed(&mut self, params: &Value) {
        let text = |key: &str| params[key].as_str().unwrap_or_default().to_string();
        self.parsed.insert(text("scriptId"), (text("url"), text("sourceMapURL")));
    }

    /// The script's URL and source map URL (empty strings when unknown or absent).
    pub(crate) fn get(&self, script_id: &str) -> (String, String) {
        self.parsed.get(script_id).cloned().unwrap_or_default()
    }

    /// The id of a loaded script whose file is one of `paths` (the latest, if it loaded twice).
    pub(crate) fn find_file(&self, paths: &[&std::path::Path]) -> Option<String> {
        self.parsed
            .iter()
            .filter(|(_, (url, _))| paths.iter().any(|p| self.urls.names(url, p)))
            .max_by_key(|(id, _)| id.parse::<u64>().unwrap_or(0))
            .map(|(id, _)| id.clone())
    }

    /// The path (or URL, for `node:` scripts) of a script.
    pub(crate) fn file(&self, script_id: &str) -> String {
        self.file_of(&self.get(script_id).0)
    }

    fn map(&mut self, script_id: &str) -> Option<Arc<SourceMap>> {
        self.map_of(script_id)?.ok()
    }

    /// The source map of a script, loaded (or fetched, for a page's) once: `None` when it has
    /// none, the error when it cannot be read.
    pub(crate) fn map_of(&mut self, script_id: &str) -> Option<Result<Arc<SourceMap>, String>> {
        let (url, map_url) = self.get(script_id);
        if map_url.is_empty() {
            return None;
        }
        let urls = &self.urls;
        let loaded = self.maps.entry(script_id.to_string()).or_insert_with(|| {
            let mut map = maps::load_for_script(&url, &map_url)?;
            // An attached program elsewhere names its sources where it runs them.
            if let UrlForm::Remote(mappings) = urls {
                let text = |path: &Path| path.display().to_string();
                map.map_paths(|path| {
                    mapped(mappings, &text(path)).map_or(path.into(), PathBuf::from)
                });
            }
            Ok(Arc::new(map))
        });
        Some(loaded.clone())
    }

    /// A source a map names, as a file when it can be told (a page's, under its web root).
    pub(crate) fn source_file(&self, source: &crate::sourcemap::Source) -> String {
        match &source.path {
            Some(path) => path.display().to_string(),
            None => self.file_of(&source.name),
        }
    }

    /// Loaded scripts, in load order: `{file, url, sourceMap, originalSources}`. Node's own
    /// (`node:` URLs) and anonymous ones only with `include_internal`.
    pub(crate) fn list(&mut self, include_internal: bool) -> Vec<Source> {
        let mut ids: Vec<String> = self.parsed.keys().cloned().collect();
        ids.sort_by_key(|id| id.parse::<u64>().unwrap_or(u64::MAX));
        let mut out = Vec::new();
        for id in ids {
            let (url, map_url) = self.get(&id);
            // Node's own scripts, and Deno's (`ext:core/01_core.js`).
            let internal = url.is_empty() || url.starts_with("node:") || url.starts_with("ext:");
            if internal && !include_internal {
                continue;
            }
            let source_map = (!map_url.is_empty()).then(|| {
                let map = if map_url.starts_with("data:") { "inline".into() } else { map_url };
                let sources: Vec<String> = self
                    .map(&id)
                    .map(|m| m.sources().iter().map(|s| self.source_file(s)).collect())
                    .unwrap_or_default();
                (map, sources)
            });
            out.push(Source { file: self.file_of(&url), url, source_map });
        }
        out
    }

    /// The URLs of the scripts loaded, in load order (anonymous ones left out).
    pub(crate) fn urls(&self) -> Vec<String> {
        let mut loaded: Vec<(u64, &String)> = self
            .parsed
            .iter()
            .filter(|(_, (url, _))| !url.is_empty())
            .map(|(id, (url, _))| (id.parse().unwrap_or(u64::MAX), url))
            .collect();
        loaded.sort();
        loaded.into_iter().map(|(_, url)| url.clone()).collect()
    }

    /// The id of a loaded script whose file (or URL) is `path`.
    pub(crate) fn find(&self, path: &str) -> Option<String> {
        self.parsed
            .iter()
            .find(|(_, (url, _))| url == path || self.file_of(url) == path)
            .map(|(id, _)| id.clone())
    }

    /// One stack frame: `{function, file, line}` in original coordinates when its script has a
    /// map, with the generated position alongside.
    pub(crate) fn frame_json(&mut self, frame: &Value) -> Value {
        let mut json = self.location_json(frame);
        if let Some(object) = json.as_object_mut() {
            object.remove("column");
        }
        json
    }

    /// A frame's `{function, file, line, column}` (1-based), in original coordinates when its
    /// script has a map, with `generated` alongside.
    pub(crate) fn location_json(&mut self, frame: &Value) -> Value {
        self.location(frame).to_json()
    }

    /// A paused or async frame's location (1-based), in original coordinates when its script
    /// has a map.
    pub(crate) fn location(&mut self, frame: &Value) -> Location {
        let name =
            frame["functionName"].as_str().filter(|n| !n.is_empty()).unwrap_or("(anonymous)");
        let script_id =
            frame.pointer("/location/scriptId").and_then(Value::as_str).unwrap_or_default();
        let file = match frame["url"].as_str().filter(|u| !u.is_empty()) {
            Some(url) => self.file_of(url),
            None => self.file(script_id),
        };
        let generated = position(&frame["location"]);
        let map = self.map(script_id);
        let original = map.as_ref().and_then(|m| {
            m.original_for(generated).map(|(source, position)| (&m.sources()[source], position))
        });
        match original {
            Some((source, original)) => Location {
                function: name.into(),
                file: Some(self.source_file(source)),
                line: u64::from(original.line) + 1,
                column: Some(u64::from(original.column) + 1),
                generated: Some(generated_json(&file, generated)),
            },
            None => Location {
                function: name.into(),
                file: Some(file),
                line: u64::from(generated.line) + 1,
                column: Some(u64::from(generated.column) + 1),
                generated: None,
            },
        }
    }
}

/// A frame of an `asyncStackTrace`, which carries its location flat, shaped like a paused
/// frame (`location: {scriptId, lineNumber, columnNumber}`), without `functionLocation`.
pub(crate) fn awaiting_frame(frame: &Value) -> Value {
    json!({"functionName": frame["functionName"], "url": frame["url"],
        "location": {"scriptId": frame["scriptId"], "lineNumber": frame["lineNumber"],
                     "columnNumber": frame["columnNumber"]}})
}
