//! One breakpoint as the user asked for it (a file and a 1-based line) and the CDP breakpoints
//! that carry it into the code Node runs.
//!
//! Every way the file may run is armed at once: by the file's own URL when it is JavaScript; at
//! the mapped line and column of each generated file on disk whose source map lists it
//! (`cdp/maps.rs`); and, when it is not JavaScript, a probe at the start of the file's own URL
//! that catches it being compiled while it loads (tsx), to place the breakpoint from the map it
//! was compiled with. Where the breakpoint landed is kept in the file's own lines, with the
//! generated positions alongside.
//!
//! This module builds requests and reads answers; the caller sends them, so it serves any run
//! loop (`debug-script` now, sessions later).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::cdp::maps::{self, Search};
use crate::cdp::runtime::UrlForm;
use crate::cdp::scripts::{self, Scripts};
use crate::debugger::{Code, Failure};
use crate::sourcemap::{Position, SourceMap};

/// A `urlRegex` that matches `url` alone.
fn exact_url_regex(url: &str) -> String {
    let escaped: String = url
        .chars()
        .map(|c| match c {
            c if c.is_ascii_alphanumeric() || c == '/' || !c.is_ascii() => c.to_string(),
            c => format!("\\x{:02x}", c as u32),
        })
        .collect();
    format!("^{escaped}$")
}

/// A breakpoint to set in a generated file (the key of `Breakpoint::targets`).
#[derive(Clone)]
struct Target {
    position: Position,
    map: Arc<SourceMap>,
    source: usize,
}

#[derive(Debug, Clone, PartialEq)]
enum Probe {
    Off,
    /// A JavaScript file, watched for its load by the runner's instrumentation pause before a
    /// script with a source map runs (`Breakpoint::watch_load`).
    Watching,
    /// Wanted, or set with this id: the file has not been loaded (yet).
    Waiting(Option<String>),
    /// The file was loaded and the breakpoint placed from its map.
    Done,
}

/// A CDP breakpoint we set, and the map that translates where it landed.
#[derive(Clone)]
struct Placed {
    id: String,
    map: Option<(Arc<SourceMap>, usize)>,
}

/// What a `Debugger.setBreakpointByUrl` request is for; hand it back with the answer.
pub(crate) enum Request {
    Placed(Option<(Arc<SourceMap>, usize)>),
    Probe,
}

/// A request to send when the file loads: method, params, and what the answer is for.
pub(crate) struct Step {
    pub(crate) method: &'static str,
    pub(crate) params: Value,
    pub(crate) request: Option<Request>,
}

/// Where a breakpoint landed: its line in the file asked for (or in `file` when a map put it in
/// another original file), and the generated positions.
#[derive(Debug, Default, Clone)]
pub(crate) struct Resolution {
    pub(crate) line: Option<u32>,
    /// 1-based, in the same coordinates as `line`.
    pub(crate) column: Option<u32>,
    pub(crate) file: Option<String>,
    pub(crate) generated: Vec<Value>,
}

/// Cloned before it is set, one copy serves each process of a program (CDP breakpoint ids and
/// where they landed are a process's own).
#[derive(Clone)]
pub(crate) struct Breakpoint {
    /// How the runtime's script URLs name files.
    urls: UrlForm,
    /// As given (absolute; a symlink stays one) and with symlinks resolved.
    file: PathBuf,
    real_file: PathBuf,
    /// 1-based.
    line: u32,
    /// 1-based, for a breakpoint set by its own URL (a map places mapped ones by line).
    column: Option<u32>,
    /// The CDP condition every placed breakpoint carries ("" for none).
    condition: String,
    /// The one the breakpoint by the file's own URL carries instead, when it differs.
    direct_condition: Option<String>,
    /// The file turned out to be transformed while loading, and the breakpoint moved through
    /// its map: what the one by its own URL reported was at other lines.
    moved: bool,
    /// Appended to every URL regex: V8 refuses two breakpoints with the same URL regex, line
    /// and column, and a session may hold several on one line.
    unique: String,
    direct: bool,
    /// Any script with a source map may carry it (a page's bundles and dev servers' modules,
    /// whose maps are fetched from the page): each is looked at before it runs.
    any_map: bool,
    /// By generated file: one CDP breakpoint per file, however many ways the search found it
    /// (V8 refuses a second one at the same place).
    targets: BTreeMap<PathBuf, Target>,
    probe: Probe,
    placed: Vec<Placed>,
    pub(crate) resolution: Resolution,
}

impl Breakpoint {
    /// Plans a breakpoint: looks for source maps that cover `real_file` from `entry` (the
    /// command's script). Fails when maps cover the file but have no code at or after `line`.
    pub(crate) fn plan(
        file: &Path,
        real_file: &Path,
        line: u32,
        column: Option<u32>,
        condition: String,
        entry: Option<&Path>,
        urls: UrlForm,
    ) -> Result<(Breakpoint, Search), String> {
        let search = maps::search(real_file, entry);
        let direct = maps::is_javascript(real_file);
        let targets: BTreeMap<PathBuf, Target> = search
            .covered
            .iter()
            .filter_map(|covered| {
                let (_, positions) = covered.map.generated_for(covered.source, line - 1)?;
                let target = Target {
                    position: *positions.first()?,
                    map: covered.map.clone(),
                    source: covered.source,
                };
                Some((covered.generated.clone(), target))
            })
            .collect();
        if !direct && targets.is_empty() && !search.covered.is_empty() {
            let files: Vec<String> =
                search.covered.iter().map(|c| c.generated.display().to_string()).collect();
            return Err(format!(
                "no code at or after line {line} of {} in its source map (generated file {}): \
                 pick a line with a statement",
                file.display(),
                files.join(", ")
            ));
        }
        let probe = if direct { Probe::Off } else { Probe::Waiting(None) };
        let breakpoint = Breakpoint {
            any_map: matches!(urls, UrlForm::Web { .. }),
            urls,
            file: file.to_path_buf(),
            real_file: real_file.to_path_buf(),
            line,
            column,
            condition,
            direct_condition: None,
            moved: false,
            unique: String::new(),
            direct,
            targets,
            probe,
            placed: Vec::new(),
            resolution: Resolution::default(),
        };
        Ok((breakpoint, search))
    }

    /// No breakpoint (`failures` alone): nothing to place, nothing to wait for.
    pub(crate) fn none(urls: UrlForm) -> Breakpoint {
        Breakpoint {
            any_map: false,
            urls,
            file: PathBuf::new(),
            real_file: PathBuf::new(),
            line: 0,
            column: None,
            condition: String::new(),
            direct_condition: None,
            moved: false,
            unique: String::new(),
            direct: false,
            targets: BTreeMap::new(),
            probe: Probe::Off,
            placed: Vec::new(),
            resolution: Resolution::default(),
        }
    }

    /// Makes this breakpoint's URL regexes differ from others' (`n` unique per session), with
    /// an empty optional group after the end anchor: it matches exactly the same URLs.
    /// The file as the caller named it.
    pub(crate) fn file_shown(&self) -> String {
        self.file.display().to_string()
    }

    pub(crate) fn set_unique(&mut self, n: &str) {
        self.unique = format!("(?:#bp{n})?");
    }

    /// Also watches the file load: a runner that transforms it while loading (vitest's
    /// vite-node, jest with coverage, ts-jest) runs other lines than the file's, and says how
    /// through an inline map. The caller asks V8 to pause before each script with a source map
    /// runs (`Debugger.setInstrumentationBreakpoint`, `beforeScriptWithSourceMapExecution`)
    /// and hands the file's script to [`Breakpoint::in_script`]; the breakpoint then moves
    /// through its map. A line-0 probe alone would not do: jest wraps the code it compiles (a
    /// TypeScript file's too), and such a probe never stops. A JavaScript file loaded as it is
    /// keeps its breakpoint. True when the caller must ask for that pause.
    pub(crate) fn watch_load(&mut self) -> bool {
        let watch = self.direct && self.probe == Probe::Off;
        if watch {
            self.probe = Probe::Watching;
        }
        watch || self.probe == Probe::Waiting(None)
    }

    /// The condition of the breakpoint set by the file's own URL, when it must differ (so that
    /// its reports can be told apart).
    pub(crate) fn set_direct_condition(&mut self, condition: String) {
        self.direct_condition = Some(condition);
    }

    /// Whether the file was transformed while loading and the breakpoint moved through its map.
    pub(crate) fn moved(&self) -> bool {
        self.moved
    }

    /// Replaces the CDP condition (before the breakpoint is set).
    pub(crate) fn set_condition(&mut self, condition: String) {
        self.condition = condition;
    }

    /// The URL regex of the file itself (and of the path given, when a symlink led to it: Node
    /// keeps that spelling with --preserve-symlinks).
    fn file_regex(&self) -> String {
        let mut paths = vec![self.real_file.as_path()];
        if self.file != self.real_file {
            paths.push(self.file.as_path());
        }
        self.urls.regex(&paths)
    }

    fn params(&self, url_regex: String, position: Position, column: bool) -> Value {
        let url_regex = url_regex + &self.unique;
        let mut params = json!({"urlRegex": url_regex, "lineNumber": position.line});
        if column {
            params["columnNumber"] = position.column.into();
        }
        if !self.condition.is_empty() {
            params["condition"] = self.condition.as_str().into();
        }
        params
    }

    /// The params of the breakpoint by the file's own URL, at its own line.
    fn direct_params(&self, position: Position, column: bool) -> Value {
        let mut params = self.params(self.file_regex(), position, column);
        if let Some(condition) = &self.direct_condition {
            params["condition"] = condition.as_str().into();
        }
        params
    }

    /// The `Debugger.setBreakpointByUrl` params to send now.
    pub(crate) fn requests(&self) -> Vec<(Value, Request)> {
        let mut requests = Vec::new();
        if self.direct {
            let column = self.column.map(|c| c.saturating_sub(1));
            let line = Position { line: self.line - 1, column: column.unwrap_or(0) };
            let params = self.direct_params(line, column.is_some());
            requests.push((params, Request::Placed(None)));
        }
        for (generated, t) in &self.targets {
            let regex = self.urls.regex(&[generated.as_path()]);
            let map = Some((t.map.clone(), t.source));
            requests.push((self.params(regex, t.position, true), Request::Placed(map)));
        }
        if self.probe == Probe::Waiting(None) {
            let regex = self.file_regex() + &self.unique;
            let start = json!({"urlRegex": regex, "lineNumber": 0, "columnNumber": 0});
            requests.push((start, Request::Probe));
        }
        requests
    }

    /// Takes the answer to a request from [`Breakpoint::requests`] (or [`Breakpoint::at_load`]).
    pub(crate) fn set(&mut self, request: Request, answer: &Value, scripts: &Scripts) {
        let id = answer["breakpointId"].as_str().unwrap_or_default().to_string();
        match request {
            Request::Probe => self.probe = Probe::Waiting(Some(id)),
            Request::Placed(map) => {
                self.placed.push(Placed { id: id.clone(), map });
                if let Some(location) = answer.pointer("/locations/0") {
                    self.resolved(&id, location, scripts);
                }
            }
        }
    }

    /// Forgets the CDP breakpoints placed by URL (a script they were in was compiled anew,
    /// which dropped them there): their ids, to remove before [`Breakpoint::requests`] places
    /// them again.
    pub(crate) fn unplace(&mut self) -> Vec<String> {
        std::mem::take(&mut self.placed).into_iter().map(|p| p.id).collect()
    }

    /// The CDP breakpoint ids carrying this breakpoint (not the probe).
    pub(crate) fn ids(&self) -> impl Iterator<Item = &str> {
        self.placed.iter().map(|p| p.id.as_str())
    }

    /// The probe's id, while it waits for the file to load.
    pub(crate) fn probe_id(&self) -> Option<&str> {
        match &self.probe {
            Probe::Waiting(Some(id)) => Some(id),
            _ => None,
        }
    }

    /// Records where CDP breakpoint `id` landed (`Debugger.breakpointResolved`, or the answer
    /// to setting it), in the file's own lines when a map translates it.
    pub(crate) fn resolved(&mut self, id: &str, location: &Value, scripts: &Scripts) {
        let Some(placed) = self.placed.iter().find(|p| p.id == id) else { return };
        let generated = scripts::position(location);
        let file = scripts.file(location["scriptId"].as_str().unwrap_or_default());
        let resolution = &mut self.resolution;
        match &placed.map {
            None => {
                if resolution.line.is_none() {
                    resolution.line = Some(generated.line + 1);
                    resolution.column = Some(generated.column + 1);
                }
            }
            Some((map, source)) => {
                resolution.generated.push(scripts::generated_json(&file, generated));
                if resolution.line.is_some() {
                    return;
                }
                if let Some((found, original)) = map.original_for(generated) {
                    resolution.line = Some(original.line + 1);
                    resolution.column = Some(original.column + 1);
                    if found != *source {
                        let other = &map.sources()[found];
                        let name = other
                            .path
                            .as_ref()
                            .map_or(other.name.clone(), |p| p.display().to_string());
                        resolution.file = Some(name);
                    }
                }
            }
        }
    }

    /// The probe stopped the file's module before its body ran (`frame` is the top frame):
    /// returns the requests to send, in order — remove the probe, then set the real breakpoint
    /// from the map the module was compiled with (hand that answer to [`Breakpoint::set`]).
    pub(crate) fn at_load(
        &mut self,
        frame: &Value,
        scripts: &mut Scripts,
    ) -> Result<Vec<Step>, Failure> {
        let script_id =
            frame.pointer("/location/scriptId").and_then(Value::as_str).unwrap_or_default();
        self.place_in(script_id, scripts)
    }

    /// When the file was compiled while loading before this breakpoint was set (a session's
    /// breakpoint in a module that already ran once), the probe would never fire: the script
    /// and its map are known, so the requests of [`Breakpoint::at_load`] are due at once.
    pub(crate) fn in_loaded_script(
        &mut self,
        scripts: &mut Scripts,
    ) -> Option<Result<Vec<Step>, Failure>> {
        if self.probe_id().is_none() && self.probe != Probe::Watching {
            return None;
        }
        let script_id = scripts.find_file(&[&self.real_file, &self.file])?;
        Some(self.place_in(&script_id, scripts))
    }

    /// The requests that place this breakpoint in script `script_id` of its file, about to run
    /// (an instrumentation pause), while its load is watched.
    pub(crate) fn in_script(
        &mut self,
        script_id: &str,
        scripts: &mut Scripts,
    ) -> Option<Result<Vec<Step>, Failure>> {
        if self.probe_id().is_none() && self.probe != Probe::Watching {
            return None;
        }
        Some(self.place_in(script_id, scripts))
    }

    /// The requests that place this breakpoint in loaded script `script_id` (the file itself,
    /// compiled while loading): remove the probe, set the breakpoint from the script's map. A
    /// JavaScript file loaded without a map keeps the breakpoint by its URL; one transformed
    /// with a map has that breakpoint replaced by the mapped one.
    fn place_in(&mut self, script_id: &str, scripts: &mut Scripts) -> Result<Vec<Step>, Failure> {
        let probe = match std::mem::replace(&mut self.probe, Probe::Done) {
            Probe::Waiting(Some(probe)) => Some(probe),
            Probe::Watching => None,
            _ => return Err(Failure::new(Code::Internal, "the load-time probe fired twice")),
        };
        let (url, map_url) = scripts.get(script_id);
        let remove = |id: String| Step {
            method: "Debugger.removeBreakpoint",
            params: json!({"breakpointId": id}),
            request: None,
        };
        let mut steps: Vec<Step> = probe.into_iter().map(remove).collect();
        let line = self.line - 1;
        // The file itself (compiled or transformed while loading), or a bundle that carries it.
        let own = self.urls.names(&url, &self.real_file) || self.urls.names(&url, &self.file);
        if map_url.is_empty() {
            if !self.direct {
                // Compiled without a map (type stripping keeps lines): the source's lines.
                let position = Position { line, column: 0 };
                steps.push(self.set_step(self.file_regex(), position, None));
            }
            return Ok(steps);
        }
        let map = scripts.map_of(script_id).unwrap_or_else(|| Err("no map".into()));
        // A JavaScript file whose map does not list it (a bundle's own map) runs as it is.
        let lists =
            |m: &SourceMap| m.find_source(&self.real_file).or_else(|| m.find_source(&self.file));
        if self.direct && map.as_ref().map_or(true, |m| lists(m).is_none()) {
            return Ok(steps);
        }
        let map = map.map_err(|e| {
            Failure::new(Code::BadSourceMap, format!("the source map of {url} cannot be read: {e}"))
        })?;
        let found = lists(&map).and_then(|s| map.generated_for(s, line).map(|(_, p)| (s, p)));
        let Some((source, positions)) = found else {
            return Err(Failure::new(
                Code::NoCodeAtLine,
                format!(
                    "no code at or after line {} of {} in the map it was compiled with",
                    self.line,
                    self.file.display()
                ),
            ));
        };
        let position = positions[0];
        if self.direct && own {
            // Transformed on the same line (babel-jest keeps lines): the breakpoint by the
            // file's own URL stands. Moved (vite-node, coverage): it goes, the mapped one comes.
            if position.line == line {
                return Ok(steps);
            }
            let direct: Vec<Placed> =
                self.placed.iter().filter(|p| p.map.is_none()).cloned().collect();
            self.placed.retain(|p| p.map.is_some());
            steps.extend(direct.into_iter().map(|p| remove(p.id)));
            self.resolution = Resolution::default();
            self.moved = true;
        }
        // By this script's own URL: a bundle's, or the file's as the runtime spells it
        // (`webpack://app/./src/a.js` from a dev server's eval'd modules).
        steps.push(self.set_step(exact_url_regex(&url), position, Some((map, source))));
        Ok(steps)
    }

    /// The request that sets the breakpoint at `position` of the scripts `regex` matches.
    fn set_step(
        &self,
        regex: String,
        position: Position,
        map: Option<(Arc<SourceMap>, usize)>,
    ) -> Step {
        Step {
            method: "Debugger.setBreakpointByUrl",
            params: self.params(regex, position, true),
            request: Some(Request::Placed(map)),
        }
    }

    /// Whether a script's URL names this breakpoint's file, while its load-time probe waits:
    /// the script just parsed can place it at once ([`Breakpoint::in_loaded_script`]). Code a
    /// runner wraps (jest) may never stop at the probe.
    pub(crate) fn awaits(&self, url: &str) -> bool {
        if self.probe_id().is_none() && self.probe != Probe::Watching {
            return false;
        }
        self.urls.names(url, &self.real_file) || self.urls.names(url, &self.file)
    }

    /// Whether a script about to run may carry this breakpoint while it waits for its file: it
    /// is the file ([`Breakpoint::awaits`]), or (a page's) its map lists the file.
    pub(crate) fn awaits_script(&self, script_id: &str, scripts: &mut Scripts) -> bool {
        let (url, _) = scripts.get(script_id);
        if self.awaits(&url) {
            return true;
        }
        let waiting = self.probe_id().is_some() || self.probe == Probe::Watching;
        waiting
            && self.any_map
            && scripts.map_of(script_id).is_some_and(|map| {
                map.is_ok_and(|m| {
                    m.find_source(&self.real_file).or_else(|| m.find_source(&self.file)).is_some()
                })
            })
    }

    /// Not JavaScript, no map on disk, and the file was never compiled while loading: nothing
    /// could carry the breakpoint.
    pub(crate) fn unplaceable(&self) -> bool {
        !self.direct && self.targets.is_empty() && matches!(self.probe, Probe::Waiting(_))
    }

    /// Why the breakpoint never bound, when no CDP breakpoint of it resolved.
    pub(crate) fn never_bound(&self) -> String {
        if self.targets.is_empty() {
            return format!(
                "the breakpoint never bound: the program loaded no script from {}, and ran no \
                 other process or worker that debug-mcp saw: check the path, and that the \
                 program reaches the code that requires it",
                self.file.display()
            );
        }
        let files: Vec<String> = self.targets.keys().map(|g| g.display().to_string()).collect();
        let direct = if self.direct {
            format!("no script loaded from {} itself, and ", self.file.display())
        } else {
            String::new()
        };
        format!(
            "the breakpoint never bound: {direct}its source map places it in {}, none of which \
             the program loaded (is that the build the command runs?)",
            files.join(", ")
        )
    }
}
