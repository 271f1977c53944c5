//! Rust under lldb-dap as an agent meets it: a `cargo test` whose tests fail at once in many
//! threads (each failure names its whole test, and carries its own panic message), names
//! demangled in every answer.

use serde_json::{json, Value};

use crate::need::{need, Tool};
use crate::{fixture, ok, tool, Server};

fn names() -> String {
    fixture("native/rust-names")
}

fn cargo_test(filter: &str) -> String {
    let target = crate::native::out_dir().join("rust-names");
    format!("CARGO_TARGET_DIR={} cargo test {filter}", target.display())
}

/// The fixture crate's `cargo test` with every failure recorded.
fn every_failure(server: &mut Server) -> Value {
    server.debug_script(json!({"command": cargo_test(""), "cwd": names(),
        "failures": true, "maxFailures": 20, "timeout": 240000}))
}

/// Nine tests whose names share their first 15 bytes (all a thread's name holds) fail at
/// once: each failure names its own whole test, the one whose frames it holds, and its
/// message is that test's panic, `left` and `right` as printed. Before, every record was
/// named `tests::content_length_header_eight` and carried its message.
#[test]
fn every_failure_names_its_own_whole_test_and_its_own_values() {
    if !need(Tool::Lldb) {
        return;
    }
    let mut server = Server::initialized();
    let result = every_failure(&mut server);
    let s = ok(&result);
    let failures = s["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 9, "{s}");
    let numbers = ["one", "two", "three", "four", "five", "six", "seven", "eight"];
    let mut tests: Vec<&str> = Vec::new();
    for failure in failures {
        let test = failure["test"].as_str().unwrap_or_else(|| panic!("no test: {failure}"));
        tests.push(test);
        let frames = failure["frames"].as_array().unwrap();
        let functions: Vec<&str> = frames.iter().map(|f| f["function"].as_str().unwrap()).collect();
        assert!(functions.contains(&format!("rust_names::{test}").as_str()), "{failure}");
        assert!(functions.iter().all(|f| !f.contains('$') && !f.contains("::h")), "{failure}");
        let message = failure["message"].as_str().unwrap();
        if let Some(n) = test.strip_prefix("tests::content_length_header_") {
            let n = numbers.iter().position(|w| *w == n).unwrap() + 1;
            assert_eq!(
                message,
                format!(
                    "assertion `left == right` failed\n  left: Ok(Partial)\n right: \
                     Ok(Complete((17, {n})))"
                ),
                "{failure}"
            );
        } else {
            assert_eq!(test, "tests::content_length_async_parse", "{failure}");
            assert!(message.contains("right: Complete((18, 42))"), "{failure}");
            assert_eq!(functions[0], "rust_names::length_of::{{closure}}", "{failure}");
        }
    }
    tests.sort();
    tests.dedup();
    assert_eq!(tests.len(), 9, "{tests:?}");
}

/// A session's stack and stop location name closures as the source does: `{{closure}}`, not
/// `_$u7b$$u7b$closure$u7d$$u7d$`.
#[test]
fn names_are_demangled_in_sessions() {
    if !need(Tool::Lldb) {
        return;
    }
    let mut server = Server::initialized();
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": cargo_test("content_length_header_two"), "cwd": names(),
               "breakpoints": [{"file": "src/lib.rs", "line": 66}], "timeout": 240000}),
    );
    assert_eq!(state["location"]["function"], "rust_names::tests::expect", "{state}");
    let stack = tool(&mut server, "debug-stack", json!({}));
    let functions: Vec<&Value> =
        stack["frames"].as_array().unwrap().iter().map(|f| &f["function"]).collect();
    assert_eq!(
        functions[..3],
        [
            &json!("rust_names::tests::expect"),
            &json!("rust_names::tests::content_length_header_two"),
            &json!("rust_names::tests::content_length_header_two::{{closure}}")
        ],
        "{stack}"
    );
    tool(&mut server, "debug-stop", json!({}));
}

/// What a failure and a stop show of values: an `assert_eq!`'s `left_val` and `right_val` (a
/// reference to an enum) as the enum (`Ok(Partial)`, not its raw `$variants$` cut after its type
/// name), bytes and a `u8` as the numbers Rust prints (not `'C'`), and an async fn's locals each once,
/// without the compiler's state (`<null>`: `{async_fn_env#0}`) or `_task_context`.
#[test]
fn values_read_as_rust_prints_them() {
    if !need(Tool::Lldb) {
        return;
    }
    let mut server = Server::initialized();
    let result = every_failure(&mut server);
    let s = ok(&result);
    let failures = s["failures"].as_array().unwrap();
    let of = |test: &str| {
        let failure = failures.iter().find(|f| f["test"] == test);
        failure.unwrap_or_else(|| panic!("no {test}: {s}"))["frames"][0]["locals"].clone()
    };
    let header = of("tests::content_length_header_two");
    assert_eq!(
        (&header["left_val"], &header["right_val"], &header["line"]),
        (
            &json!("Ok(Partial)"),
            &json!("Ok(Complete((17, 2)))"),
            &json!("[67, 111, 110, 116, 101, 110, 116, 45, …] (size=17)")
        ),
        "{header}"
    );
    let async_fn = of("tests::content_length_async_parse");
    let shown: Vec<&String> = async_fn.as_object().unwrap().keys().collect();
    assert_eq!(
        shown,
        ["bytes", "first", "kept", "kind", "left_val", "line", "parsed", "right_val"],
        "{async_fn}"
    );
    assert_eq!(async_fn["right_val"], "Complete((18, 42))", "{async_fn}");
    // A `u8` is a number, as Rust prints it (lldb: C's `unsigned char`, `'C'`).
    assert_eq!(async_fn["first"], "67", "{async_fn}");

    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": cargo_test("content_length_async"), "cwd": names(),
               "breakpoints": [{"file": "src/lib.rs", "line": 39}], "timeout": 240000}),
    );
    let locals: Vec<(&Value, &Value)> =
        state["locals"].as_array().unwrap().iter().map(|l| (&l["name"], &l["value"])).collect();
    let bytes = json!("[67, 111, 110, 116, 101, 110, 116, 45, …] (size=18)");
    assert_eq!(
        locals,
        [
            (&json!("line"), &bytes),
            (&json!("bytes"), &bytes),
            (&json!("first"), &json!(67)),
            (&json!("parsed"), &json!("Partial")),
            (&json!("kept"), &json!("Partial"))
        ],
        "{state}"
    );
    tool(&mut server, "debug-stop", json!({}));
}

/// `calls` on a function whose first statement is a macro defined in another file (lldb puts
/// its entry on the macro's line): every call recorded, with its arguments and return; a
/// traced function the program has no code of is said, not passed over in silence.
#[test]
fn calls_start_where_the_function_does_and_say_what_they_cannot_trace() {
    if !need(Tool::Lldb) {
        return;
    }
    let mut server = Server::initialized();
    let command = format!("{} -q --bin headers -- 'Content-Length: 5' ''", cargo_test(""));
    let command = command.replace("cargo test", "cargo run");
    let result = server.debug_script(json!({"command": command, "cwd": names(),
        "calls": [{"file": "src/lib.rs", "function": "parse_header"},
                  {"file": "src/lib.rs", "function": "block_on"}], "timeout": 240000}));
    let s = ok(&result);
    let calls: Vec<(&Value, &Value)> =
        s["calls"].as_array().unwrap().iter().map(|c| (&c["args"]["line"], &c["return"])).collect();
    assert_eq!(
        calls,
        [
            (&json!("[67, 111, 110, 116, 101, 110, 116, 45, …] (size=17)"), &json!("Ok(Partial)")),
            (&json!("[]"), &json!("Err(\"empty\")"))
        ],
        "{s}"
    );
    assert_eq!(s["output"]["stderr"], "", "{s}");
    let notes = crate::native::notes(&result);
    assert!(
        notes.iter().any(|n| n.starts_with("calls: `block_on`") && n.contains("no code of it")),
        "{notes:?}"
    );
}

/// A `failures` answer of three Rust failures fits in 8 KB whole: cargo's output (every panic
/// with its backtrace) is cut to its tail and each failure's own line, the bytes left out
/// counted. It was 36 KB here (83.5 KB on a crate with more output).
#[test]
fn three_failures_fit_in_8_kb() {
    if !need(Tool::Lldb) {
        return;
    }
    let mut server = Server::initialized();
    let command = format!("RUST_BACKTRACE=1 {}", cargo_test(""));
    let result = server.debug_script(json!({"command": command, "cwd": names(),
        "failures": true, "maxFailures": 3, "timeout": 240000}));
    let s = ok(&result);
    assert_eq!(s["failures"].as_array().unwrap().len(), 3, "{s}");
    let size = result.to_string().len();
    assert!(size <= 8 * 1024, "{size} bytes: {result}");
    let output = &s["output"];
    assert!(output["cut"]["stdout"].as_u64().unwrap() > 10_000, "{output}");
    let stdout = output["stdout"].as_str().unwrap();
    assert!(stdout.contains("test result: FAILED"), "the tail: {stdout}");
}
