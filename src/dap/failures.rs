//! `debug-script`'s `failures` for compiled programs through their debug adapter: a Go test's
//! `t.Error`/`t.Fatal` (and their f forms: all call `testing.(*common).Fail`), a Go panic
//! (Delve stops on an unrecovered one by itself), a Rust panic (`rust_panic`, where unwinding
//! starts: a failing `cargo test`), a fatal signal or an abort in C and C++ (the adapter stops
//! there by itself). The flavour names the functions to stop at ([`Flavour::failure_functions`]);
//! at each such stop the run reads the record here and goes on.

use serde_json::{json, Value};

use crate::dap::flavour::Flavour;
use crate::debugger::script::{failure_record, Locals, FAILURE_FRAMES, FAILURE_MESSAGE};

/// Whether a stop's reason may be a failure (not a breakpoint, a step or a pause of ours).
pub(crate) fn may_be_failure(reason: &str) -> bool {
    !matches!(
        reason,
        "breakpoint"
            | "step"
            | "pause"
            | "entry"
            | "goto"
            | "data breakpoint"
            | "instruction breakpoint"
    )
}

/// The record of a failure stop (`at_function`: at one of the flavour's failure functions, else
/// an exception or a signal): `frames` is the stop's stack as the adapter answered it
/// (`stackFrames`, top first); `ask` sends a request and waits for its answer.
pub(crate) fn record<F: Flavour>(
    flavour: &F,
    body: &Value,
    at_function: bool,
    frames: &[Value],
    ask: &mut dyn FnMut(&str, Value) -> Option<Value>,
) -> Option<Value> {
    let path = |f: &Value| f.pointer("/source/path").and_then(Value::as_str).map(String::from);
    let own: Vec<&Value> =
        frames.iter().filter(|f| path(f).is_some_and(|p| !flavour.is_library(&p))).collect();
    if own.is_empty() {
        return None;
    }
    let top = frames.first()?;
    let thread = &body["threadId"];
    let caller = frames.get(1).and_then(|f| f["name"].as_str()).unwrap_or_default();
    // A subtest's Fail marks its parent failed through Fail again; a test that panicked is
    // marked failed by tRunner's recovery, then the panic goes on (recorded at its stop).
    if at_function && (caller.contains("(*common).Fail") || caller.contains("tRunner")) {
        return None;
    }
    let (kind, kind_type, mut message, test) = match at_function {
        true => {
            let name = top["name"].as_str().unwrap_or_default();
            match name.contains("testing.") {
                // t.Error, t.Fatal and the rest: what the test logged, and its name.
                true => {
                    let mut text = |expression: &str| {
                        let arguments = json!({"expression": expression, "frameId": top["id"], "context": "clipboard"});
                        ask("evaluate", arguments).and_then(|a| a["result"].as_str().map(unquote))
                    };
                    // Delve cuts a string at 64 bytes (older ones in every context): read in
                    // slices of that, up to the message's cap.
                    let length = text("len(c.output)").and_then(|n| n.parse::<usize>().ok());
                    let mut logged = String::new();
                    for start in (0..length.unwrap_or(0).min(FAILURE_MESSAGE)).step_by(64) {
                        let end = (start + 64).min(length.unwrap_or(0));
                        logged +=
                            &text(&format!("string(c.output[{start}:{end}])")).unwrap_or_default();
                    }
                    ("test", "t.Error".to_string(), test_log(&logged), text("c.name"))
                }
                false => ("panic", "panic".to_string(), String::new(), None),
            }
        }
        false => {
            let info = ask("exceptionInfo", json!({"threadId": thread}));
            let info = info.unwrap_or_default();
            let id = info["exceptionId"].as_str().or_else(|| body["description"].as_str());
            let text = info["description"].as_str().or_else(|| body["text"].as_str());
            let kind = if id.is_some_and(|i| i.contains("panic")) { "panic" } else { "signal" };
            // lldb says `signal SIGSEGV: …`: the signal's name is the type.
            let signal = text
                .and_then(|t| t.strip_prefix("signal "))
                .and_then(|t| t.split([':', ' ']).next());
            let id = signal.or(id);
            let text = text.map(|t| if t.starts_with('"') { unquote(t) } else { t.to_string() });
            (kind, id.unwrap_or("exception").to_string(), text.unwrap_or_default(), None)
        }
    };
    // A panic's message is in the output, read at the end (`panic_message`).
    if message.is_empty() && kind != "panic" {
        message = body["text"]
            .as_str()
            .or_else(|| body["description"].as_str())
            .unwrap_or("")
            .to_string();
    }
    let listed: Vec<Value> = own
        .iter()
        .take(FAILURE_FRAMES)
        .map(|f| {
            json!({"function": demangled(flavour.function_name(f["name"].as_str().unwrap_or_default())),
                   "file": path(f), "line": f["line"], "locals": locals(&f["id"], ask)})
        })
        .collect();
    let mut record = failure_record(kind, &kind_type, message.trim(), listed, frames.len());
    // A Go test's function is `pkg.TestName`: the outermost own frame so named is the test.
    let go_test = || {
        own.iter().rev().find_map(|f| {
            let name = f["name"].as_str()?.rsplit('.').next()?;
            (name.starts_with("Test") && name.len() > 4).then(|| name.to_string())
        })
    };
    if let Some(test) = test.filter(|t| !t.is_empty()).or_else(go_test) {
        record["test"] = test.into();
    }
    Some(record)
}

/// A frame's locals (and arguments) as `{name: value text}`.
pub(crate) fn locals(frame: &Value, ask: &mut dyn FnMut(&str, Value) -> Option<Value>) -> Value {
    let mut shown = Locals::default();
    let Some(scopes) = ask("scopes", json!({"frameId": frame})) else { return json!({}) };
    for scope in scopes["scopes"].as_array().into_iter().flatten() {
        let name = scope["name"].as_str().unwrap_or_default().to_ascii_lowercase();
        let hint = scope["presentationHint"].as_str().unwrap_or_default();
        let local = matches!(hint, "locals" | "arguments")
            || name.starts_with("local")
            || name.starts_with("argument");
        if !local {
            continue;
        }
        let listed = ask("variables", json!({"variablesReference": scope["variablesReference"]}));
        for variable in
            listed.iter().flat_map(|l| l["variables"].as_array().cloned().unwrap_or_default())
        {
            let name = variable["name"].as_str().unwrap_or_default();
            // Go's unnamed results (`~r0`) and a test's `t`, the same in every test.
            let kind = variable["type"].as_str().unwrap_or_default();
            let noise = name.starts_with(['~', '<']) || matches!(kind, "*testing.T" | "*testing.B");
            if !noise {
                shown.add(name, variable["value"].as_str().unwrap_or_default());
            }
        }
    }
    shown.into_json()
}

/// A Rust symbol's escapes spelled out (`_$u7b$$u7b$closure$u7d$$u7d$`: `{{closure}}`).
fn demangled(name: &str) -> String {
    let name =
        name.replace("$u7b$", "{").replace("$u7d$", "}").replace("$LT$", "<").replace("$GT$", ">");
    name.replace("::_{", "::{")
}

/// A Go string as Delve shows it (`"text"`), unquoted.
fn unquote(text: &str) -> String {
    serde_json::from_str::<String>(text).unwrap_or_else(|_| text.trim_matches('"').to_string())
}

/// What a Go test logged, without the indentation and `file.go:12: ` each line starts with.
fn test_log(logged: &str) -> String {
    logged
        .lines()
        .map(|line| {
            let line = line.trim_start();
            match line.split_once(": ") {
                Some((place, rest)) if place.contains(".go:") => rest,
                _ => line,
            }
        })
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A Rust panic's message, from the output: the lines after `thread 'TEST' panicked at
/// FILE:LINE:COL:` up to a blank one, a `note:` or a backtrace. The panic is found by its
/// thread's name (the test), else by its place (the failure's first frame), else as the
/// output's only panic.
pub(crate) fn panic_message(
    output: &str,
    file: &str,
    line: u64,
    test: Option<&str>,
) -> Option<String> {
    let name = std::path::Path::new(file).file_name()?.to_str()?;
    let lines: Vec<&str> = output.lines().collect();
    let panics: Vec<usize> =
        (0..lines.len()).filter(|&i| lines[i].contains(" panicked at ")).collect();
    let by_test = |&&i: &&usize| test.is_some_and(|t| lines[i].contains(&format!("thread '{t}'")));
    let by_place = |&&i: &&usize| {
        let place = lines[i].rsplit(" panicked at ").next().unwrap_or_default();
        let mut parts = place.trim_end_matches(':').rsplitn(3, ':');
        let (_, at, path) = (parts.next(), parts.next(), parts.next());
        path.is_some_and(|p| p.ends_with(name)) && at == Some(line.to_string().as_str())
    };
    let found = panics
        .iter()
        .find(by_test)
        .or_else(|| panics.iter().find(by_place))
        .or_else(|| (panics.len() == 1).then(|| &panics[0]))?;
    let message: Vec<&str> = lines[found + 1..]
        .iter()
        .take_while(|l| {
            !l.is_empty() && !l.starts_with("note:") && !l.starts_with("stack backtrace:")
        })
        .copied()
        .collect();
    Some(message.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_logs_and_rust_panics_read_as_messages() {
        assert_eq!(test_log("    calc_test.go:12: got 5.4, want 6\n"), "got 5.4, want 6");
        let output = "running 1 test\nthread 'tests::adds' panicked at src/lib.rs:9:9:\n\
                      assertion `left == right` failed\n  left: 5\n right: 6\nnote: run with \
                      `RUST_BACKTRACE=1`\n";
        let expected = Some("assertion `left == right` failed\n  left: 5\n right: 6");
        assert_eq!(panic_message(output, "/x/src/lib.rs", 9, None).as_deref(), expected);
        // The only panic, at a macro's call site rather than the frame's line.
        assert_eq!(panic_message(output, "/x/src/lib.rs", 3, None).as_deref(), expected);
        assert_eq!(
            panic_message(output, "/x/src/lib.rs", 3, Some("tests::adds")).as_deref(),
            expected
        );
        let two = format!("{output}thread 'b' panicked at src/b.rs:1:1:\nother\n");
        assert_eq!(panic_message(&two, "/x/src/lib.rs", 3, Some("x")), None);
        assert_eq!(
            demangled("rt::tests::t::_$u7b$$u7b$closure$u7d$$u7d$"),
            "rt::tests::t::{{closure}}"
        );
    }
}
