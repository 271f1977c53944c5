//! Breakpoints in TypeScript and bundled code, through source maps, with real node.
//!
//! The generated files are committed under fixtures/ts/ (see fixtures/ts/README.md). The tsx
//! tests need `npm install --prefix fixtures` (done by .ci/run).

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::{assert_no_debuggee, err, ok, root, tag, values, Server};

fn ts() -> PathBuf {
    root().join("fixtures/ts")
}

fn ts_file(name: &str) -> String {
    ts().join(name).display().to_string()
}

/// One debug-script call with the server started in fixtures/ts (as a client would start it in
/// the project), a tagged command, and a check that nothing is left running.
fn run_in_ts(command: &str, file: &str, line: u64, expression: &str, extra: Value) -> Value {
    let tag = tag();
    let mut arguments = json!({
        "command": format!("DMCP_TAG={tag} {command}"),
        "breakpoint": {"file": file, "line": line},
        "expression": expression,
    });
    if let Value::Object(extra) = extra {
        arguments.as_object_mut().unwrap().extend(extra);
    }
    let mut server = Server::initialized_in(&ts());
    let result = server.debug_script(arguments);
    assert_no_debuggee(&tag);
    result
}

const NAMES: [&str; 3] = ["pen", "ink", "pad"];

fn check_app_line_22(result: &Value, generated_file: &str, generated_line: u64) {
    let s = ok(result);
    assert_eq!(values(s), NAMES.map(Value::from), "{s}");
    let breakpoint = &s["breakpoint"];
    assert_eq!(breakpoint["file"], ts_file("src/app.ts"));
    assert_eq!(breakpoint["line"], 22);
    assert_eq!(breakpoint["resolvedLine"], 22);
    let generated = &breakpoint["generated"][0];
    assert_eq!(generated["file"], ts_file(generated_file), "{breakpoint}");
    assert_eq!(generated["line"], generated_line, "{breakpoint}");
    assert!(s["output"]["stdout"].as_str().unwrap().ends_with("order A-1: 31.5\n"), "{s}");
}

#[test]
fn tsc_with_external_maps_commonjs() {
    let result = run_in_ts("node dist/app.js", "src/app.ts", 22, "item.name", Value::Null);
    check_app_line_22(&result, "dist/app.js", 16);
}

#[test]
fn tsc_with_inline_maps_es_modules() {
    let result = run_in_ts("node dist-inline/app.js", "src/app.ts", 22, "item.name", Value::Null);
    check_app_line_22(&result, "dist-inline/app.js", 14);
}

#[test]
fn esbuild_bundles_with_many_sources() {
    let result = run_in_ts("node bundle/app.js", "src/app.ts", 22, "item.name", Value::Null);
    check_app_line_22(&result, "bundle/app.js", 22);
    // The other source of the same bundle.
    let result = run_in_ts("node bundle/app.js", "src/pricing.ts", 17, "gross", Value::Null);
    assert_eq!(values(ok(&result)), [json!(10), json!(15), json!(10)]);
    assert_eq!(ok(&result)["breakpoint"]["resolvedLine"], 17);
}

#[test]
fn minified_one_line_bundles_with_inline_maps() {
    assert_eq!(
        std::fs::read_to_string(ts().join("bundle-min/app.mjs")).unwrap().lines().count(),
        2
    );
    let result = run_in_ts("node bundle-min/app.mjs", "src/app.ts", 22, "item.name", Value::Null);
    check_app_line_22(&result, "bundle-min/app.mjs", 1);
    let column = ok(&result)["breakpoint"]["generated"][0]["column"].as_u64().unwrap();
    assert!(column > 100, "a column deep into the one line, got {column}");
    let result = run_in_ts("node bundle-min/app.mjs", "src/pricing.ts", 17, "gross", Value::Null);
    assert_eq!(values(ok(&result)), [json!(10), json!(15), json!(10)]);
}

#[test]
fn webpack_sources_source_roots_and_index_maps() {
    for dir in ["bundle-webpack", "bundle-root"] {
        let result =
            run_in_ts(&format!("node {dir}/app.js"), "src/app.ts", 22, "item.name", Value::Null);
        check_app_line_22(&result, &format!("{dir}/app.js"), 22);
    }
    // The app section starts at generated line 6 (0-based 5) of the index map.
    let result =
        run_in_ts("node bundle-sections/app.js", "src/app.ts", 22, "item.name", Value::Null);
    check_app_line_22(&result, "bundle-sections/app.js", 27);
    let result =
        run_in_ts("node bundle-sections/app.js", "src/banner.ts", 4, "startedAt", Value::Null);
    assert_eq!(values(ok(&result)), [json!("banner")]);
    assert_eq!(ok(&result)["breakpoint"]["generated"][0]["line"], 5);
}

#[test]
fn lines_without_code_move_to_the_next_statement() {
    // Line 5 is `type Order = {`: no code; the next statement is `const order` on line 10.
    let result = run_in_ts("node dist/app.js", "src/app.ts", 5, "typeof order", Value::Null);
    let s = ok(&result);
    assert_eq!(s["breakpoint"]["resolvedLine"], 10);
    assert_eq!(values(s), [json!("undefined")]);
    let note = result["content"][0]["text"].as_str().unwrap();
    assert!(note.contains("requested at line 5 but V8 placed it at line 10"), "{note}");
}

#[test]
fn stack_frames_speak_original_coordinates() {
    let result =
        run_in_ts("node dist/app.js", "src/pricing.ts", 17, "gross", json!({"includeStack": true}));
    let stack = ok(&result)["results"][0]["stack"].clone();
    assert_eq!(
        stack[0],
        json!({"function": "lineTotal", "file": ts_file("src/pricing.ts"), "line": 17,
        "generated": {"file": ts_file("dist/pricing.js"), "line": 8, "column": 17}})
    );
    assert_eq!(stack[1]["file"], ts_file("src/app.ts"));
    assert_eq!(stack[1]["line"], 22);
    assert_eq!(stack[1]["generated"]["file"], ts_file("dist/app.js"));
}

#[test]
fn tsx_compiled_while_loading_commonjs() {
    crate::need::npm_packages();
    let result =
        run_in_ts("node --import tsx src/app.ts", "src/app.ts", 22, "item.name", Value::Null);
    let s = ok(&result);
    assert_eq!(values(s), NAMES.map(Value::from));
    assert_eq!(s["breakpoint"]["resolvedLine"], 22);
    // The generated code exists only in memory; its URL is the .ts file's own.
    assert_eq!(s["breakpoint"]["generated"][0]["file"], ts_file("src/app.ts"));
    let result = run_in_ts(
        "node --import tsx src/app.ts",
        "src/pricing.ts",
        17,
        "gross",
        json!({"includeStack": true}),
    );
    let s = ok(&result);
    assert_eq!(values(s), [json!(10), json!(15), json!(10)]);
    let top = &s["results"][0]["stack"][0];
    assert_eq!(
        (&top["function"], &top["file"], &top["line"]),
        (&json!("lineTotal"), &json!(ts_file("src/pricing.ts")), &json!(17))
    );
}

#[test]
fn tsx_compiled_while_loading_es_modules() {
    crate::need::npm_packages();
    // The first hit is the first iteration: the breakpoint binds before the module body runs.
    let result = run_in_ts(
        "node --import tsx src/shop.mts",
        "src/shop.mts",
        12,
        "price.amount",
        Value::Null,
    );
    let s = ok(&result);
    assert_eq!(values(s), [json!(3), json!(4)]);
    assert_eq!(s["breakpoint"]["resolvedLine"], 12);
    assert_eq!(s["output"]["stdout"], "300 EUR\n400 USD\n");
}

#[test]
fn no_map_names_what_was_looked_at() {
    let dir = root().join("fixtures/odd path #1 %é");
    let result =
        run_in_ts(&format!("node '{}/app.js'", dir.display()), "src/app.ts", 22, "1", Value::Null);
    let e = err(&result);
    assert_eq!(e["code"], "no_source_map");
    let message = e["error"].as_str().unwrap();
    assert!(
        message.starts_with(&format!(
            "no source map covers {}: looked at {}/app.js (no source map)",
            ts_file("src/app.ts"),
            dir.display()
        )),
        "{message}"
    );
    assert_eq!(e["lookedAt"], json!([format!("{}/app.js (no source map)", dir.display())]));
}

#[test]
fn a_map_on_disk_for_another_build_says_so() {
    // fixtures/loop.js does not load any of the ts builds beside it, though their maps cover
    // src/app.ts: the hint names where the breakpoint was placed.
    let result = run_in_ts(
        &format!("node {}", root().join("fixtures/loop.js").display()),
        "src/app.ts",
        22,
        "1",
        Value::Null,
    );
    let e = err(&result);
    assert_eq!(e["error"], "Process exited before breakpoint was hit");
    let hint = e["hint"].as_str().unwrap();
    assert!(hint.starts_with("the breakpoint never bound: its source map places it in "), "{hint}");
    assert!(hint.contains(&ts_file("dist/app.js")), "{hint}");
}

#[test]
fn tsx_beside_builds_on_disk_still_binds() {
    // The search finds dist/ and the bundles, whose maps list src/app.ts, but the program
    // compiles src/app.ts itself: the load-time probe is armed too, and wins.
    crate::need::npm_packages();
    let result = run_in_ts("node --import tsx run.ts", "src/app.ts", 22, "item.name", Value::Null);
    let s = ok(&result);
    assert_eq!(values(s), NAMES.map(Value::from));
    assert_eq!(s["breakpoint"]["resolvedLine"], 22);
    assert_eq!(s["breakpoint"]["generated"][0]["file"], ts_file("src/app.ts"));
}

/// `fixtures/ts-loaders`: one TypeScript library run by `command` (which compiles it while
/// loading it). A breakpoint in it and two probes in it (an expression, and the locals) bind
/// and answer alike: `total` sums pen (2 x 3) and ink (5 x 1).
fn check_loader(command: &str) {
    let dir = root().join("fixtures/ts-loaders");
    let price = dir.join("src/price.ts").display().to_string();
    let tag = tag();
    let mut server = Server::initialized_in(&dir);
    let command = format!("DMCP_TAG={tag} {command}");
    let result = server.debug_script(json!({"command": command,
        "breakpoint": {"file": "src/price.ts", "line": 10}, "expression": "item.name"}));
    let s = ok(&result);
    assert_eq!(values(s), [json!("pen"), json!("ink")], "{command}: {s}");
    assert_eq!(s["breakpoint"]["resolvedLine"], 10, "{command}: {s}");
    let result = server.debug_script(json!({"command": command, "probes": [
        {"file": "src/price.ts", "line": 10, "expression": "item.name"},
        {"file": "src/price.ts", "line": 13}]}));
    let s = ok(&result);
    let results: Vec<Value> = s["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| match r.get("locals") {
            Some(locals) => json!([r["probe"], locals["sum"]]),
            None => json!([r["probe"], r["value"]]),
        })
        .collect();
    assert_eq!(results, [json!([0, "pen"]), json!([0, "ink"]), json!([1, "11"])], "{command}: {s}");
    assert_eq!(
        s["probes"],
        json!([{"file": price, "line": 10, "resolvedLine": 10},
               {"file": price, "line": 13, "resolvedLine": 13}]),
        "{command}"
    );
    assert_no_debuggee(&tag);
}

#[test]
fn probes_bind_wherever_breakpoints_do_through_typescript_loaders() {
    crate::need::npm_packages();
    for command in [
        "npx tsx src/main.ts",
        "node --import tsx src/main.ts",
        "npx jiti src/main.ts",
        "npx ts-node src/main.ts",
        "node -r esbuild-register src/main.ts",
        "npx vite-node src/main.ts",
    ] {
        check_loader(command);
    }
}

#[test]
fn probes_bind_wherever_breakpoints_do_through_vitest() {
    crate::need::npm_packages();
    check_loader("npx vitest run");
}

/// jest with ts-jest (which wraps the code it compiles); jest's own coverage transform is
/// `runners`' and `failures`' concern.
#[test]
fn probes_bind_wherever_breakpoints_do_through_jests_transform() {
    crate::need::npm_packages();
    check_loader("npx jest");
}

#[test]
fn a_probe_whose_file_never_loads_is_named_in_the_hint() {
    crate::need::npm_packages();
    let dir = root().join("fixtures/ts-loaders");
    let mut server = Server::initialized_in(&dir);
    let test_file = dir.join("src/price.jest.ts").display().to_string();
    // The file is TypeScript that nothing loads here, with no map on disk: the hint named
    // no file ("loaded no script from , and").
    let result = server.debug_script(json!({"command": "node -r esbuild-register src/main.ts",
        "probes": [{"file": "src/price.jest.ts", "line": 7}]}));
    let e = err(&result);
    assert_eq!(e["code"], "no_source_map", "{e}");
    let hint = e["hint"].as_str().unwrap();
    // In the runtime's words (or, when esbuild's service process was seen, the run's).
    assert!(
        hint.contains(&format!("no script from {test_file},"))
            || hint
                .contains(&format!("no script loaded from {test_file}:7 in the process debugged")),
        "{hint}"
    );
    // One probe binds and never runs (its condition), the other's file never loads.
    let result = server.debug_script(json!({"command": "node -r esbuild-register src/main.ts",
        "probes": [{"file": "src/price.ts", "line": 10, "condition": "false"},
                   {"file": "src/price.jest.ts", "line": 7}]}));
    let e = err(&result);
    assert_eq!(e["code"], "exited", "{e}");
    let price = dir.join("src/price.ts").display().to_string();
    let hint = e["hint"].as_str().unwrap();
    let missed = format!(
        "the lines of {price}:10 never ran, and no script loaded from {test_file}:7 in the \
         process debugged (pid "
    );
    assert!(hint.starts_with(&missed), "{hint}");
}
