//! A `failures` answer's output, trimmed to what explains the failures: the failures carry
//! their messages and frames already, and a test runner's whole output (cargo's, with every
//! panic's backtrace) cost an agent 80 KB for three failures. Each stream keeps its tail and
//! each failure's own first line (where the output names its test, or prints its message);
//! what was cut is counted.

use serde_json::{json, Value};

/// Bytes each stream keeps at most when the answer has failures (five eighths for the tail),
/// unless the answer needs the room; and the least it keeps then.
pub(crate) const STREAM: usize = 1024;
pub(crate) const STREAM_LEAST: usize = 256;
/// A kept line of a failure's own, at most.
const LINE: usize = 200;

/// `output` (`{stdout, stderr, truncated}`) with each stream trimmed to `budget` bytes for
/// `failures`, and `cut` {stdout, stderr}: the bytes left out of each.
pub(crate) fn for_failures(output: &Value, failures: &[Value], budget: usize) -> Value {
    if failures.is_empty() {
        return output.clone();
    }
    let mut trimmed = output.clone();
    let mut cut = serde_json::Map::new();
    for stream in ["stdout", "stderr"] {
        let text = output[stream].as_str().unwrap_or_default();
        let (kept, left_out) = explain(text, failures, budget);
        if left_out > 0 {
            trimmed[stream] = kept.into();
            cut.insert(stream.into(), left_out.into());
        }
    }
    if !cut.is_empty() {
        trimmed["cut"] = json!(cut);
    }
    trimmed
}

/// `text` within `stream` bytes: each failure's first line (not in the tail), then the tail,
/// in their order, `…` where lines were left out; and how many bytes were.
fn explain(text: &str, failures: &[Value], stream: usize) -> (String, usize) {
    if text.len() <= stream {
        return (text.to_string(), 0);
    }
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    // The tail: whole lines from the end.
    let mut tail_from = lines.len();
    let mut tail_bytes = 0;
    while tail_from > 0 && tail_bytes + lines[tail_from - 1].len() <= stream * 5 / 8 {
        tail_from -= 1;
        tail_bytes += lines[tail_from].len();
    }
    let mut kept: Vec<usize> = Vec::new();
    let mut budget = stream - tail_bytes;
    for failure in failures {
        let marks = own_marks(failure);
        let found = (0..tail_from).find(|&i| marks.iter().any(|m| lines[i].contains(m.as_str())));
        if let Some(i) = found.filter(|i| !kept.contains(i)) {
            let size = lines[i].len().min(LINE + 4);
            if size <= budget {
                budget -= size;
                kept.push(i);
            }
        }
    }
    kept.sort_unstable();
    let mut out = String::new();
    let mut next = 0;
    for i in kept.into_iter().chain(tail_from..lines.len()) {
        if i > next {
            out.push_str("…\n");
        }
        let line = lines[i];
        match line.len() > LINE + 4 && i < tail_from {
            true => {
                out.push_str(crate::debugger::limits::clip(line.trim_end(), LINE).as_str());
                out.push('\n');
            }
            false => out.push_str(line),
        }
        next = i + 1;
    }
    let left_out = text.len().saturating_sub(out.len());
    (out, left_out)
}

/// What marks a failure's own line in the output: its test's name, or its message's first
/// line when that says enough to find it.
fn own_marks(failure: &Value) -> Vec<String> {
    let mut marks = Vec::new();
    if let Some(test) = failure["test"].as_str().filter(|t| t.len() >= 4) {
        marks.push(test.to_string());
    }
    let first = failure["message"].as_str().and_then(|m| m.lines().next()).unwrap_or_default();
    if first.len() >= 12 {
        marks.push(first.to_string());
    }
    marks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_output_keeps_its_tail_and_each_failures_line() {
        let mut text = String::new();
        for i in 0..200 {
            text.push_str(&format!("running step {i} of the suite\n"));
            if i == 50 {
                text.push_str("---- tests::adds stdout ----\n");
            }
        }
        let failures = [json!({"test": "tests::adds", "message": "left == right"})];
        let output = json!({"stdout": text, "stderr": "short\n", "truncated": false});
        let trimmed = for_failures(&output, &failures, STREAM);
        let stdout = trimmed["stdout"].as_str().unwrap();
        assert!(stdout.len() <= STREAM + 8, "{}", stdout.len());
        assert!(stdout.starts_with("…\n---- tests::adds stdout ----\n…\n"), "{stdout}");
        assert!(stdout.ends_with("running step 199 of the suite\n"), "{stdout}");
        assert_eq!(trimmed["stderr"], "short\n");
        assert_eq!(trimmed["cut"]["stdout"], text.len() - stdout.len());
        assert!(trimmed["cut"].get("stderr").is_none());
        // No failure: as it was.
        assert_eq!(for_failures(&output, &[], STREAM), output);
    }
}
