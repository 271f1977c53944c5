//! The examples of README.md and docs/*.md, run: each call an example shows is made on the
//! real server, and its answer must have the shape the example shows, so the documents cannot
//! go stale.
//!
//! What an example is, in Markdown:
//! - a ```` ```json call TOOL ```` block (the arguments), followed by a ```` ```json answer ````
//!   block (the structured content);
//! - a ```` ```sh run ```` block holding `debug-mcp-server run ARGS` (or `cargo run --release -- run
//!   ARGS`), followed by a ```` ```json answer ```` block (what it prints);
//! - a ```` ```text session ```` block: one server, lines `TOOL {arguments}` each followed by
//!   the answer's JSON (on one line or several).
//!
//! `needs=lldb,delve,chromium,ruby,java,npm` after the info string says what an example needs (as
//! tests do: skipped without it, unless DEBUG_MCP_TEST_ALL=1).
//!
//! How an answer is compared: objects have exactly the keys shown, unless one of them is `"…"`;
//! arrays have the elements shown, or at least those before a last `"…"`; `"…"` matches
//! anything; a string ending in `…` matches what starts with the rest; `/path/to/debug-mcp`
//! stands for this checkout; a `pid`, `parent` or `process` is any number; everything else is exact.
//! Calls run from this checkout, with `target/venv/bin` first on PATH (`python3` there has
//! debugpy and pytest).

use std::path::PathBuf;

use serde_json::Value;

use crate::need::{need, npm_packages, Tool};
use crate::{root, Server};

/// A fenced block: its info string, its text, and where it starts.
struct Block {
    info: String,
    text: String,
    at: String,
}

fn blocks(file: &PathBuf) -> Vec<Block> {
    let text = std::fs::read_to_string(file).unwrap();
    let name = file.strip_prefix(root()).unwrap().display().to_string();
    let mut found = Vec::new();
    let mut open: Option<Block> = None;
    for (n, line) in text.lines().enumerate() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => {
                open = Some(Block {
                    info: info.trim().into(),
                    text: String::new(),
                    at: format!("{name}:{}", n + 1),
                })
            }
            (Some(_), Some("")) => found.push(open.take().unwrap()),
            (Some(block), _) => {
                block.text.push_str(line);
                block.text.push('\n');
            }
            (None, None) => {}
        }
    }
    found
}

fn documents() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// Whether what the example `needs` is here (installing what can be installed).
fn ready(info: &str) -> bool {
    let Some(needs) = info.split_whitespace().find_map(|w| w.strip_prefix("needs=")) else {
        return true;
    };
    needs.split(',').all(|what| match what {
        "npm" => {
            npm_packages();
            true
        }
        "lldb" => {
            let ok = need(Tool::Lldb);
            if ok {
                crate::native::c_loop();
            }
            ok
        }
        "delve" => need(Tool::Delve),
        "chromium" => need(Tool::Chromium),
        "ruby" => need(Tool::Ruby),
        "java" => need(Tool::Java),
        other => panic!("unknown need `{other}` in an example"),
    })
}

/// The server the examples talk to: this checkout, `python3` the test venv's.
fn server() -> Server {
    let python = crate::python::python();
    let bin = std::path::Path::new(&python).parent().unwrap().display().to_string();
    let path = format!("{bin}:{}", std::env::var("PATH").unwrap_or_default());
    Server::initialized_with(&root(), &[("PATH", &path)])
}

/// Where `actual` differs from the shape `expected` shows, if it does.
fn compare(expected: &Value, actual: &Value, at: &str, key: &str) -> Result<(), String> {
    let here = root().display().to_string();
    let differ = || Err(format!("at {at}: expected {expected}, got {actual}"));
    match (expected, actual) {
        (Value::String(e), _) if e == "…" => Ok(()),
        (Value::Number(_), Value::Number(_)) if matches!(key, "pid" | "parent" | "process") => {
            Ok(())
        }
        (Value::String(e), Value::String(a)) => {
            let e = e.replace("/path/to/debug-mcp", &here);
            let fits = match e.strip_suffix('…') {
                Some(start) => a.starts_with(start),
                None => *a == e,
            };
            if fits {
                Ok(())
            } else {
                differ()
            }
        }
        (Value::Object(e), Value::Object(a)) => {
            let open = e.contains_key("…");
            for (k, v) in e.iter().filter(|(k, _)| *k != "…") {
                match a.get(k) {
                    Some(got) => compare(v, got, &format!("{at}.{k}"), k)?,
                    None => return Err(format!("at {at}: no `{k}` in {actual}")),
                }
            }
            match a.keys().find(|k| !open && !e.contains_key(*k)) {
                Some(k) => Err(format!("at {at}: `{k}` is not in the example: {actual}")),
                None => Ok(()),
            }
        }
        (Value::Array(e), Value::Array(a)) => {
            let open = e.last().is_some_and(|l| l == "…");
            let shown = if open { &e[..e.len() - 1] } else { &e[..] };
            if a.len() < shown.len() || (!open && a.len() != shown.len()) {
                return differ();
            }
            for (i, (e, a)) in shown.iter().zip(a).enumerate() {
                compare(e, a, &format!("{at}[{i}]"), key)?;
            }
            Ok(())
        }
        (e, a) if e == a => Ok(()),
        _ => differ(),
    }
}

fn parse(text: &str, at: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{at}: not JSON ({e}): {text}"))
}

/// A session transcript: `TOOL {arguments}` lines, each followed by its answer.
fn session(block: &Block) -> Vec<(String, Value, Value)> {
    let mut steps: Vec<(String, Value, String)> = Vec::new();
    for line in block.text.lines() {
        let call = line
            .split_once(' ')
            .filter(|(tool, rest)| tool.starts_with("debug-") && rest.starts_with('{'));
        match call {
            Some((tool, arguments)) => {
                steps.push((tool.into(), parse(arguments, &block.at), String::new()))
            }
            None => match steps.last_mut() {
                Some((_, _, answer)) => {
                    answer.push_str(line);
                    answer.push('\n');
                }
                None => panic!("{}: a session starts with a call", block.at),
            },
        }
    }
    steps.into_iter().map(|(t, a, answer)| (t, a, parse(&answer, &block.at))).collect()
}

#[test]
fn the_examples_of_the_readme_and_docs_answer_as_shown() {
    let mut ran = 0;
    let mut failures = Vec::new();
    for file in documents() {
        let blocks = blocks(&file);
        let mut i = 0;
        while i < blocks.len() {
            let block = &blocks[i];
            let mut words = block.info.split_whitespace();
            let kind = (words.next().unwrap_or_default(), words.next().unwrap_or_default());
            let answer = || {
                let next = blocks.get(i + 1).filter(|b| b.info.starts_with("json answer"));
                let next =
                    next.unwrap_or_else(|| panic!("{}: no `json answer` block after it", block.at));
                parse(&next.text, &next.at)
            };
            match kind {
                ("json", "call") => {
                    let tool = words.next().unwrap_or_else(|| panic!("{}: which tool?", block.at));
                    let expected = answer();
                    i += 1;
                    if ready(&block.info) {
                        let mut server = server();
                        let result = server.call(tool, parse(&block.text, &block.at));
                        if let Err(e) =
                            compare(&expected, &result["structuredContent"], &block.at, "")
                        {
                            failures.push(e);
                        }
                        ran += 1;
                    }
                }
                ("sh", "run") => {
                    let expected = answer();
                    i += 1;
                    let line = block.text.lines().find(|l| l.contains(" run --")).unwrap();
                    let args = line.split_once(" run ").unwrap().1;
                    let args: Vec<String> =
                        args.split_whitespace().map(|w| w.trim_matches('\'').to_string()).collect();
                    let output = std::process::Command::new(env!("CARGO_BIN_EXE_debug-mcp-server"))
                        .arg("run")
                        .args(&args)
                        .current_dir(root())
                        .output()
                        .unwrap();
                    let printed = parse(&String::from_utf8_lossy(&output.stdout), &block.at);
                    crate::schema::check("debug-script", &printed);
                    if let Err(e) = compare(&expected, &printed, &block.at, "") {
                        failures.push(e);
                    }
                    ran += 1;
                }
                ("text", "session") if ready(&block.info) => {
                    let mut server = server();
                    for (tool, arguments, expected) in session(block) {
                        let result = server.call(&tool, arguments);
                        let at = format!("{} ({tool})", block.at);
                        if let Err(e) = compare(&expected, &result["structuredContent"], &at, "") {
                            failures.push(e);
                            break;
                        }
                    }
                    ran += 1;
                }
                _ => {}
            }
            i += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "{} example(s) answer otherwise:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(ran >= 5, "only {ran} examples found");
}

#[test]
fn shapes_compare_as_documented() {
    use serde_json::json;
    let ok = |e: Value, a: Value| compare(&e, &a, "x", "").is_ok();
    assert!(ok(json!({"a": 1, "…": true}), json!({"a": 1, "b": 2})));
    assert!(!ok(json!({"a": 1}), json!({"a": 1, "b": 2})));
    assert!(!ok(json!({"a": 1, "b": 2}), json!({"a": 1})));
    assert!(ok(json!([1, "…"]), json!([1, 2, 3])));
    assert!(!ok(json!([1, 2]), json!([1, 2, 3])));
    assert!(ok(json!("total…"), json!("total 35\n")));
    assert!(ok(json!({"pid": 1}), json!({"pid": 4242})));
    assert!(!ok(json!({"id": 1}), json!({"id": 2})));
    assert!(ok(json!("/path/to/debug-mcp/x"), json!(format!("{}/x", root().display()))));
}
