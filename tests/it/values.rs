//! Answers an agent can act on at a stop: what is in scope at the line, values as short
//! previews, the noise of module wrappers and adapters left out.

use serde_json::{json, Value};

use crate::python::python;
use crate::{assert_no_debuggee, fixture, node, tag, tool, Server};

fn names(state: &Value) -> Vec<&str> {
    let locals = state["locals"].as_array().unwrap_or_else(|| panic!("no locals in {state}"));
    locals.iter().map(|l| l["name"].as_str().unwrap()).collect()
}

fn value<'a>(state: &'a Value, name: &str) -> &'a Value {
    let locals = state["locals"].as_array().unwrap();
    let local = locals.iter().find(|l| l["name"] == name);
    &local.unwrap_or_else(|| panic!("no local {name} in {state}"))["value"]
}

#[test]
fn node_locals_hold_the_block_scopes_innermost_first_as_previews() {
    let mut server = Server::initialized();
    let tag = tag();
    let breakpoints = json!([{"file": fixture("scopes.js"), "line": 9},
                             {"file": fixture("scopes.js"), "line": 16}]);
    let command = node(&tag, "scopes.js", "");
    let state =
        tool(&mut server, "debug-launch", json!({"command": command, "breakpoints": breakpoints}));
    assert_eq!(state["state"], "paused", "{state}");
    // The loop body's `line`, the loop's `item`, then the function's own.
    assert_eq!(names(&state), ["line", "item", "items", "order", "sum"], "{state}");
    assert_eq!(value(&state, "item"), "{name: 'pen', price: 10, qty: 1}");
    assert_eq!(value(&state, "items"), "Array(2) [Object, Object]");
    assert_eq!(value(&state, "order"), "Order {id: 7, lines: Array(0)}");
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(value(&state, "item"), "{name: 'ink', price: 3, qty: 2}", "{state}");
    // At the module's top level: functions by name, never their source, and no CommonJS
    // wrapper parameters.
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["location"]["line"], 16, "{state}");
    let names = names(&state);
    for hidden in ["exports", "require", "module", "__filename", "__dirname"] {
        assert!(!names.contains(&hidden), "{hidden} in {names:?}");
    }
    assert_eq!(value(&state, "double"), "[Function: double]");
    assert_eq!(value(&state, "total"), "[Function: total]");
    assert_eq!(value(&state, "Order"), "[class Order]");
    assert_eq!(value(&state, "tags"), "Map(2) {'a' => 1, 'b' => 2}");
    // Asked for, the wrapper's names are there.
    let all = tool(&mut server, "debug-variables", json!({}));
    let listed: Vec<&str> =
        all["variables"].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert!(listed.contains(&"require"), "{all}");
    // Console messages use the same previews.
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["state"], "exited", "{state}");
    let output = tool(&mut server, "debug-output", json!({}));
    let console = &output["console"][0]["text"];
    assert_eq!(console, "total 16 Map(2) {'a' => 1, 'b' => 2} [Function: total]", "{output}");
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

#[test]
fn python_locals_list_what_debugpy_groups_in_its_place() {
    let mut server = Server::initialized();
    let tag = tag();
    let file = fixture("py/groups.py");
    let command = format!("DMCP_TAG={tag} {} {file}", python());
    let breakpoints = json!([{"file": file, "line": 8}]);
    let state =
        tool(&mut server, "debug-launch", json!({"command": command, "breakpoints": breakpoints}));
    assert_eq!(state["state"], "paused", "{state}");
    let mut names = names(&state);
    names.sort();
    assert_eq!(names, ["Loader", "loader", "stream"], "{state}");
    assert_eq!(value(&state, "Loader"), "<class '__main__.Loader'>");
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

/// Watch expressions in every stop state, and running to a line, for `command` running
/// `file` (`loop.js` or `loop.py`: line 5 runs three times, line 7 or 6 prints the total).
fn watch_and_run_to(command: String, file: &str, print_line: u64) {
    let mut server = Server::initialized();
    let breakpoints = json!([{"file": file, "line": 5}]);
    let state =
        tool(&mut server, "debug-launch", json!({"command": command, "breakpoints": breakpoints}));
    assert_eq!(state["state"], "paused", "{state}");
    let watch = tool(&mut server, "debug-watch", json!({"add": ["total", "total * 2", "nope"]}));
    assert_eq!(watch["watch"], json!(["total", "total * 2", "nope"]), "{watch}");
    let state = tool(&mut server, "debug-continue", json!({}));
    let watched = state["watch"].as_array().unwrap_or_else(|| panic!("no watch in {state}"));
    assert_eq!(watched[0]["expression"], "total");
    assert_eq!(watched[0]["value"], 10, "{state}");
    assert_eq!(watched[1]["value"], 20, "{state}");
    assert_eq!(watched[2]["type"], "error", "{state}");
    let watch = tool(&mut server, "debug-watch", json!({"remove": ["nope", "total * 2"]}));
    assert_eq!(watch["watch"], json!(["total"]));
    // Run to the line after the loop: the breakpoint inside it still stops first.
    let to = json!({"file": file, "line": print_line});
    let state = tool(&mut server, "debug-continue", json!({"to": to}));
    assert_eq!((&state["reason"], &state["location"]["line"]), (&json!("breakpoint"), &json!(5)));
    tool(&mut server, "debug-breakpoint", json!({"remove": "1"}));
    let state = tool(&mut server, "debug-continue", json!({"to": to}));
    assert_eq!(state["reason"], "runTo", "{state}");
    assert_eq!(state["location"]["line"], print_line, "{state}");
    assert!(state.get("hitBreakpoints").is_none(), "{state}");
    assert_eq!(state["watch"][0]["value"].as_f64(), Some(35.0), "{state}");
    // The one-shot breakpoint is gone: the program runs to its end.
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["state"], "exited", "{state}");
    let listed = tool(&mut server, "debug-breakpoint", json!({}));
    assert_eq!(listed["breakpoints"], json!([]), "{listed}");
    tool(&mut server, "debug-stop", json!({}));
}

#[test]
fn node_watch_expressions_and_run_to_a_line() {
    let tag = tag();
    watch_and_run_to(node(&tag, "loop.js", ""), &fixture("loop.js"), 7);
    assert_no_debuggee(&tag);
}

#[test]
fn python_watch_expressions_and_run_to_a_line() {
    let tag = tag();
    let file = fixture("py/loop.py");
    watch_and_run_to(format!("DMCP_TAG={tag} {} {file}", python()), &file, 6);
    assert_no_debuggee(&tag);
}

/// Edit and run again in one call: `debug-restart` after changing a copy of `fixture_name`
/// (`loop.js` or `loop.py`: the first item's price 10 becomes 100).
fn restart_after_an_edit(fixture_name: &str, run: impl Fn(&str) -> String) {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("restart-{}", tag()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(std::path::Path::new(fixture_name).file_name().unwrap());
    std::fs::copy(fixture(fixture_name), &file).unwrap();
    let file = file.display().to_string();
    let mut server = Server::initialized();
    let breakpoints = json!([{"file": file, "line": 5}]);
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": run(&file), "breakpoints": breakpoints}),
    );
    assert_eq!(state["state"], "paused", "{state}");
    tool(&mut server, "debug-watch", json!({"add": ["item"]}));
    tool(&mut server, "debug-continue", json!({}));
    let text = std::fs::read_to_string(&file).unwrap().replacen("10", "100", 1);
    std::fs::write(&file, text).unwrap();
    let state = tool(&mut server, "debug-restart", json!({}));
    assert_eq!((&state["state"], &state["reason"]), (&json!("paused"), &json!("breakpoint")));
    assert_eq!(state["location"]["line"], 5, "{state}");
    let price = &state["watch"][0]["value"]["price"];
    assert_eq!(price.as_f64(), Some(100.0), "the edited program runs: {state}");
    let listed = tool(&mut server, "debug-breakpoint", json!({}));
    assert_eq!(listed["breakpoints"][0]["hits"], 1, "{listed}");
    let sessions = tool(&mut server, "debug-sessions", json!({}));
    assert_eq!(sessions["sessions"].as_array().unwrap().len(), 1, "{sessions}");
    assert_eq!(sessions["sessions"][0]["restarts"], 1, "{sessions}");
    tool(&mut server, "debug-stop", json!({}));
}

#[test]
fn node_restart_runs_the_edited_program_with_the_same_breakpoints() {
    let tag = tag();
    restart_after_an_edit("loop.js", |file| format!("DMCP_TAG={tag} node {file}"));
    assert_no_debuggee(&tag);
}

#[test]
fn python_restart_runs_the_edited_program_with_the_same_breakpoints() {
    let tag = tag();
    restart_after_an_edit("py/loop.py", |file| format!("DMCP_TAG={tag} {} {file}", python()));
    assert_no_debuggee(&tag);
}

#[test]
fn an_attached_session_cannot_restart() {
    let mut server = Server::initialized();
    let tag = tag();
    let mut program = std::process::Command::new("node");
    program.args(["--inspect=127.0.0.1:0", &fixture("hang.js")]).env("DMCP_TAG", &tag);
    let (program, url) = crate::session::running(&mut program);
    tool(&mut server, "debug-launch", json!({"url": url}));
    let error = tool(&mut server, "debug-restart", json!({}));
    assert_eq!(error["code"], "not_launched", "{error}");
    tool(&mut server, "debug-stop", json!({}));
    drop(program);
    assert_no_debuggee(&tag);
}

/// A large value answers within `maxChars` (4 KiB by default), says it was cut and how to see
/// more; asked with a larger `maxChars`, more comes.
fn large_values_are_cut(command: String, file: &str, container: &str) {
    let mut server = Server::initialized();
    let breakpoints = json!([{"file": file, "line": 5}]);
    let state =
        tool(&mut server, "debug-launch", json!({"command": command, "breakpoints": breakpoints}));
    assert_eq!(state["state"], "paused", "{state}");
    for expression in [container, "long"] {
        let value = tool(&mut server, "debug-evaluate", json!({"expression": expression}));
        let size = value["value"].to_string().len();
        // About maxChars: the probes count characters of the value, not of its JSON escapes.
        assert!(size < 2 * 4096, "{expression}: {size} characters");
        assert_eq!(value["truncated"], true, "{value}");
        assert!(value["hint"].as_str().unwrap().contains("maxChars"), "{value}");
        let more = tool(
            &mut server,
            "debug-evaluate",
            json!({"expression": expression, "maxChars": 30000}),
        );
        assert!(more["value"].to_string().len() > 20000, "{expression}: more");
    }
    let small = tool(&mut server, "debug-evaluate", json!({"expression": "1 + 1"}));
    assert!(small.get("truncated").is_none() && small.get("hint").is_none(), "{small}");
    // debug-variables cuts each value at 200 characters unless maxChars says otherwise.
    let long = |answer: &Value| -> usize {
        let variables = answer["variables"].as_array().unwrap();
        let long = variables.iter().find(|v| v["name"] == "long").expect("a `long` variable");
        long["value"].as_str().unwrap().chars().count()
    };
    let listed = tool(&mut server, "debug-variables", json!({}));
    assert!(long(&listed) < 250, "{}", long(&listed));
    let listed = tool(&mut server, "debug-variables", json!({"maxChars": 30000}));
    assert!(long(&listed) >= 20000, "{}", long(&listed));
    let set =
        tool(&mut server, "debug-evaluate", json!({"set": "long", "expression": "long + long"}));
    assert_eq!(set["truncated"], true, "{set}");
    tool(&mut server, "debug-stop", json!({}));
}

#[test]
fn node_large_values_are_cut_at_max_chars() {
    let tag = tag();
    large_values_are_cut(node(&tag, "bigmap.js", ""), &fixture("bigmap.js"), "m");
    assert_no_debuggee(&tag);
}

#[test]
fn python_large_values_are_cut_at_max_chars() {
    let tag = tag();
    let file = fixture("py/bigdict.py");
    large_values_are_cut(format!("DMCP_TAG={tag} {} {file}", python()), &file, "d");
    assert_no_debuggee(&tag);
}

#[test]
fn containers_expand_and_page_node_maps_and_python_dicts() {
    let mut server = Server::initialized();
    let tag = tag();
    let breakpoints = json!([{"file": fixture("bigmap.js"), "line": 5}]);
    let command = node(&tag, "bigmap.js", "");
    let state =
        tool(&mut server, "debug-launch", json!({"command": command, "breakpoints": breakpoints}));
    assert_eq!(state["state"], "paused", "{state}");
    let map = tool(&mut server, "debug-variables", json!({"path": "m", "maxItems": 3}));
    let entries = map["variables"].as_array().unwrap();
    assert_eq!(entries.len(), 4, "{map}");
    assert_eq!(entries[0]["name"], "[0]");
    assert_eq!(entries[0]["type"], "entry");
    assert_eq!(entries[0]["value"], "'key0' => {i: 0}", "{map}");
    assert!(entries[3]["value"].as_str().unwrap().starts_with("9997 more"), "{map}");
    assert!(entries[3]["value"].as_str().unwrap().contains("start: 3"), "{map}");
    let last = tool(&mut server, "debug-variables", json!({"path": "m", "start": 9998}));
    let names: Vec<&Value> =
        last["variables"].as_array().unwrap().iter().map(|v| &v["name"]).collect();
    assert_eq!(names, [&json!("[9998]"), &json!("[9999]")], "{last}");
    let entry = tool(&mut server, "debug-variables", json!({"path": "[...m][9999][1]"}));
    assert_eq!(
        entry["variables"][0],
        json!({"name": "i", "type": "number", "value": 9999, "expandable": false})
    );
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);

    let tag = crate::tag();
    let file = fixture("py/bigdict.py");
    let command = format!("DMCP_TAG={tag} {} {file}", python());
    let breakpoints = json!([{"file": file, "line": 5}]);
    let state =
        tool(&mut server, "debug-launch", json!({"command": command, "breakpoints": breakpoints}));
    assert_eq!(state["state"], "paused", "{state}");
    let dict = tool(&mut server, "debug-variables", json!({"path": "d", "maxItems": 2}));
    let items = dict["variables"].as_array().unwrap();
    assert_eq!(items[0]["name"], "'key0'", "{dict}");
    assert!(items[2]["value"].as_str().unwrap().contains("start: 2"), "{dict}");
    let page =
        tool(&mut server, "debug-variables", json!({"path": "d", "start": 5000, "maxItems": 1}));
    assert_eq!(page["variables"][0]["name"], "'key5000'", "{page}");
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

#[test]
fn pausing_on_all_exceptions_passes_over_those_libraries_catch() {
    let mut server = Server::initialized();
    let tag = tag();
    let command = node(&tag, "libcatch/main.js", "");
    let launch = json!({"command": command, "pauseOnExceptions": "all"});
    let state = tool(&mut server, "debug-launch", launch);
    // The dependency's two are passed over: the first stop is the program's own.
    assert_eq!((&state["state"], &state["reason"]), (&json!("paused"), &json!("exception")));
    assert_eq!(state["location"]["file"], fixture("libcatch/main.js"), "{state}");
    assert_eq!(state["exception"]["class"], "TypeError");
    assert_eq!(state["exception"]["uncaught"], false);
    // Its stack: the program's frames, Node's own counted.
    let stack = state["exception"]["stack"].as_str().unwrap();
    assert!(stack.starts_with("at "), "{stack}");
    assert!(stack.contains(&fixture("libcatch/main.js")), "{stack}");
    assert!(!stack.contains("node:internal"), "{stack}");
    tool(&mut server, "debug-stop", json!({}));

    // process.exit ends the program: no stop.
    let launch = json!({"command": node(&tag, "exit_mid.js", ""), "pauseOnExceptions": "all"});
    let state = tool(&mut server, "debug-launch", launch);
    assert_eq!((&state["state"], &state["exitCode"]), (&json!("exited"), &json!(3)), "{state}");
    tool(&mut server, "debug-stop", json!({}));

    let launch = json!({"command": command, "stopOnEntry": true});
    let state = tool(&mut server, "debug-launch", launch);
    assert_eq!(state["state"], "paused", "{state}");
    let set = json!({"exceptions": "all", "includeLibraries": true});
    let answer = tool(&mut server, "debug-breakpoint", set);
    assert_eq!(answer["includeLibraries"], true, "{answer}");
    let state = tool(&mut server, "debug-continue", json!({}));
    let file = state["location"]["file"].as_str().unwrap();
    assert!(file.ends_with("node_modules/quiet/index.js"), "{state}");
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

#[test]
fn stop_on_entry_stops_at_the_first_line_of_the_commands_own_script() {
    crate::need::npm_packages();
    // An ES module (Node's "Break on start" is in its loader) and a TypeScript entry run
    // through `--import tsx` (installed in fixtures/, where node looks for it).
    let mut server = Server::initialized_in(&crate::root().join("fixtures"));
    let tag = tag();
    let tsx = format!("DMCP_TAG={tag} node --import tsx {} 3", fixture("tsx-app/src/main.ts"));
    for (command, file, line) in [
        (node(&tag, "esm.mjs", ""), fixture("esm.mjs"), 6),
        (node(&tag, "esm-main.mjs", ""), fixture("esm-main.mjs"), 4),
        (tsx, fixture("tsx-app/src/main.ts"), 3),
    ] {
        let launch = json!({"command": command, "stopOnEntry": true});
        let state = tool(&mut server, "debug-launch", launch);
        assert_eq!(state["reason"], "entry", "{state}");
        assert_eq!(state["location"]["file"], file, "{state}");
        assert_eq!(state["location"]["line"], line, "{state}");
        assert!(state.get("hitBreakpoints").is_none(), "{state}");
        let listed = tool(&mut server, "debug-breakpoint", json!({}));
        assert_eq!(listed["breakpoints"], json!([]), "{listed}");
        let state = tool(&mut server, "debug-continue", json!({}));
        assert_eq!(state["state"], "exited", "{state}");
        tool(&mut server, "debug-stop", json!({}));
    }
    assert_no_debuggee(&tag);
}

/// The console entries of a session run to its end with `breakpoints` (logpoints).
fn logpoint_output(command: String, breakpoints: Value) -> Vec<Value> {
    let mut server = Server::initialized();
    let state =
        tool(&mut server, "debug-launch", json!({"command": command, "breakpoints": breakpoints}));
    assert_eq!(state["state"], "exited", "{state}");
    let output = tool(&mut server, "debug-output", json!({}));
    tool(&mut server, "debug-stop", json!({}));
    let console = output["console"].as_array().unwrap().iter();
    console.filter(|entry| entry["type"] == "logpoint").cloned().collect()
}

#[test]
fn node_logpoint_parts_fail_alone() {
    let tag = tag();
    let file = fixture("loop.js");
    let breakpoints = json!([{"file": file, "line": 5,
        "logMessage": "price={item.price} bad={nope} item={item} `${{x}}`"}]);
    let entries = logpoint_output(node(&tag, "loop.js", ""), breakpoints);
    assert_eq!(entries.len(), 3, "{entries:?}");
    assert_eq!(
        entries[0],
        json!({"type": "logpoint", "breakpointId": "1",
               "text": "price=10 bad=<ReferenceError: nope is not defined> item={\"price\":10,\"qty\":1} `${x}`"})
    );
    assert_no_debuggee(&tag);
}

#[test]
fn python_logpoint_parts_fail_alone_and_say_whose_they_are() {
    let tag = tag();
    let file = fixture("py/loop.py");
    // Two logpoints of the same shape: each message still says whose it is.
    let breakpoints = json!([
        {"file": file, "line": 5, "logMessage": "v={item['price']} bad={nope} r={item!r} f={total:.1f} {{x}}"},
        {"file": file, "line": 6, "logMessage": "v={total}"}]);
    let command = format!("DMCP_TAG={tag} {} {file}", python());
    let entries = logpoint_output(command, breakpoints);
    assert_eq!(entries.len(), 4, "{entries:?}");
    assert_eq!(
        entries[0],
        json!({"type": "logpoint", "breakpointId": "1",
               "text": "v=10 bad=<NameError: name 'nope' is not defined> r={'price': 10, 'qty': 1} f=0.0 {x}"})
    );
    assert_eq!(entries[3], json!({"type": "logpoint", "breakpointId": "2", "text": "v=35.0"}));
    assert_no_debuggee(&tag);
}

#[test]
fn output_comes_without_terminal_colour_codes_unless_asked() {
    let mut server = Server::initialized();
    let tag = tag();
    let state = tool(&mut server, "debug-launch", json!({"command": node(&tag, "colors.js", "")}));
    assert_eq!(state["state"], "exited", "{state}");
    assert_eq!((&state["stdout"], &state["stderr"]), (&json!("green\nbold\n"), &json!("red\n")));
    let output = tool(&mut server, "debug-output", json!({}));
    assert_eq!(output["stdout"], "green\nbold\n", "{output}");
    assert_eq!(output["console"][0]["text"], "green", "{output}");
    let raw = tool(&mut server, "debug-output", json!({"stripAnsi": false}));
    assert_eq!(raw["stdout"], "\u{1b}[32mgreen\u{1b}[39m\n\u{1b}[1mbold\u{1b}[0m\n", "{raw}");
    assert_eq!(raw["console"][0]["text"], "\u{1b}[32mgreen\u{1b}[39m", "{raw}");
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

/// `cwd`, `env` and `stdin` for `debug-script` and `debug-launch`: `file` is run by its name
/// relative to its folder, from that folder, with its breakpoint at `line` named the same way.
fn runs_where_and_with_what_it_is_told(interpreter: &str, file: &str, line: u64) {
    let path = std::path::Path::new(file);
    let dir = path.parent().unwrap().display().to_string();
    let name = path.file_name().unwrap().to_str().unwrap();
    let run = json!({"command": format!("{interpreter} {name}"), "cwd": dir,
                     "env": {"GREETING": "hello"}, "stdin": "4\n5\n6\n"});
    let mut script = run.clone();
    script["breakpoint"] = json!({"file": name, "line": line});
    script["expression"] = json!("total");
    let result = crate::run_script(script);
    let s = crate::ok(&result);
    let totals: Vec<f64> =
        s["results"].as_array().unwrap().iter().map(|r| r["value"].as_f64().unwrap()).collect();
    assert_eq!(totals, [0.0, 4.0, 9.0], "{s}");
    assert_eq!(s["output"]["stdout"], format!("hello {dir} 15\n"), "{s}");

    let mut server = Server::initialized();
    let mut launch = run;
    launch["breakpoints"] = json!([{"file": name, "line": line}]);
    let state = tool(&mut server, "debug-launch", launch);
    assert_eq!(state["state"], "paused", "{state}");
    assert_eq!(state["location"]["file"], file, "{state}");
    // A breakpoint set later by a relative name resolves in the session's `cwd` too.
    let set = tool(&mut server, "debug-breakpoint", json!({"file": name, "line": 8}));
    assert_eq!(set["file"], file, "{set}");
    let sessions = tool(&mut server, "debug-sessions", json!({}));
    assert_eq!(sessions["sessions"][0]["cwd"], dir, "{sessions}");
    tool(&mut server, "debug-breakpoint", json!({"remove": "2"}));
    let state = tool(&mut server, "debug-restart", json!({}));
    assert_eq!(state["location"]["line"], line, "a restart runs the same way: {state}");
    tool(&mut server, "debug-breakpoint", json!({"remove": "1"}));
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["stdout"], format!("hello {dir} 15\n"), "{state}");
    tool(&mut server, "debug-stop", json!({}));
    let missing = tool(
        &mut server,
        "debug-launch",
        json!({"command": "node x.js", "cwd": "/nowhere/at/all"}),
    );
    assert_eq!((&missing["code"], &missing["field"]), (&json!("file_not_found"), &json!("cwd")));
}

#[test]
fn node_runs_in_its_cwd_with_its_env_and_stdin() {
    let tag = tag();
    runs_where_and_with_what_it_is_told(&format!("DMCP_TAG={tag} node"), &fixture("stdin.js"), 6);
    assert_no_debuggee(&tag);
}

#[test]
fn python_runs_in_its_cwd_with_its_env_and_stdin() {
    let tag = tag();
    let interpreter = format!("DMCP_TAG={tag} {}", python());
    runs_where_and_with_what_it_is_told(&interpreter, &fixture("py/stdin.py"), 7);
    assert_no_debuggee(&tag);
}

#[test]
fn threads_are_listed_and_one_can_be_inspected() {
    let mut server = Server::initialized();
    let tag = tag();
    let file = fixture("py/threads.py");
    let command = format!("DMCP_TAG={tag} {} {file}", python());
    let breakpoints = json!([{"file": file, "line": 8}]);
    let state =
        tool(&mut server, "debug-launch", json!({"command": command, "breakpoints": breakpoints}));
    assert_eq!(state["location"]["function"], "work", "{state}");
    let listed = tool(&mut server, "debug-threads", json!({}));
    let threads = listed["threads"].as_array().unwrap();
    let named = |name: &str| threads.iter().find(|t| t["name"] == name).cloned();
    let worker = named("worker").unwrap_or_else(|| panic!("no worker thread: {listed}"));
    assert_eq!(worker["current"], true, "{listed}");
    let main = named("MainThread").unwrap_or_else(|| panic!("no main thread: {listed}"));
    // The main thread, seen from its own frames: waiting in join, called at line 14.
    let state = tool(&mut server, "debug-threads", json!({"select": main["id"].as_str().unwrap()}));
    let stack = tool(&mut server, "debug-stack", json!({}));
    let lines: Vec<&Value> =
        stack["frames"].as_array().unwrap().iter().map(|f| &f["line"]).collect();
    assert!(lines.contains(&&json!(14)), "{stack}");
    assert_eq!(state["state"], "paused", "{state}");
    let worker_id = worker["id"].as_str().unwrap();
    let state = tool(&mut server, "debug-threads", json!({"select": worker_id}));
    assert_eq!(state["location"]["line"], 8, "{state}");
    let error = tool(&mut server, "debug-threads", json!({"select": "999999"}));
    assert_eq!((&error["code"], &error["field"]), (&json!("invalid_arguments"), &json!("select")));
    // debug-stack lists the threads (there are several) and switches to one with `thread`.
    let stack = tool(&mut server, "debug-stack", json!({"thread": main["id"]}));
    assert_eq!(stack["threads"].as_array().map(Vec::len), Some(threads.len()), "{stack}");
    let lines: Vec<&Value> =
        stack["frames"].as_array().unwrap().iter().map(|f| &f["line"]).collect();
    assert!(lines.contains(&&json!(14)), "the main thread's: {stack}");
    let error = tool(&mut server, "debug-stack", json!({"thread": "999999"}));
    assert_eq!((&error["code"], &error["field"]), (&json!("invalid_arguments"), &json!("thread")));
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);

    // Node: one thread, the program's own.
    let tag = crate::tag();
    let state = crate::launch(&mut server, &node(&tag, "loop.js", ""), &fixture("loop.js"), 5);
    assert_eq!(state["state"], "paused", "{state}");
    let pid = &state["process"]["pid"];
    let listed = tool(&mut server, "debug-threads", json!({}));
    assert_eq!(
        listed["threads"],
        json!([{"id": "main", "name": format!("pid {pid}: main"), "current": true}])
    );
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}
