//! Web pages in headless Chromium as a CDP runtime: the browser started with a throwaway
//! profile and DevTools over a pair of pipes, or one already running (`--remote-debugging-port`)
//! attached to; the page's scripts debugged like a Node program's.
//!
//! Facts this relies on (Chromium 156, Debian's `chromium`): with `--remote-debugging-pipe` the
//! browser reads DevTools requests on its descriptor 3 and writes on its 4 (JSON, each message
//! ended by a NUL byte), opens no port, and speaks as the browser: its `about:blank` page is
//! found by `Target.getTargets` and attached to (`cdp::Client::over_pipe`). A page's
//! breakpoints must be set before it loads: the browser opens `about:blank`, the page is set up
//! (binding, probe, breakpoints), then navigated (`Page.navigate`). The probe is installed again
//! in every document (`Page.addScriptToEvaluateOnNewDocument`; the binding exists by then), so
//! it survives navigations and reloads. Paused frames carry an empty `url`, as in Node: scripts
//! are named through `scriptParsed`. `Page.loadEventFired` is not sent for the `about:blank` it
//! starts with; its lifecycle events (`networkIdle` among them) are replayed when they are
//! enabled, without an `init` before them. As root the browser needs `--no-sandbox`; without
//! `--disable-background-networking` and its kin it tries to reach Google's hosts at start.
//! The page's console and uncaught errors are its output. A browser the user started with
//! `--remote-debugging-port` is listed at `/json/list` and attached to by its page's WebSocket.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use std::os::fd::AsRawFd;

use crossbeam_channel::Receiver;
use serde_json::{json, Value};

use crate::cdp::runtime::{Follow, Runtime, Started, UrlForm};
use crate::cdp::{Client, Event};
use crate::debugger::{Code, Failure};
use crate::process::{self, Debuggee, SpawnError};
use crate::shell::CommandLine;

/// When a `debug-script` run on a page ends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Until {
    /// The page's `load` event.
    Load,
    /// No network traffic for 500 ms after load (Chromium's `networkIdle`).
    Idle,
    /// This many milliseconds after the page was opened.
    Millis(u64),
}

/// A page in a browser, as a CDP runtime.
#[derive(Clone)]
pub(crate) struct Browser {
    /// The browser's executable.
    executable: PathBuf,
    /// The page to open (`None` when attached to one that is open).
    page: Option<String>,
    urls: UrlForm,
    /// When `debug-script` ends; `None` for a session, which the page never ends.
    until: Option<Until>,
    /// Loads that began (`init` lifecycle events), for `Until::Idle`.
    loads: Vec<String>,
}

impl Browser {
    /// A page to open in the browser `executable` ([`find`]); `root` is where its server's `/`
    /// is on disk, `strict` when the user said so (`webRoot`).
    pub(crate) fn launch(
        executable: PathBuf,
        page: String,
        root: PathBuf,
        strict: bool,
        until: Option<Until>,
    ) -> Browser {
        let urls = UrlForm::Web { root, strict };
        Browser { executable, page: Some(page), urls, until, loads: Vec::new() }
    }

    /// A page already open in a browser we attach to.
    pub(crate) fn attached(root: PathBuf, strict: bool) -> Browser {
        let urls = UrlForm::Web { root, strict };
        Browser { executable: PathBuf::new(), page: None, urls, until: None, loads: Vec::new() }
    }

    /// The web root the user gave (`webRoot`), when they gave one.
    pub(crate) fn web_root(&self) -> Option<&Path> {
        match &self.urls {
            UrlForm::Web { root, strict: true } => Some(root),
            _ => None,
        }
    }

    /// The command line a session shows for the program (`chromium http://…`).
    pub(crate) fn command_line(&self, cwd: Option<PathBuf>) -> CommandLine {
        let page = self.page.clone().unwrap_or_default();
        CommandLine {
            words: vec![self.executable.display().to_string(), page],
            cwd,
            ..CommandLine::default()
        }
    }
}

/// The browser to run: `name` (`chromium`, `chrome`, or a path), else `CHROME_PATH`, else the
/// first of Chromium's and Chrome's usual names on `PATH`.
pub(crate) fn find(name: Option<&str>) -> Result<PathBuf, Failure> {
    let wanted = match name {
        Some("chromium" | "chrome") | None => std::env::var("CHROME_PATH").ok(),
        Some(other) => Some(other.to_string()),
    };
    if let Some(path) = wanted.as_deref().filter(|w| w.contains('/')) {
        return match Path::new(path).is_file() {
            true => Ok(PathBuf::from(path)),
            false => Err(not_installed(&format!("{path} is not a file"))),
        };
    }
    let names: Vec<String> = match wanted {
        Some(bare) => vec![bare],
        None => ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"]
            .map(String::from)
            .to_vec(),
    };
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in &names {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    Err(not_installed(&format!("no {} on PATH", names.join(", "))))
}

fn not_installed(why: &str) -> Failure {
    Failure::new(
        Code::NoAdapter,
        format!(
            "no browser to open the page in ({why}): install Chromium (Debian: `apt-get install \
             chromium`), or name its executable in CHROME_PATH or `browser`"
        ),
    )
    .with("install", "apt-get install -y --no-install-recommends chromium".into())
}

/// The flags a throwaway headless browser runs with: a private profile, a free loopback
/// debugging port, nothing of its own on the network, no extension.
fn flags(profile: &Path) -> Vec<String> {
    let mut flags: Vec<String> = [
        "--headless=new",
        "--disable-gpu",
        // DevTools over the pipes we pass (descriptors 3 and 4), never on a port: a port would
        // let any local user drive the page, and read files, as this user.
        "--remote-debugging-pipe",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-extensions",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-breakpad",
        "--metrics-recording-only",
        "--mute-audio",
        "--password-store=basic",
    ]
    .map(String::from)
    .to_vec();
    if crate::sys::is_root() {
        flags.push("--no-sandbox".into());
    }
    flags.push(format!("--user-data-dir={}", profile.display()));
    flags.push("about:blank".into());
    flags
}

/// The page targets of a browser's DevTools endpoint: `[{url, title, webSocketDebuggerUrl}]`.
pub(crate) fn pages(host: &str, port: u16, timeout: Duration) -> Result<Vec<Value>, String> {
    let targets = crate::cdp::inspector_json(host, port, "list", timeout)?;
    let targets = targets.as_array().cloned().unwrap_or_default();
    Ok(targets.into_iter().filter(|t| t["type"] == "page").collect())
}

/// Picks the page `wanted` names (part of its URL or title), or the only one.
pub(crate) fn pick_page(pages: &[Value], wanted: Option<&str>) -> Result<String, Failure> {
    let matching: Vec<&Value> = pages
        .iter()
        .filter(|p| {
            wanted.is_none_or(|w| {
                p["url"].as_str().is_some_and(|u| u.contains(w))
                    || p["title"].as_str().is_some_and(|t| t.contains(w))
            })
        })
        .collect();
    let listed: Vec<Value> =
        pages.iter().map(|p| json!({"url": p["url"], "title": p["title"]})).collect();
    match matching.as_slice() {
        [page] => Ok(page["webSocketDebuggerUrl"].as_str().unwrap_or_default().to_string()),
        [] => Err(Failure::new(
            Code::NoProcess,
            match wanted {
                Some(w) => format!("no page of the browser has `{w}` in its URL or title"),
                None => "the browser has no page open".to_string(),
            },
        )
        .with("pages", listed.into())),
        _ => Err(Failure::new(
            Code::InvalidArguments,
            "the browser has several pages: name one with `target` (part of its URL or title)",
        )
        .with("field", "target".into())
        .with("pages", listed.into())),
    }
}

impl Runtime for Browser {
    fn boxed(&self) -> Box<dyn Runtime> {
        Box::new(self.clone())
    }

    fn language(&self) -> &'static str {
        "browser"
    }

    fn urls(&self) -> UrlForm {
        self.urls.clone()
    }

    fn is_end(&mut self, event: &Event) -> bool {
        match (self.until, event.method.as_str()) {
            (Some(Until::Load), "Page.loadEventFired") => true,
            (Some(Until::Idle), "Page.lifecycleEvent") => {
                let loader = event.params["loaderId"].as_str().unwrap_or_default().to_string();
                match event.params["name"].as_str() {
                    Some("init") => {
                        self.loads.push(loader);
                        false
                    }
                    Some("networkIdle") => self.loads.contains(&loader),
                    _ => false,
                }
            }
            _ => false,
        }
    }

    fn end_said(&self) -> Option<String> {
        match self.until? {
            Until::Load => Some("its load event".into()),
            Until::Idle => Some("an idle network after its load".into()),
            Until::Millis(ms) => Some(format!("the end of its {ms} ms")),
        }
    }

    fn runs_for(&self) -> Option<Duration> {
        match self.until {
            Some(Until::Millis(ms)) => Some(Duration::from_millis(ms)),
            _ => None,
        }
    }

    fn exits_when_let_go(&self) -> bool {
        false
    }

    fn console_is_output(&self) -> bool {
        true
    }

    fn children_are_its_own(&self) -> bool {
        true
    }

    fn end_needs_runtime_domain(&self) -> bool {
        true
    }

    fn start(
        &self,
        command: &CommandLine,
        _stop_at_entry: bool,
        follow: Option<Follow>,
        timeout: Duration,
        deadline: Instant,
        cancel: &Receiver<()>,
    ) -> Result<Started, Failure> {
        let profile = crate::scratch::private_dir("browser").map_err(|e| {
            Failure::new(Code::SpawnFailed, format!("cannot make the browser's profile: {e}"))
        })?;
        // The browser's own temporary files (`org.chromium.Chromium.*`, left behind when it is
        // killed) go in its profile, which is removed with it; unless that would make the path
        // of the socket it puts there (`org.chromium.Chromium.XXXXXX/SingletonSocket`) longer
        // than a Unix socket's 107 bytes, which ends the browser.
        let mut env = command.env.clone();
        if profile.as_os_str().len() + "/org.chromium.Chromium.XXXXXX/SingletonSocket".len() < 108 {
            env.push(("TMPDIR".into(), profile.display().to_string()));
        }
        let spec = process::Spec {
            program: self.executable.display().to_string(),
            args: flags(&profile),
            env,
            env_remove: Vec::new(),
            cwd: command.cwd.clone(),
            stdin: None,
        };
        let pipes = crate::sys::pipes_for_child().map_err(|e| {
            let _ = std::fs::remove_dir_all(&profile);
            Failure::new(Code::SpawnFailed, format!("cannot make the browser's pipes: {e}"))
        })?;
        let (to, its_read, from, its_write) = pipes;
        // The browser reads requests on its descriptor 3 and writes on its 4.
        let fds = [(its_read.as_raw_fd(), 3), (its_write.as_raw_fd(), 4)];
        // Everything the browser writes is its own, not the page's.
        let spawned = Debuggee::spawn_inheriting(&spec, |_| true, &fds);
        drop((its_read, its_write));
        let mut debuggee = match spawned {
            Ok(debuggee) => debuggee,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&profile);
                return Err(match e {
                    SpawnError::NotFound(_) => not_installed(&e.to_string()),
                    SpawnError::Other(..) => Failure::new(Code::SpawnFailed, e.to_string()),
                });
            }
        };
        debuggee.remove_when_gone(profile);
        debuggee.output_pushed_only();
        let left = deadline.saturating_duration_since(Instant::now());
        let blank = |targets: &[Value]| {
            let page = targets.iter().find(|t| t["type"] == "page" && t["url"] == "about:blank");
            page.and_then(|t| t["targetId"].as_str()).map(String::from)
        };
        let shared = follow.as_ref().map(|f| f.events);
        let client = match Client::over_pipe((to, from), blank, left, 0, shared) {
            Ok(client) => client,
            Err(why) => return Err(not_started(&mut debuggee, why, timeout, cancel)),
        };
        let program = self.executable.display().to_string();
        Ok(Started { debuggee, client: Some(client), entry: None, program })
    }

    fn setup_requests(&self, _own: bool, _follow: bool, probe: &str) -> Vec<(&'static str, Value)> {
        let mut requests = vec![
            ("Page.enable", json!({})),
            // Every document the page loads gets the probe before its own scripts run.
            (
                "Page.addScriptToEvaluateOnNewDocument",
                json!({"source": format!("try {{ {probe}\n}} catch (e) {{}}")}),
            ),
        ];
        if self.until == Some(Until::Idle) {
            requests.push(("Page.setLifecycleEventsEnabled", json!({"enabled": true})));
        }
        requests
    }

    fn go_requests(&self) -> Vec<(&'static str, Value)> {
        self.page.iter().map(|page| ("Page.navigate", json!({"url": page}))).collect()
    }
}

/// Why the browser did not give us its page: what it said on stderr before it ended (or
/// while it failed to answer), or the cancellation that stopped the wait.
fn not_started(
    debuggee: &mut Debuggee,
    why: String,
    timeout: Duration,
    cancel: &Receiver<()>,
) -> Failure {
    if cancel.try_recv().is_ok() {
        debuggee.kill();
        return Failure::Cancelled;
    }
    let exit = debuggee.exited().recv_timeout(Duration::from_millis(200)).ok();
    debuggee.kill();
    let said: Vec<String> = debuggee.notices().try_iter().collect();
    let tail = said.iter().rev().take(5).rev().cloned().collect::<Vec<_>>().join("\n");
    let why = match exit {
        Some(exit) => format!("it ended ({})", exit.describe()),
        None if why.contains("in time") || why.contains("no page") => {
            format!("{why} (within {} ms)", timeout.as_millis())
        }
        None => why,
    };
    Failure::new(Code::LaunchFailed, format!("the browser did not start: {why}"))
        .with("stderr", tail.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_picked_by_url_or_title() {
        let pages = vec![
            json!({"url": "http://127.0.0.1:5173/", "title": "Shop", "webSocketDebuggerUrl": "ws://a"}),
            json!({"url": "http://127.0.0.1:5173/admin", "title": "Admin", "webSocketDebuggerUrl": "ws://b"}),
        ];
        assert_eq!(pick_page(&pages, Some("admin")).unwrap(), "ws://b");
        assert_eq!(pick_page(&pages, Some("Shop")).unwrap(), "ws://a");
        let Failure::Error { code, details, .. } = pick_page(&pages, None).unwrap_err() else {
            panic!("not an error")
        };
        assert_eq!(code, Code::InvalidArguments);
        assert_eq!(details["pages"][1]["title"], "Admin");
        assert!(pick_page(&pages, Some("nowhere")).is_err());
        assert_eq!(pick_page(&pages[..1], None).unwrap(), "ws://a");
    }

    #[test]
    fn a_page_ends_at_its_load_or_after_its_first_load_is_idle() {
        let event = |method: &str, params: Value| Event {
            method: method.into(),
            params,
            origin: Default::default(),
        };
        let root = PathBuf::from("/srv");
        let mut load =
            Browser::launch("c".into(), "p".into(), root.clone(), false, Some(Until::Load));
        assert!(load.is_end(&event("Page.loadEventFired", json!({}))));
        let mut idle = Browser::launch("c".into(), "p".into(), root, false, Some(Until::Idle));
        let idle_of = |loader: &str| json!({"name": "networkIdle", "loaderId": loader});
        // The about:blank the browser starts with: replayed, no `init`.
        assert!(!idle.is_end(&event("Page.lifecycleEvent", idle_of("blank"))));
        assert!(
            !idle.is_end(&event("Page.lifecycleEvent", json!({"name": "init", "loaderId": "L"})))
        );
        assert!(idle.is_end(&event("Page.lifecycleEvent", idle_of("L"))));
    }
}
