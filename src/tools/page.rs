//! A web page as the program to debug, for `debug-script` and `debug-launch`: `url` (a served
//! page, a `file://` URL or an HTML file), `browser`, `webRoot`, and for `debug-script`,
//! `until`. The page runs in a throwaway headless browser (`browser/`).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::browser::{self, Browser, Until};
use crate::debugger::{Code, Failure};
use crate::shell::CommandLine;
use crate::tools::{cwd_arg, in_dir, ArgError, Args};

/// The schema of the page's fields (`until` with `debug-script`'s).
pub(crate) fn properties(until: bool) -> Value {
    let mut properties = json!({
        "url": {"type": "string", "description": "a web page (http://, file://, .html) for headless Chromium"},
        "browser": {"type": "string"},
        "webRoot": {"type": "string", "description": "the folder served as /"}
    });
    if until {
        properties["until"] =
            json!({"type": ["string", "integer"], "description": "load (default), idle, or ms"});
    }
    properties
}

/// A page asked for: the runtime that opens it, and the command line a session shows.
pub(crate) struct Page {
    pub(crate) browser: Browser,
    pub(crate) command: CommandLine,
}

/// The page `url` names, when the call gives one; `until` read for `debug-script`.
pub(crate) fn page_arg(args: &Args, until: bool) -> Result<Option<Page>, Failure> {
    let Some(url) = args.optional_string("url")? else {
        for field in ["browser", "webRoot", "until"] {
            if args.has(field) {
                return Err(ArgError::new(field, "only with `url` (a page to debug)").into());
            }
        }
        return Ok(None);
    };
    if args.has("command") {
        return Err(
            ArgError::new("url", "give either `command` or `url` (a page), not both").into()
        );
    }
    let cwd = cwd_arg(args)?;
    let url = page_url(url, cwd.as_deref())?;
    let executable = browser::find(args.optional_string("browser")?)?;
    let (root, strict) = web_root_arg(args, cwd.as_deref())?;
    let until = match until {
        true => Some(until_arg(args)?),
        false => None,
    };
    let browser = Browser::launch(executable, url, root.clone(), strict, until);
    // Relative breakpoint files, and those named by URL, are under the web root.
    let mut command = browser.command_line(Some(root));
    command.env = args.string_map("env")?;
    Ok(Some(Page { browser, command }))
}

/// Where the page's server's `/` is on disk, and whether the user said so: `webRoot` (a
/// directory, relative to `cwd`), else `cwd` or the server's working directory.
pub(crate) fn web_root_arg(args: &Args, cwd: Option<&Path>) -> Result<(PathBuf, bool), Failure> {
    let Some(root) = args.optional_string("webRoot")? else {
        let cwd = cwd.map(Path::to_path_buf).or_else(|| std::env::current_dir().ok());
        return Ok((cwd.unwrap_or_default(), false));
    };
    let root = in_dir(root, cwd);
    let root = std::path::absolute(&root).unwrap_or(root);
    if !root.is_dir() {
        return Err(Failure::new(
            Code::FileNotFound,
            format!("`webRoot` {} is not a directory", root.display()),
        )
        .with("field", "webRoot".into()));
    }
    Ok((root, true))
}

/// `until`: `load` (the default), `idle`, or milliseconds.
fn until_arg(args: &Args) -> Result<Until, ArgError> {
    match args.value("until") {
        (None, _) => Ok(Until::Load),
        (Some(Value::String(s)), _) if s == "load" => Ok(Until::Load),
        (Some(Value::String(s)), _) if s == "idle" => Ok(Until::Idle),
        (Some(Value::Number(_)), _) => {
            let max = crate::tools::script::MAX_TIMEOUT_MS;
            Ok(Until::Millis(args.integer("until", 1, max, None)?))
        }
        // Clients that send every argument as text (`--tool-arg until=1500`), in the same range.
        (Some(Value::String(s)), field) if s.parse::<u64>().is_ok() => {
            let max = crate::tools::script::MAX_TIMEOUT_MS;
            match s.parse::<u64>().expect("checked above") {
                ms @ 1.. if ms <= max => Ok(Until::Millis(ms)),
                _ => {
                    Err(ArgError::new(&field, format!("expected 1 to {max} milliseconds, got {s}")))
                }
            }
        }
        (Some(other), field) => Err(ArgError::new(
            &field,
            format!("expected \"load\", \"idle\" or milliseconds, got {other}"),
        )),
    }
}

/// The page's URL: http(s) and file URLs as they are; a path (an .html file) as its file URL.
fn page_url(url: &str, cwd: Option<&Path>) -> Result<String, Failure> {
    if let Some((scheme, _)) = url.split_once("://") {
        return match scheme {
            "http" | "https" | "file" => Ok(url.to_string()),
            _ => Err(ArgError::new(
                "url",
                format!("expected an http(s):// or file:// URL, got {url}"),
            )
            .into()),
        };
    }
    let path = std::path::absolute(in_dir(url, cwd)).unwrap_or_else(|_| PathBuf::from(url));
    if !path.is_file() {
        return Err(Failure::new(
            Code::FileNotFound,
            format!("`url` {} is neither a URL nor a file", path.display()),
        )
        .with("field", "url".into()));
    }
    let encoded: String = path
        .to_string_lossy()
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            b => format!("%{b:02X}"),
        })
        .collect();
    Ok(format!("file://{encoded}"))
}

/// Fails for a breakpoint file outside `webRoot`: the page's server does not serve it, so it
/// could never bind.
pub(crate) fn check_served(page: &Page, file: &Path) -> Result<(), Failure> {
    match page.browser.web_root() {
        Some(root) if !file.starts_with(root) => Err(Failure::new(
            Code::InvalidArguments,
            format!(
                "breakpoint file {} is not under `webRoot` {}: the page's server does not serve \
                 it; give a file under it, or leave `webRoot` out to match files by the end of \
                 their path",
                file.display(),
                root.display()
            ),
        )
        .with("field", "webRoot".into())),
        _ => Ok(()),
    }
}

/// A breakpoint `file` given as a URL (`http://127.0.0.1:5173/src/main.ts`), for a page: the
/// path it is at under the web root (a page's `cwd`). V8 and the maps match it by that path's
/// suffix, so it need not be on disk.
pub(crate) fn served_path(file: &str, root: Option<&Path>) -> Option<PathBuf> {
    let rest = file.strip_prefix("http://").or_else(|| file.strip_prefix("https://"))?;
    let path = rest.find('/').map_or("/", |at| &rest[at..]);
    let path = path.split(['?', '#']).next().unwrap_or(path);
    let path = crate::sourcemap::percent_decode(path);
    let root = root.map(Path::to_path_buf).or_else(|| std::env::current_dir().ok())?;
    Some(root.join(path.trim_start_matches('/')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn until_is_load_idle_or_milliseconds_as_number_or_text() {
        let until = |value: Value| {
            let arguments = json!({"until": value});
            until_arg(&Args::new(&arguments).unwrap()).map_err(|e| e.problem)
        };
        assert_eq!(until(Value::Null), Ok(Until::Load));
        assert_eq!(until(json!("idle")), Ok(Until::Idle));
        assert_eq!(until(json!(1500)), Ok(Until::Millis(1500)));
        assert_eq!(until(json!("1500")), Ok(Until::Millis(1500)));
        assert_eq!(until(json!("0")), Err("expected 1 to 600000 milliseconds, got 0".into()));
        assert_eq!(
            until(json!("900000")),
            Err("expected 1 to 600000 milliseconds, got 900000".into())
        );
        assert!(until(json!(900000)).is_err());
        assert!(until(json!("soon")).is_err());
    }

    #[test]
    fn page_urls_from_paths() {
        assert_eq!(page_url("http://127.0.0.1:5173/", None).unwrap(), "http://127.0.0.1:5173/");
        let test = crate::scratch::TestDir::new("page url");
        let dir = test.0.clone();
        std::fs::write(dir.join("a b.html"), "").unwrap();
        let url = page_url("a b.html", Some(&dir)).unwrap();
        assert_eq!(
            url,
            format!("file://{}/a%20b.html", dir.display().to_string().replace(' ', "%20"))
        );
        assert!(page_url("ftp://x/", None).is_err());
        assert!(page_url("missing.html", Some(&dir)).is_err());
    }
}
