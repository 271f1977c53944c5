//! What debug-mcp adds to a program's start: a one-shot Python run imports no module the
//! program alone would not (each costs its start: tokenize with re, enum, functools and
//! collections was ~7 ms of every run).

use serde_json::json;

use crate::need::python;
use crate::python::py;
use crate::{ok, run_script};

#[test]
fn a_python_probe_imports_nothing_the_program_alone_does_not() {
    let file = py("modules.py");
    let alone = std::process::Command::new(python()).arg(&file).output().unwrap();
    assert!(alone.status.success());
    let alone = String::from_utf8(alone.stdout).unwrap();
    for (line, expression) in [(4, "x"), (3, "x")] {
        let result = run_script(json!({
            "command": format!("{} '{file}'", python()),
            "breakpoint": {"file": file, "line": line},
            "expression": expression,
        }));
        let s = ok(&result);
        assert_eq!(s["output"]["stdout"], alone.as_str(), "line {line}: {s}");
    }
}
