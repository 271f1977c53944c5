//! The command-line face: `run`, `--help`, `--version`.

use std::process::Command;

use serde_json::{json, Value};

use crate::{assert_no_debuggee, fixture, plain_results, root, tag};

fn debug_mcp(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_debug-mcp-server"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    if let (Some(&"run"), Ok(printed)) = (args.first(), serde_json::from_str::<Value>(&stdout)) {
        crate::schema::check("debug-script", &printed);
    }
    (output.status.code().unwrap_or(-1), stdout, String::from_utf8(output.stderr).unwrap())
}

#[test]
fn run_prints_the_result_and_sets_the_exit_code() {
    let tag = tag();
    let env = format!("DMCP_TAG={tag}");
    let (code, stdout, _) = debug_mcp(&[
        "run",
        "--break",
        "fixtures/loop.js:5",
        "--eval",
        "total",
        "--",
        &env,
        "node",
        "fixtures/loop.js",
    ]);
    assert_eq!(code, 0);
    let result: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        plain_results(&result),
        json!([{"type": "number", "value": 0}, {"type": "number", "value": 10}, {"type": "number", "value": 25}])
    );
    assert_eq!(result["breakpoint"]["file"], fixture("loop.js"));
    assert_no_debuggee(&tag);

    let (code, stdout, _) = debug_mcp(&[
        "run",
        "--break",
        "fixtures/count.js:6",
        "--eval",
        "i",
        "--condition",
        "i > 7",
        "--max-hits",
        "2",
        "--timeout",
        "20000",
        "--",
        &env,
        "node",
        "fixtures/count.js",
        "10",
    ]);
    assert_eq!(code, 0);
    let result: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        plain_results(&result),
        json!([{"type": "number", "value": 8}, {"type": "number", "value": 9}])
    );
    assert_eq!(result["hitsCapped"], true);

    let (code, stdout, _) = debug_mcp(&[
        "run",
        "--break",
        "fixtures/loop.js:5",
        "--eval",
        "total",
        "--",
        &env,
        "node",
        "fixtures/syntax_error.js",
    ]);
    assert_eq!(code, 1);
    let result: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(result["error"], "Process exited before breakpoint was hit");
    assert_no_debuggee(&tag);
}

#[test]
fn usage_errors_help_and_version() {
    let (code, _, stderr) = debug_mcp(&["run", "--eval", "x", "--", "node", "a.js"]);
    assert_eq!(code, 2);
    assert!(stderr.starts_with("debug-mcp-server run: --break FILE:LINE is required"), "{stderr}");
    let (code, _, stderr) = debug_mcp(&["run", "--break", "a.js:x", "--eval", "1", "--", "node"]);
    assert_eq!(code, 2);
    assert!(
        stderr.starts_with("debug-mcp-server run: --break a.js:x: `x` is not a line number"),
        "{stderr}"
    );
    let (code, _, stderr) = debug_mcp(&["--bogus"]);
    assert_eq!(code, 2);
    assert!(stderr.starts_with("debug-mcp-server: unknown argument `--bogus`"));
    let (code, stdout, _) = debug_mcp(&["--help"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("debug-mcp-server run --break FILE:LINE --eval EXPR"));
    for runtime in ["Node.js", "Deno", "Chromium", "Python", "C, C++", "Rust", "Zig", "Go"] {
        assert!(stdout.contains(runtime), "--help does not name {runtime}: {stdout}");
    }
    assert!(!stdout.contains("JavaScript or Python"), "{stdout}");
    let (code, stdout, _) = debug_mcp(&["--version"]);
    assert_eq!(code, 0);
    assert_eq!(stdout, format!("debug-mcp-server {}\n", env!("CARGO_PKG_VERSION")));
}

#[test]
fn run_debugs_a_page_given_by_its_file() {
    if !crate::need::need(crate::need::Tool::Chromium) {
        return;
    }
    let (code, stdout, stderr) = debug_mcp(&[
        "run",
        "--break",
        "fixtures/web/static/cart.js:4",
        "--eval",
        "item.name",
        "--url",
        "fixtures/web/static/index.html",
        "--until",
        "1000",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let result: Value = serde_json::from_str(&stdout).unwrap();
    let names: Vec<&Value> =
        result["results"].as_array().unwrap().iter().map(|r| &r["value"]).collect();
    assert_eq!(names, vec!["pen", "ink", "late"], "{result}");
    assert_eq!(result["output"]["stdout"], "total 7\n", "{result}");
    let (code, _, stderr) = debug_mcp(&[
        "run", "--break", "a.js:1", "--eval", "1", "--url", "x.html", "--", "node", "a.js",
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("give a command after `--` or --url, not both"), "{stderr}");
}
