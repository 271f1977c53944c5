//! `debug-script`'s `failures` for compiled programs through their debug adapter: a Go test's
//! `t.Error`/`t.Fatal` (and their f forms: all call `testing.(*common).Fail`), a Go panic
//! (Delve stops on an unrecovered one by itself), a Rust panic (`rust_panic`, where unwinding
//! starts: a failing `cargo test`), a fatal signal or an abort in C and C++ (the adapter stops
//! there by itself). The flavour names the functions to stop at ([`Flavour::failure_functions`]);
//! at each such stop the run reads the record here and goes on.

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::dap::flavour::Flavour;
use crate::dap::values::{preview, SHOWN};
use crate::debugger::limits::{FAILURE_FRAMES, FAILURE_MESSAGE};
use crate::debugger::script::{failure_record, Locals};

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
/// (`stackFrames`, top first); `go_logs`, how much of each Go test's log its earlier failures
/// read; `ask` sends a request and waits for its answer.
pub(crate) fn record<F: Flavour>(
    flavour: &F,
    body: &Value,
    at_function: bool,
    frames: &[Value],
    go_logs: &mut HashMap<String, usize>,
    ask: &mut dyn FnMut(&str, Value) -> Option<Value>,
) -> Option<Value> {
    let path = |f: &Value| f.pointer("/source/path").and_then(Value::as_str).map(String::from);
    // (The Rust test harness's closure around each test is in the test's file but none of its
    // code: left out.)
    let own: Vec<&Value> = (0..frames.len())
        .filter(|&i| path(&frames[i]).is_some_and(|p| !flavour.is_library(&p)))
        .filter(|&i| harness_closure(frames, i).is_none())
        .map(|i| &frames[i])
        .collect();
    if own.is_empty() {
        return None;
    }
    let top = frames.first()?;
    let thread = &body["threadId"];
    let caller = frames.get(1).and_then(|f| f["name"].as_str()).unwrap_or_default();
    // A subtest's Fail marks its parent failed through Fail again; a test that panicked is
    // marked failed by tRunner's recovery, then the panic goes on (recorded at its stop).
    // (t.Fatal's FailNow calls Fail too: that is the test's own failure.)
    let parent_marked = caller.ends_with("(*common).Fail") || caller.contains("tRunner");
    if at_function && parent_marked {
        return None;
    }
    let (kind, kind_type, mut message, test) = match at_function {
        true => {
            let name = top["name"].as_str().unwrap_or_default();
            match name.contains("testing.") {
                // t.Error, t.Fatal and the rest: what the test logged since its last
                // failure, and its name.
                true => {
                    let mut text = |expression: &str| {
                        let arguments = json!({"expression": expression, "frameId": top["id"], "context": "clipboard"});
                        ask("evaluate", arguments).and_then(|a| a["result"].as_str().map(go_bytes))
                    };
                    let name = text("c.name").map(|n| String::from_utf8_lossy(&n).into_owned());
                    let length = text("len(c.output)")
                        .and_then(|n| String::from_utf8(n).ok()?.parse::<usize>().ok())
                        .unwrap_or(0);
                    // The log is the test's whole output: what earlier failures read is
                    // theirs (a flush to the parent empties it).
                    let key = name.clone().unwrap_or_default();
                    let read = go_logs.get(&key).copied().filter(|&r| r <= length).unwrap_or(0);
                    // The failure's own entry is the last: read at most the tail that holds it.
                    let start = read.max(length.saturating_sub(2 * FAILURE_MESSAGE));
                    // Delve cuts a string at 64 bytes (older ones in every context): read in
                    // slices of that, as bytes (a slice may end inside a character).
                    let mut logged = Vec::new();
                    for from in (start..length).step_by(64) {
                        let to = (from + 64).min(length);
                        logged.extend(
                            text(&format!("string(c.output[{from}:{to}])")).unwrap_or_default(),
                        );
                    }
                    go_logs.insert(key, length);
                    let logged = String::from_utf8_lossy(&logged);
                    let kind =
                        if caller.ends_with("(*common).FailNow") { "t.Fatal" } else { "t.Error" };
                    ("test", kind.to_string(), last_log_entry(&logged), name)
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
            json!({"function": f["name"],
                   "file": path(f), "line": f["line"], "locals": locals(flavour, &f["id"], ask)})
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

/// What a program printed for the signal that ended it, from its `stderr`: a failed `assert`'s
/// line, a sanitizer's error and summary, C++'s `terminate called after throwing` with its
/// `what()`. None when it printed none of those (a segmentation fault says nothing).
pub(crate) fn signal_text(stderr: &str) -> Option<String> {
    let lines: Vec<&str> = stderr.lines().collect();
    let last = |found: &dyn Fn(&str) -> bool| lines.iter().rposition(|l| found(l));
    if let Some(at) = last(&|l: &str| l.contains(": Assertion `") && l.ends_with("failed.")) {
        return Some(lines[at].to_string());
    }
    let sanitizer = |l: &str| l.starts_with("==") && l.contains("==ERROR: ");
    if let Some(at) = lines.iter().position(|l| sanitizer(l)) {
        let error = lines[at].split_once("==ERROR: ").map_or(lines[at], |(_, e)| e);
        let summary = lines[at..].iter().find(|l| l.starts_with("SUMMARY: "));
        return Some(match summary {
            Some(summary) => format!("{error}\n{summary}"),
            None => error.to_string(),
        });
    }
    if let Some(at) = last(&|l: &str| l.starts_with("terminate called after throwing")) {
        let what = lines.get(at + 1).filter(|l| l.trim_start().starts_with("what():"));
        return Some(match what {
            Some(what) => format!("{}\n{}", lines[at], what.trim_start()),
            None => lines[at].to_string(),
        });
    }
    None
}

/// The Rust test a panic's frames are in: the harness calls each `#[test]` function `P`
/// through a closure of its own, `P::{{closure}}`, so the outermost frame so named, over `P`,
/// names the test (`P` without its crate: `tests::parses_headers`).
pub(crate) fn rust_test(frames: &[Value]) -> Option<String> {
    let test = (1..frames.len()).rev().find_map(|i| harness_closure(frames, i))?;
    Some(test.split_once("::").map_or(test, |(_, t)| t).to_string())
}

/// Whether frame `i` is the Rust test harness's closure around the test `P` in frame `i - 1`
/// (`P::{{closure}}`): `P`, when it is.
fn harness_closure(frames: &[Value], i: usize) -> Option<&str> {
    let name = |i: usize| frames.get(i).and_then(|f| f["name"].as_str());
    let test = name(i)?.strip_suffix("::{{closure}}")?;
    (i > 0 && name(i - 1) == Some(test)).then_some(test)
}

/// A frame's locals (and arguments) as `{name: preview}` (`dap::values::preview`: what a
/// reference, a structure or a sequence holds, where the adapter's text only points at it).
pub(crate) fn locals<F: Flavour>(
    flavour: &F,
    frame: &Value,
    ask: &mut dyn FnMut(&str, Value) -> Option<Value>,
) -> Value {
    variables(flavour, frame, ask, None)
}

/// A function's arguments at its start, as `locals`: the frame's variables named `params`
/// (an adapter lists them with the locals, which hold nothing yet).
pub(crate) fn arguments<F: Flavour>(
    flavour: &F,
    frame: &Value,
    ask: &mut dyn FnMut(&str, Value) -> Option<Value>,
    params: &[String],
) -> Value {
    match params.is_empty() {
        true => json!({}),
        false => variables(flavour, frame, ask, Some(params)),
    }
}

fn variables<F: Flavour>(
    flavour: &F,
    frame: &Value,
    ask: &mut dyn FnMut(&str, Value) -> Option<Value>,
    only: Option<&[String]>,
) -> Value {
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
            let noise = match only {
                Some(params) => !params.iter().any(|p| p == name),
                None => {
                    name.starts_with(['~', '<'])
                        || matches!(kind, "*testing.T" | "*testing.B")
                        || flavour.group(name, true) == Some(false)
                }
            };
            // lldb's word for a value it cannot read (`<error: no location, value may have
            // been optimized out>`) is no value.
            let unreadable = variable["value"].as_str().is_some_and(|v| v.starts_with("<error:"));
            if !noise && !unreadable {
                let mut children = |reference: &Value| {
                    let arguments = json!({"variablesReference": reference, "count": SHOWN + 1});
                    let listed = ask("variables", arguments).unwrap_or_default();
                    listed["variables"].as_array().cloned().unwrap_or_default()
                };
                shown.add(flavour.local_name(name), &preview(flavour, &variable, &mut children));
            }
        }
    }
    shown.into_json()
}

/// A Go string as Delve shows it (`"text"`), unquoted.
pub(crate) fn unquote(text: &str) -> String {
    String::from_utf8_lossy(&go_bytes(text)).into_owned()
}

/// The bytes of a Go string literal as Delve writes it (`"a \"b\" \xe3\x81"`, Go's
/// `strconv.Quote`): a string cut inside a character has its bytes escaped. Text without the
/// quotes is taken as it is.
fn go_bytes(text: &str) -> Vec<u8> {
    let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) else {
        return text.as_bytes().to_vec();
    };
    let mut bytes = Vec::with_capacity(inner.len());
    let mut chars = inner.chars();
    let hex = |chars: &mut std::str::Chars, n: usize| -> Option<u32> {
        let digits: String = chars.by_ref().take(n).collect();
        u32::from_str_radix(&digits, 16).ok().filter(|_| digits.len() == n)
    };
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buffer = [0u8; 4];
            bytes.extend_from_slice(c.encode_utf8(&mut buffer).as_bytes());
            continue;
        }
        let escaped = chars.next().unwrap_or('\\');
        let simple = match escaped {
            'a' => Some(0x07),
            'b' => Some(0x08),
            'f' => Some(0x0c),
            'n' => Some(b'\n'),
            'r' => Some(b'\r'),
            't' => Some(b'\t'),
            'v' => Some(0x0b),
            '\\' | '"' | '\'' => Some(escaped as u8),
            _ => None,
        };
        if let Some(byte) = simple {
            bytes.push(byte);
            continue;
        }
        let code = match escaped {
            'x' => hex(&mut chars, 2).map(|b| (b, true)),
            'u' => hex(&mut chars, 4).map(|c| (c, false)),
            'U' => hex(&mut chars, 8).map(|c| (c, false)),
            '0'..='7' => {
                let rest: String = chars.by_ref().take(2).collect();
                u32::from_str_radix(&format!("{escaped}{rest}"), 8).ok().map(|b| (b, true))
            }
            _ => None,
        };
        match code {
            Some((byte, true)) => bytes.push(byte as u8),
            Some((code, false)) => {
                let c = char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER);
                let mut buffer = [0u8; 4];
                bytes.extend_from_slice(c.encode_utf8(&mut buffer).as_bytes());
            }
            None => bytes.extend_from_slice(&[b'\\', escaped as u8]),
        }
    }
    bytes
}

/// The last entry of what a Go test logged (`    file.go:12: text`, each further line
/// indented four more spaces), as the test wrote it: without the place and the indentation.
fn last_log_entry(logged: &str) -> String {
    let lines: Vec<&str> = logged.lines().collect();
    let is_entry = |line: &&str| {
        line.strip_prefix("    ").is_some_and(|rest| {
            !rest.starts_with(' ')
                && rest.split_once(": ").is_some_and(|(at, _)| at.contains(".go:"))
        })
    };
    let Some(first) = lines.iter().rposition(is_entry) else {
        return logged.trim().to_string();
    };
    let mut entry = Vec::new();
    for (i, line) in lines[first..].iter().enumerate() {
        entry.push(match i {
            0 => line.trim_start().split_once(": ").map_or(*line, |(_, text)| text),
            _ => line.strip_prefix("        ").unwrap_or(line),
        });
    }
    entry.join("\n")
}

/// A Rust panic's message, from the output: the lines after `thread 'TEST' panicked at
/// FILE:LINE:COL:` up to a blank one, a `note:` or a backtrace; and the thread's name as that
/// line says it (a thread's own name is cut at 15 bytes: `tests::bumps_mi`). The panic is
/// found by its thread's name (the test), else by its place (the failure's first frame), else
/// by the name cut short when only one panic starts so, else as the output's only panic.
pub(crate) fn panic_message(
    output: &str,
    file: &str,
    line: u64,
    test: Option<&str>,
) -> Option<(String, Option<String>)> {
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
    let cut_short = test.map(|t| format!("thread '{t}"));
    let by_prefix: Vec<&usize> = panics
        .iter()
        .filter(|&&i| cut_short.as_ref().is_some_and(|c| lines[i].contains(c)))
        .collect();
    let found = panics
        .iter()
        .find(by_test)
        .or_else(|| panics.iter().find(by_place))
        .or_else(|| (by_prefix.len() == 1).then(|| by_prefix[0]))
        .or_else(|| (panics.len() == 1).then(|| &panics[0]))?;
    let message: Vec<&str> = lines[found + 1..]
        .iter()
        .take_while(|l| {
            !l.is_empty() && !l.starts_with("note:") && !l.starts_with("stack backtrace:")
        })
        .copied()
        .collect();
    // `thread 'NAME' panicked at`, or since Rust 1.89 `thread 'NAME' (TID) panicked at`.
    let thread = lines[*found]
        .split_once("thread '")
        .and_then(|(_, rest)| rest.split_once('\''))
        .map(|(thread, _)| thread.to_string());
    Some((message.join("\n"), thread))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_program_printed_for_its_signal() {
        let assert = "to stderr\nboth: both.c:7: main: Assertion `argc < 2' failed.\n";
        assert_eq!(
            signal_text(assert).unwrap(),
            "both: both.c:7: main: Assertion `argc < 2' failed."
        );
        let asan = "=================================================================\n\
            ==4242==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602 at pc 0x55\n\
            READ of size 4 at 0x602 thread T0\n    #0 0x55 in main a.c:5\n\
            SUMMARY: AddressSanitizer: heap-buffer-overflow a.c:5 in main\n";
        assert_eq!(
            signal_text(asan).unwrap(),
            "AddressSanitizer: heap-buffer-overflow on address 0x602 at pc 0x55\n\
             SUMMARY: AddressSanitizer: heap-buffer-overflow a.c:5 in main"
        );
        let cpp = "terminate called after throwing an instance of 'std::runtime_error'\n  what():  boom\n";
        assert_eq!(
            signal_text(cpp).unwrap(),
            "terminate called after throwing an instance of 'std::runtime_error'\nwhat():  boom"
        );
        assert_eq!(signal_text("Segmentation fault\n"), None);
    }

    #[test]
    fn go_logs_and_rust_panics_read_as_messages() {
        assert_eq!(last_log_entry("    calc_test.go:12: got 5.4, want 6\n"), "got 5.4, want 6");
        assert_eq!(
            last_log_entry("    a_test.go:3: one\n    a_test.go:4: two\n        lines\n"),
            "two\nlines"
        );
        // Delve's quoting: a character cut between two slices, escaped quotes and backslashes.
        let cut = go_bytes(r#""say \"\xe4\xb8""#);
        let rest = go_bytes(r#""\x96界\"\\n\t""#);
        let joined = String::from_utf8([cut, rest].concat()).unwrap();
        assert_eq!(joined, "say \"世界\"\\n\t");
        assert_eq!(go_bytes("42"), b"42");
        assert_eq!(unquote(r#""\u00e9\101""#), "éA");
        let output = "running 1 test\nthread 'tests::adds' panicked at src/lib.rs:9:9:\n\
                      assertion `left == right` failed\n  left: 5\n right: 6\nnote: run with \
                      `RUST_BACKTRACE=1`\n";
        let expected = Some("assertion `left == right` failed\n  left: 5\n right: 6");
        let message = |output: &str, line, test| {
            panic_message(output, "/x/src/lib.rs", line, test)
                .map(|(m, t)| (m, t.unwrap_or_default()))
        };
        let expected = expected.map(|m| (m.to_string(), "tests::adds".to_string()));
        assert_eq!(message(output, 9, None), expected);
        // The only panic, at a macro's call site rather than the frame's line.
        assert_eq!(message(output, 3, None), expected);
        assert_eq!(message(output, 3, Some("tests::adds")), expected);
        let two = format!("{output}thread 'b' panicked at src/b.rs:1:1:\nother\n");
        assert_eq!(message(&two, 3, Some("x")), None);
        // A thread's name cut at 15 bytes: its full name is the panic's.
        assert_eq!(message(&two, 3, Some("tests::ad")), expected);
        let with_id = output.replace("'tests::adds' panicked", "'tests::adds' (4424) panicked");
        assert_eq!(message(&with_id, 3, Some("tests::ad")), expected);
    }
}
