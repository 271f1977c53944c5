//! The JVM through JDWP, with nothing installed but a JDK (and JUnit for its suites): the
//! command as typed (`java -cp`, `java -jar` JUnit's console launcher, JUnit 4's runner, the
//! source launcher), typed values and Java expressions at a hit, failing tests and uncaught
//! exceptions of any thread, and where threads hang (a deadlock named by the JVM).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::need::{self, need, Tool, JUNIT};
use crate::{fixture, ok, root, tool, Server};

/// `fixtures/java/orders` compiled with `javac -g`, once per run of the tests: the program's
/// classes, with JUnit 5's and JUnit 4's tests beside them when `tests`.
pub fn compiled(tests: bool) -> String {
    let out = root().join(format!("target/java/orders-{}", if tests { "tests" } else { "main" }));
    let sources = |dir: &str| java_files(&fixture(&format!("java/orders/src/{dir}/java/app")));
    need::installing(|| {
        let mut files = sources("main");
        let mut classpath = String::new();
        if tests {
            files.extend(sources("test"));
            classpath = JUNIT.join(":");
        }
        let newest = files.iter().filter_map(|f| f.metadata().ok()?.modified().ok()).max();
        let stamp = out.join(".built");
        let built = stamp.metadata().and_then(|m| m.modified()).ok();
        if built.is_some() && built >= newest {
            return;
        }
        let _ = std::fs::remove_dir_all(&out);
        javac(&files, &classpath, &out);
        std::fs::write(&stamp, "").unwrap();
    });
    out.display().to_string()
}

/// The `.java` files in `dir` (not below it), sorted.
fn java_files(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "java"))
        .collect();
    files.sort();
    files
}

/// `javac -g` of `sources` into `out` with `classpath`; the test fails when they do not
/// compile.
pub fn javac(sources: &[PathBuf], classpath: &str, out: &Path) {
    let status = Command::new("javac")
        .args(["-g", "-d"])
        .arg(out)
        .args(["-cp", classpath])
        .args(sources)
        .status()
        .unwrap();
    assert!(status.success(), "javac failed on {sources:?}");
}

/// A `debug-script` answer on the compiled fixture (with JUnit's tests when `tool` is JUnit),
/// or `None` when what it needs is not here (the test is skipped).
fn script(tool: Tool, arguments: impl FnOnce(&str) -> Value) -> Option<Value> {
    if !need(tool) {
        return None;
    }
    let classes = compiled(matches!(tool, Tool::JUnit));
    Some(Server::initialized().debug_script(arguments(&classes)))
}

/// A session on the compiled fixture: `java -cp CLASSES {args}` launched with `more` of
/// `debug-launch`'s arguments, and its first answer; `None` without a JDK (the test is
/// skipped).
fn session(args: &str, more: Value) -> Option<(Server, Value)> {
    if !need(Tool::Java) {
        return None;
    }
    let classes = compiled(false);
    let mut server = Server::initialized();
    let mut arguments = json!({"command": format!("java -cp {classes} {args}"),
                               "cwd": fixture("java/orders")});
    for (key, value) in more.as_object().unwrap() {
        arguments[key] = value.clone();
    }
    let state = tool(&mut server, "debug-launch", arguments);
    Some((server, state))
}

fn orders(file: &str) -> String {
    fixture(&format!("java/orders/src/main/java/app/{file}"))
}

fn junit5(classes: &str) -> String {
    junit5_on("java", classes)
}

/// JUnit 5's console launcher on the fixture's tests, run by `java`.
fn junit5_on(java: &str, classes: &str) -> String {
    format!("{java} -jar {} -cp {classes} --select-class app.OrdersTest --disable-banner", JUNIT[0])
}

/// Values as a Java developer reads them: a record by its fields, a list by its items, a
/// `TreeMap` by its entries, an enum by its name; expressions with locals, fields, method
/// calls run in the stopped thread, statics and Java's arithmetic; several probes on one line
/// report in their order; the JVM's `Picked up JAVA_TOOL_OPTIONS` line is not the program's.
#[test]
fn probes_read_values_and_java_expressions() {
    let Some(result) = script(Tool::Java, |classes| {
        json!({
        "command": format!("java -cp {classes} app.Main"),
        "cwd": fixture("java/orders"),
        "probes": [
            {"file": orders("Orders.java"), "line": 32, "expression": "item"},
            {"file": orders("Orders.java"), "line": 32, "expression": "total + \" after \" + item.name()"},
            {"file": orders("Main.java"), "line": 7, "expression": "order"},
            {"file": orders("Main.java"), "line": 7,
             "expression": "order.items.get(1).price() * 2 + Orders.TAX"},
            {"file": orders("Main.java"), "line": 7, "expression": "order.counts()"},
            {"file": orders("Main.java"), "line": 7,
             "expression": "total > 30 && order.status == Orders.Status.OPEN ? 7 / 2 : -1"},
            {"file": orders("Main.java"), "line": 7, "expression": "args.length + order.missing"}
        ]})
    }) else {
        return;
    };
    let s = ok(&result);
    let results = s["results"].as_array().unwrap();
    let of =
        |probe: u64| -> Vec<&Value> { results.iter().filter(|r| r["probe"] == probe).collect() };
    assert_eq!(of(0).len(), 3, "{s}");
    assert_eq!(
        of(0)[1],
        &json!({"probe": 0, "type": "Orders.Item", "value": {"name": "ink", "price": 5.0, "qty": 3}}),
        "{s}"
    );
    let said: Vec<&Value> = of(1).iter().map(|r| &r["value"]).collect();
    assert_eq!(
        said,
        [&json!("0.0 after pen"), &json!("10.0 after ink"), &json!("25.0 after pad")],
        "{s}"
    );
    // Probes 0 and 1 share line 32: each hit reports them in their order.
    let order: Vec<&Value> = results.iter().take(4).map(|r| &r["probe"]).collect();
    assert_eq!(order, [&json!(0), &json!(1), &json!(0), &json!(1)], "{s}");
    assert_eq!(
        of(2)[0]["value"],
        json!({"id": "A-1", "status": "OPEN", "items": [
            {"name": "pen", "price": 10.0, "qty": 1},
            {"name": "ink", "price": 5.0, "qty": 3},
            {"name": "pad", "price": 2.5, "qty": 4}]}),
        "{s}"
    );
    assert_eq!(of(3)[0], &json!({"probe": 3, "type": "double", "value": 10.1}), "{s}");
    assert_eq!(
        of(4)[0],
        &json!({"probe": 4, "type": "TreeMap", "value": {"ink": 3, "pad": 4, "pen": 1}}),
        "{s}"
    );
    assert_eq!(of(5)[0], &json!({"probe": 5, "type": "int", "value": 3}), "{s}");
    assert_eq!(of(6)[0]["type"], "error", "{s}");
    assert_eq!(of(6)[0]["value"], "cannot find symbol: missing in Orders", "{s}");
    assert_eq!(s["exitCode"], 0, "{s}");
    assert_eq!(s["output"]["stderr"], "", "{s}");
    assert!(s["output"]["stdout"].as_str().unwrap().starts_with("total 35.0\n"), "{s}");
    assert_eq!(s["processes"][0]["hits"], 11, "{s}");
}

/// A probe on a line without code, and one in a class the program never loads, say why.
/// A probe of one primitive local, hit 500 times: each hit's value exact and in order (the
/// connection's reader reads it and lets the thread go at once, the frame's id guessed).
#[test]
fn a_local_read_at_every_hit_is_exact_over_many_hits() {
    if !need(Tool::Java) {
        return;
    }
    let out = root().join("target/java/loop");
    javac(&[PathBuf::from(fixture("java/bench/Loop.java"))], "", &out);
    let result = Server::initialized().debug_script(json!({
        "command": format!("java -cp {} Loop 500", out.display()),
        "breakpoint": {"file": fixture("java/bench/Loop.java"), "line": 4}, "expression": "total"}));
    let s = ok(&result);
    let mut total = 0i64;
    let expected: Vec<Value> = (0..500)
        .map(|i| {
            let before = total;
            total += i % 7;
            json!({"type": "long", "value": before})
        })
        .collect();
    assert_eq!(s["results"].as_array().unwrap(), &expected);
    assert_eq!(s["output"]["stdout"], format!("total {total}\n"));
}

#[test]
fn a_line_without_code_and_a_class_never_loaded_say_so() {
    let Some(result) = script(Tool::Java, |classes| {
        json!({
            "command": format!("java -cp {classes} app.Main"),
            "breakpoint": {"file": orders("Orders.java"), "line": 15}, "expression": "1"})
    }) else {
        return;
    };
    let e = crate::err(&result);
    assert_eq!(e["code"], "exited", "{e}");
    assert!(e["hint"].as_str().unwrap().contains("Orders.java holds no code at line 15"), "{e}");
    let Some(result) = script(Tool::Java, |classes| {
        json!({
        "command": format!("java -cp {classes} app.Main"),
        "breakpoint": {"file": orders("Deadlock.java"), "line": 12}, "expression": "1"})
    }) else {
        return;
    };
    let e = crate::err(&result);
    assert!(
        e["error"].as_str().unwrap().contains("Process exited before breakpoint was hit"),
        "{e}"
    );
    assert!(e["hint"].as_str().unwrap().contains("no class of"), "{e}");
}

/// JUnit 5's console launcher: the failing assertion is the test's record, with expected and
/// actual, the test's name and its locals; an exception uncaught in a thread the test started
/// names that test too; `assertThrows` expected its exception: no record.
/// The same on Java 18 and later, where `Method.invoke` catches the test's exception to wrap
/// it (its catch is the JDK's, not JUnit's) and method handle frames stand between the runner
/// and the test.
#[test]
fn junit5_failures_name_their_test_and_show_its_locals() {
    let Some(result) = script(Tool::JUnit, |classes| {
        json!({
            "command": junit5(classes), "cwd": fixture("java/orders"), "failures": true,
            "maxFailures": 10})
    }) else {
        return;
    };
    junit5_failures(&result);
    let Some(java) = need::newer_java() else { return };
    let classes = compiled(true);
    let result = Server::initialized().debug_script(json!({
        "command": junit5_on(&java, &classes), "cwd": fixture("java/orders"), "failures": true,
        "maxFailures": 10}));
    junit5_failures(&result);
}

fn junit5_failures(result: &Value) {
    let s = ok(result);
    let failures = s["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 2, "{s}");
    let test = &failures[0];
    assert_eq!(
        (&test["kind"], &test["type"], &test["test"]),
        (
            &json!("test"),
            &json!("org.opentest4j.AssertionFailedError"),
            &json!("OrdersTest.totalsAnOrder")
        ),
        "{s}"
    );
    assert_eq!(test["message"], "the order's total ==> expected: <30.0> but was: <25.0>", "{s}");
    let frame = &test["frames"][0];
    assert_eq!(
        (&frame["function"], &frame["line"]),
        (&json!("OrdersTest.totalsAnOrder"), &json!(13)),
        "{s}"
    );
    assert_eq!(frame["file"], fixture("java/orders/src/test/java/app/OrdersTest.java"), "{s}");
    assert_eq!(frame["locals"]["total"], "25.0", "{s}");
    let thread = &failures[1];
    assert_eq!(
        (&thread["kind"], &thread["type"], &thread["message"]),
        (
            &json!("uncaught"),
            &json!("java.lang.IllegalStateException"),
            &json!("worker saw 0 lines")
        ),
        "{s}"
    );
    assert_eq!(thread["test"], "OrdersTest.reportsInABackgroundThread", "{s}");
    assert_eq!(thread["frames"][0]["locals"]["lines"], "0", "{s}");
    assert_eq!(s["exitCode"], 1, "{s}");
}

/// An exception out of a virtual thread's task (Java 21 and later) is uncaught, though the
/// thread's `run` catches it to hand it on: a failure with the task's frame and locals. A
/// session stopped in a virtual thread lists that thread (the JVM's list has none of them).
#[test]
fn virtual_threads_fail_uncaught_and_are_listed_when_stopped() {
    if !need(Tool::Java) {
        return;
    }
    let Some(java) = need::newer_java() else { return };
    let out = root().join("target/java/virtual");
    javac(&java_files(&fixture("java/virtual")), "", &out);
    let result = Server::initialized().debug_script(json!({
        "command": format!("{java} -cp {} Virtual", out.display()),
        "cwd": fixture("java/virtual"), "failures": true}));
    let s = ok(&result);
    let failure = &s["failures"][0];
    assert_eq!(
        (&failure["kind"], &failure["message"]),
        (&json!("uncaught"), &json!("no order left: 0")),
        "{s}"
    );
    let frame = &failure["frames"][0];
    assert_eq!((&frame["line"], &frame["locals"]["left"]), (&json!(12), &json!("0")), "{s}");
    assert_eq!(s["output"]["stdout"], "joined\n", "{s}");

    // A session stopped in the virtual thread lists it among the threads, as the current one.
    let mut server = Server::initialized();
    let breakpoints = json!([{"file": fixture("java/virtual/Virtual.java"), "line": 12}]);
    let command = format!("{java} -cp {} Virtual", out.display());
    let state =
        tool(&mut server, "debug-launch", json!({"command": command, "breakpoints": breakpoints}));
    assert_eq!(
        (&state["reason"], &state["locals"][1]["value"]),
        (&json!("breakpoint"), &json!(0)),
        "{state}"
    );
    let stack = tool(&mut server, "debug-stack", json!({}));
    let current: Vec<&Value> =
        stack["threads"].as_array().unwrap().iter().filter(|t| t["current"] == true).collect();
    assert_eq!(current.len(), 1, "{stack}");
    assert_eq!(current[0]["id"], state["process"]["thread"], "{stack} {state}");
    tool(&mut server, "debug-stop", json!({}));
}

/// JUnit 4's runner: `assertEquals` on strings fails with a `ComparisonFailure` whose message
/// is made by `getMessage()`; `@Test(expected = …)` is no failure.
#[test]
fn junit4_failures_carry_their_message() {
    if !need(Tool::JUnit) {
        return;
    }
    let classes = compiled(true);
    let junit4 = |java: &str| {
        let command = format!(
            "{java} -cp {classes}:{}:/usr/share/java/hamcrest-core.jar org.junit.runner.JUnitCore app.LegacyTest",
            JUNIT[1]
        );
        let args = json!({"command": command, "cwd": fixture("java/orders"), "failures": true});
        Server::initialized().debug_script(args)
    };
    junit4_failure(&junit4("java"));
    // Java 18 and later: `Method.invoke` catches the expected exception first.
    if let Some(java) = need::newer_java() {
        junit4_failure(&junit4(&java));
    }
}

fn junit4_failure(result: &Value) {
    let s = ok(result);
    let failures = s["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{s}");
    assert_eq!(failures[0]["type"], "org.junit.ComparisonFailure", "{s}");
    assert_eq!(failures[0]["message"], "expected:<L-1: [2] lines> but was:<L-1: [1] lines>", "{s}");
    assert_eq!(failures[0]["test"], "LegacyTest.describesTheOrder", "{s}");
    assert_eq!(failures[0]["frames"][0]["locals"]["text"], "\"L-1: 1 lines\"", "{s}");
}

/// A test inherited from an abstract case runs once for each class extending it: its
/// failure is named by the class that failed (as JUnit reports it), not the one declaring
/// the method.
#[test]
fn an_inherited_test_is_named_by_the_class_that_failed() {
    if !need(Tool::JUnit) {
        return;
    }
    let out = root().join("target/java/inherited");
    javac(&java_files(&fixture("java/inherited/app")), JUNIT[0], &out);
    let result = Server::initialized().debug_script(json!({
        "command": format!("java -jar {} -cp {} --select-package app --disable-banner", JUNIT[0], out.display()),
        "cwd": fixture("java/inherited"), "failures": true}));
    let s = ok(&result);
    let failures = s["failures"].as_array().unwrap();
    let named: Vec<(&Value, &Value)> =
        failures.iter().map(|f| (&f["test"], &f["message"])).collect();
    assert_eq!(
        named,
        [(
            &json!("LongNameTest.nameHasThreeLetters"),
            &json!("letters in Grace ==> expected: <3> but was: <5>")
        )],
        "{s}"
    );
    assert_eq!(failures[0]["frames"][0]["locals"]["name"], "\"Grace\"", "{s}");
}

/// An exception out of `main`: `uncaught`, with main's locals; the program's own trace is its
/// output as without the debugger.
#[test]
fn an_exception_out_of_main_is_uncaught() {
    let Some(result) = script(Tool::Java, |classes| {
        json!({
            "command": format!("java -cp {classes} app.Main fail"), "cwd": fixture("java/orders"),
            "failures": true})
    }) else {
        return;
    };
    let s = ok(&result);
    let failure = &s["failures"][0];
    assert_eq!(
        (&failure["kind"], &failure["type"], &failure["message"]),
        (&json!("uncaught"), &json!("java.lang.IllegalStateException"), &json!("no stock for A-1")),
        "{s}"
    );
    let frame = &failure["frames"][0];
    assert_eq!((&frame["function"], &frame["line"]), (&json!("Main.main"), &json!(11)), "{s}");
    assert_eq!(frame["locals"]["total"], "35.0", "{s}");
    assert_eq!(frame["locals"]["args"], "[\"fail\"]", "{s}");
    assert_eq!(s["exitCode"], 1, "{s}");
    assert!(
        s["output"]["stderr"].as_str().unwrap().starts_with(
            "Exception in thread \"main\" java.lang.IllegalStateException: no stock for A-1\n"
        ),
        "{s}"
    );
}

/// Two threads that take two monitors in opposite orders: `hang` names the monitor each waits
/// for and the thread that holds it; main waits in `join`.
#[test]
fn a_deadlock_names_each_monitor_and_its_owner() {
    let Some(result) = script(Tool::Java, |classes| {
        json!({
            "command": format!("java -cp {classes} app.Deadlock"), "cwd": fixture("java/orders"),
            "hang": 1500})
    }) else {
        return;
    };
    let s = ok(&result);
    let threads = s["hang"]["threads"].as_array().unwrap_or_else(|| panic!("no hang: {s}"));
    let named = |name: &str| {
        threads.iter().find(|t| t["thread"] == name).unwrap_or_else(|| panic!("no {name}: {s}"))
    };
    assert_eq!(named("main")["state"], "join", "{s}");
    for (thread, owner, what) in [("seller", "buyer", "sold"), ("buyer", "seller", "bought")] {
        let record = named(thread);
        assert_eq!(record["state"], "lock", "{s}");
        assert_eq!(record["lock"], json!({"monitor": "Object", "owner": owner}), "{s}");
        // The JVM says a thread blocked entering `synchronized` is at the line after it.
        assert_eq!(record["frames"][0]["function"], "Deadlock.transfer", "{s}");
        assert_eq!(record["frames"][0]["locals"]["what"], format!("\"{what}\""), "{s}");
    }
    assert_eq!(s["timedOut"], true, "{s}");
}

/// A script run by the source launcher (`java Tally.java`, compiled in memory with its local
/// variables): probes by the file's path relative to `cwd`, the loop's values and the locals.
#[test]
fn the_source_launcher_runs_a_script_with_its_locals() {
    let Some(result) = script(Tool::Java, |_| {
        json!({"command": "java Tally.java", "cwd": fixture("java/script"),
               "probes": [{"file": "Tally.java", "line": 9, "expression": "sum + amount"},
                          {"file": "Tally.java", "line": 11}]})
    }) else {
        return;
    };
    let s = ok(&result);
    let values: Vec<&Value> =
        s["results"].as_array().unwrap().iter().map(|r| &r["value"]).collect();
    assert_eq!(values[..3], [&json!(3), &json!(13), &json!(30)], "{s}");
    assert_eq!(
        s["results"][3]["locals"],
        json!({"amounts": "[3, 4, 5]", "args": "[]", "sum": "50"}),
        "{s}"
    );
    assert_eq!(s["output"]["stdout"], "sum 50\n", "{s}");
}

/// `calls` on a file's methods: every call with its arguments and the value returned, as a
/// tree (a record's accessor called inside `total` is its child); past the cap, calls are
/// counted; a call that ends by an exception says what it threw.
#[test]
fn calls_record_arguments_returns_and_what_was_thrown() {
    let Some(result) = script(Tool::Java, |classes| {
        json!({"command": format!("java -cp {classes} app.Main"), "cwd": fixture("java/orders"),
               "calls": [{"file": orders("Orders.java"), "function": "add"},
                         {"file": orders("Orders.java"), "function": "total"},
                         {"file": orders("Orders.java"), "function": "price"}]})
    }) else {
        return;
    };
    let s = ok(&result);
    let calls = s["calls"].as_array().unwrap();
    let add = &calls[0];
    assert_eq!(
        (&add["function"], &add["args"], &add["depth"]),
        (&json!("Orders.add"), &json!({"name": "\"pen\"", "price": "10.0", "qty": "1"}), &json!(0)),
        "{s}"
    );
    assert!(add["return"].as_str().unwrap().starts_with("Orders{id: \"A-1\""), "{s}");
    let total = calls.iter().find(|c| c["function"] == "Orders.total").unwrap();
    assert_eq!((&total["return"], &total["args"]), (&json!("35.0"), &json!({})), "{s}");
    let prices: Vec<&Value> =
        calls.iter().filter(|c| c["function"] == "Orders.Item.price").collect();
    assert_eq!(prices.len(), 3, "{s}");
    assert_eq!(
        (&prices[1]["parent"], &prices[1]["return"]),
        (&total["call"], &json!("5.0")),
        "{s}"
    );
    assert_eq!(s["exitCode"], 0, "{s}");

    // Past the cap, calls are counted.
    let Some(result) = script(Tool::Java, |classes| {
        json!({"command": format!("java -cp {classes} app.Main"), "cwd": fixture("java/orders"),
               "calls": [{"file": orders("Orders.java"), "function": "add"},
                         {"file": orders("Orders.java"), "function": "total"},
                         {"file": orders("Orders.java"), "function": "price"}], "maxHits": 4})
    }) else {
        return;
    };
    let s = ok(&result);
    let recorded: Vec<&Value> =
        s["calls"].as_array().unwrap().iter().map(|c| &c["function"]).collect();
    assert_eq!(recorded, ["Orders.add", "Orders.add", "Orders.add", "Orders.total"], "{s}");
    assert_eq!(s["callsOmitted"], json!({"Orders.Item.price": 3}), "{s}");

    let Some(result) = script(Tool::Java, |classes| {
        json!({"command": format!("java -cp {classes} app.Main fail"), "cwd": fixture("java/orders"),
               "calls": [{"file": orders("Main.java")}], "maxHits": 5})
    }) else {
        return;
    };
    let s = ok(&result);
    let main = &s["calls"][0];
    assert_eq!(main["function"], "Main.main", "{s}");
    assert_eq!(
        main["threw"],
        json!({"type": "java.lang.IllegalStateException", "message": "no stock for A-1"}),
        "{s}"
    );
    assert!(main.get("return").is_none(), "{s}");
}

/// A build of several modules (`lib/src/main/java`, `app/src/main/java`, as Maven and Gradle
/// lay them out), run from its root: an exception thrown in one module's class, called from
/// another's, shows both modules' frames as the program's own, with their locals; run where
/// its sources are not, the frames it was thrown in are still named.
#[test]
fn every_module_of_a_build_is_the_programs_own() {
    if !need(Tool::Java) {
        return;
    }
    let project = PathBuf::from(fixture("java/modules"));
    let out = root().join("target/java/modules");
    for (module, classpath) in [("lib", ""), ("app", "lib")] {
        let sources = java_files(&format!("{}/{module}/src/main/java/{module}", project.display()));
        javac(&sources, &out.join(classpath).display().to_string(), &out.join(module));
    }
    let classpath = format!("{}:{}", out.join("lib").display(), out.join("app").display());
    let result = Server::initialized().debug_script(json!({
        "command": format!("java -cp {classpath} app.Shop"), "cwd": project.display().to_string(),
        "failures": true}));
    let s = ok(&result);
    let frames = s["failures"][0]["frames"].as_array().unwrap();
    let seen: Vec<(&Value, &Value)> =
        frames.iter().map(|f| (&f["function"], &f["locals"])).collect();
    assert_eq!(
        seen,
        [
            (&json!("Prices.cents"), &json!({"text": "\"-2.00\"", "whole": "-2"})),
            (
                &json!("Shop.main"),
                &json!({"args": "[]", "price": "\"-2.00\"", "prices": "[\"3.50\", \"-2.00\"]", "total": "300"})
            )
        ],
        "{s}"
    );
    assert!(frames[0]["file"].as_str().unwrap().ends_with("lib/src/main/java/lib/Prices.java"));

    // Run from a folder with other sources: no frame is the program's own, and where it was
    // thrown is still named, marked as a library's.
    let result = Server::initialized().debug_script(json!({
        "command": format!("java -cp {classpath} app.Shop"), "cwd": fixture("java/orders"),
        "failures": true}));
    let s = ok(&result);
    let frames = &s["failures"][0]["frames"];
    assert_eq!(
        (&frames[0]["function"], &frames[0]["line"], &frames[0]["library"]),
        (&json!("Prices.cents"), &json!(7), &json!(true)),
        "{s}"
    );
}

/// A session on the JVM: a breakpoint with a condition and a logpoint, values, a member by
/// path, a local set and seen by the program, steps over, into and out, an uncaught
/// exception's stop, and the program's end with its output.
#[test]
fn a_session_stops_steps_sets_and_stops_at_an_uncaught_exception() {
    let Some((mut server, state)) = session(
        "app.Main fail",
        json!({"breakpoints": [{"file": orders("Orders.java"), "line": 32, "logMessage": "total is {total}"},
                               {"file": orders("Main.java"), "line": 7, "condition": "total > 30"}],
               "pauseOnExceptions": "uncaught"}),
    ) else {
        return;
    };
    assert_eq!(
        (&state["state"], &state["reason"]),
        (&json!("paused"), &json!("breakpoint")),
        "{state}"
    );
    assert_eq!(
        (&state["location"]["function"], &state["location"]["line"]),
        (&json!("Main.main"), &json!(7)),
        "{state}"
    );
    assert_eq!(state["hitBreakpoints"], json!(["2"]), "{state}");
    let total = state["locals"].as_array().unwrap().iter().find(|l| l["name"] == "total").unwrap();
    assert_eq!(total["value"], 35.0, "{state}");

    let value = tool(
        &mut server,
        "debug-evaluate",
        json!({"expression": "order.items.get(2).qty() * 2 + \" pads\""}),
    );
    assert_eq!(value, json!({"type": "String", "value": "8 pads"}));
    let item = tool(&mut server, "debug-variables", json!({"path": "order.items"}));
    assert_eq!(item["variables"][1]["value"], "{name: \"ink\", price: 5.0, qty: 3}", "{item}");
    let set =
        tool(&mut server, "debug-evaluate", json!({"set": "total", "expression": "total + 64.5"}));
    assert_eq!((&set["type"], &set["value"]), (&json!("double"), &json!(99.5)), "{set}");

    let over = tool(&mut server, "debug-continue", json!({"step": "over"}));
    assert_eq!((&over["reason"], &over["location"]["line"]), (&json!("step"), &json!(8)), "{over}");
    let into = tool(&mut server, "debug-continue", json!({"step": "into"}));
    assert_eq!(into["location"]["function"], "Orders.counts", "{into}");
    let out = tool(&mut server, "debug-continue", json!({"step": "out"}));
    assert_eq!(
        (&out["location"]["function"], &out["location"]["line"]),
        (&json!("Main.main"), &json!(8)),
        "{out}"
    );

    let thrown = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(thrown["reason"], "exception", "{thrown}");
    assert_eq!(
        (
            &thrown["exception"]["class"],
            &thrown["exception"]["message"],
            &thrown["exception"]["uncaught"]
        ),
        (&json!("java.lang.IllegalStateException"), &json!("no stock for A-1"), &json!(true)),
        "{thrown}"
    );
    assert_eq!(thrown["location"]["line"], 11, "{thrown}");
    let ended = tool(&mut server, "debug-continue", json!({}));
    assert_eq!((&ended["state"], &ended["exitCode"]), (&json!("exited"), &json!(1)), "{ended}");
    assert!(
        ended["stdout"].as_str().unwrap().starts_with("total 99.5\n"),
        "the program saw the value set: {ended}"
    );
    let output = tool(&mut server, "debug-output", json!({}));
    let logged: Vec<&Value> =
        output["console"].as_array().unwrap().iter().map(|c| &c["text"]).collect();
    assert_eq!(logged, ["total is 0.0", "total is 10.0", "total is 25.0"], "{output}");
}

/// `set` on a field of an object and on an array's element, as Java assigns them: the
/// program sees the new values (an argument changed to `fail` makes it throw); a final field
/// is refused as javac refuses it.
#[test]
fn a_session_sets_fields_and_elements_the_program_sees() {
    let Some((mut server, state)) =
        session("app.Main ok", json!({"breakpoints": [{"file": orders("Main.java"), "line": 8}]}))
    else {
        return;
    };
    assert_eq!(state["location"]["line"], 8, "{state}");
    let set = |server: &mut Server, target: &str, value: &str| {
        tool(server, "debug-evaluate", json!({"set": target, "expression": value}))
    };
    let status = set(&mut server, "order.status", "Orders.Status.PAID");
    assert_eq!((&status["type"], &status["value"]), (&json!("Orders.Status"), &json!("PAID")));
    let argument = set(&mut server, "args[0]", "\"fa\" + \"il\"");
    assert_eq!(argument["value"], "fail", "{argument}");
    let refused =
        server.call("debug-evaluate", json!({"set": "order.id", "expression": "\"B-2\""}));
    let refused = &refused["structuredContent"];
    assert_eq!(refused["code"], "invalid_expression", "{refused}");
    assert!(refused["error"].as_str().unwrap().contains("final variable id"), "{refused}");
    let seen = tool(
        &mut server,
        "debug-evaluate",
        json!({"expression": "order.status + \" \" + args[0]"}),
    );
    assert_eq!(seen["value"], "PAID fail", "{seen}");
    let ended = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(ended["exitCode"], 1, "{ended}");
    assert!(ended["stderr"].as_str().unwrap().contains("no stock for A-1"), "{ended}");
}

/// Watchpoints on fields: a write to one object's field stops once it is written (old and
/// new values), in whichever method writes it; a static field's too; a local is refused
/// (JDWP watches fields only), and removing a watchpoint lets the program run on.
#[test]
fn watchpoints_stop_where_a_field_is_written() {
    let Some((mut server, state)) = session(
        "app.Account",
        json!({"breakpoints": [{"file": orders("Account.java"), "line": 24}]}),
    ) else {
        return;
    };
    assert_eq!(state["location"]["line"], 24, "{state}");
    let refused = server.call("debug-breakpoint", json!({"data": "account", "access": "write"}));
    let refused = &refused["structuredContent"];
    assert!(refused["error"].as_str().unwrap().contains("fields only"), "{refused}");
    let watch = tool(
        &mut server,
        "debug-breakpoint",
        json!({"data": "account.balance", "access": "write"}),
    );
    assert_eq!(watch["value"], json!({"type": "long", "value": 0}), "{watch}");
    let mut seen = Vec::new();
    for _ in 0..2 {
        let stop = tool(&mut server, "debug-continue", json!({}));
        assert_eq!(stop["reason"], "watchpoint", "{stop}");
        let change = &stop["watchpoints"][0];
        seen.push((
            stop["location"]["function"].clone(),
            change["old"]["value"].clone(),
            change["new"]["value"].clone(),
        ));
    }
    assert_eq!(
        seen,
        [
            (json!("Account.deposit"), json!(0), json!(100)),
            (json!("Account.charge"), json!(100), json!(70))
        ]
    );
    tool(&mut server, "debug-breakpoint", json!({"remove": watch["breakpointId"]}));
    let opened =
        tool(&mut server, "debug-breakpoint", json!({"data": "Account.opened", "access": "write"}));
    assert_eq!(opened["value"]["value"], 1, "{opened}");
    let stop = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(stop["location"]["function"], "Account.<init>", "{stop}");
    assert_eq!(stop["watchpoints"][0]["new"]["value"], 2, "{stop}");
    let ended = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(ended["stdout"], "balance 75, opened 2, seen 70\n", "{ended}");
}

/// `GET /price?qty=N` from the server fixture on `port`, on a thread of its own: its answer.
fn price(port: u16, qty: u32) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
        write!(stream, "GET /price?qty={qty} HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer
    })
}

/// A server that handles requests on a pool of threads: a breakpoint in its handler stops
/// once per request, each in the thread that took it, and the session's threads are the
/// program's (not the JVM's own).
#[test]
fn a_servers_breakpoint_stops_once_per_request() {
    let Some((mut server, state)) = session(
        "app.Server",
        json!({"breakpoints": [{"file": orders("Server.java"), "line": 14}], "timeout": 3000}),
    ) else {
        return;
    };
    assert_eq!(state["state"], "running", "{state}");
    let mut port = 0u16;
    crate::eventually(std::time::Duration::from_secs(20), "the server listens", || {
        let output = tool(&mut server, "debug-output", json!({}));
        let text = output["stdout"].as_str().unwrap_or_default().to_string();
        port = text.trim().strip_prefix("listening on ").and_then(|p| p.parse().ok()).unwrap_or(0);
        port != 0
    });
    let ask = |qty: u32| price(port, qty);
    let (first, second) = (ask(2), ask(4));
    let mut seen = Vec::new();
    for _ in 0..2 {
        let stop = tool(&mut server, "debug-continue", json!({"timeout": 20000}));
        assert_eq!(
            (&stop["reason"], &stop["location"]["line"]),
            (&json!("breakpoint"), &json!(14)),
            "{stop}"
        );
        let qty = tool(&mut server, "debug-evaluate", json!({"expression": "qty"}));
        seen.push(qty["value"].as_u64().unwrap());
        let stack = tool(&mut server, "debug-stack", json!({}));
        let threads: Vec<String> = stack["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect();
        assert!(threads.iter().any(|t| t.starts_with("pool-")), "{stack}");
        assert!(!threads.iter().any(|t| t == "Reference Handler" || t == "Finalizer"), "{stack}");
    }
    seen.sort_unstable();
    assert_eq!(seen, [2, 4]);
    let running = tool(&mut server, "debug-continue", json!({"timeout": 500}));
    assert_eq!(running["state"], "running", "{running}");
    assert!(first.join().unwrap().ends_with("total 5.0\n"));
    assert!(second.join().unwrap().ends_with("total 10.0\n"));
    let stopped = tool(&mut server, "debug-stop", json!({}));
    assert_eq!(stopped["stopped"], true, "{stopped}");
}

/// `mvn test`: Maven's own JVM and surefire's forked one both connect; the failing test and
/// the exception of the test's thread are the fork's, with the test's name and locals, and
/// nothing of Maven's own (its exceptions are a build tool's, its frames not the program's).
#[test]
fn maven_tests_fail_in_surefires_fork() {
    if !need(Tool::Maven) {
        return;
    }
    // A copy of the project: Maven writes its `target/` beside the pom.
    let project = root().join(format!("target/java/maven-{}", crate::tag()));
    let fixture_dir = PathBuf::from(fixture("java/orders"));
    for name in ["pom.xml", "maven-settings.xml"] {
        std::fs::create_dir_all(&project).unwrap();
        std::fs::copy(fixture_dir.join(name), project.join(name)).unwrap();
    }
    let copied = Command::new("cp").arg("-r").arg(fixture_dir.join("src")).arg(&project).status();
    assert!(copied.unwrap().success());
    let mut server = Server::initialized();
    let result = server.debug_script(json!({
        "command": "mvn -q -s maven-settings.xml test", "cwd": project.display().to_string(),
        "failures": true, "timeout": 300000}));
    let s = ok(&result);
    let failures = s["failures"].as_array().unwrap();
    let named: Vec<(&Value, &Value)> = failures.iter().map(|f| (&f["kind"], &f["test"])).collect();
    assert_eq!(
        named,
        [
            (&json!("test"), &json!("OrdersTest.totalsAnOrder")),
            (&json!("uncaught"), &json!("OrdersTest.reportsInABackgroundThread"))
        ],
        "{s}"
    );
    assert_eq!(failures[0]["frames"][0]["locals"]["total"], "25.0", "{s}");
    assert_eq!(s["processes"].as_array().unwrap().len(), 2, "Maven's JVM and the fork: {s}");
    assert_eq!(s["exitCode"], 1, "{s}");
    let _ = std::fs::remove_dir_all(&project);
}

/// A JVM that starts another (surefire's fork, Gradle's test workers): the child is debugged
/// in the same session. Its breakpoint stops there, the stop says which process, its threads
/// are listed as `pid/id`, both JVMs are the session's processes (the child's parent named),
/// and the program runs to its end.
#[test]
fn a_session_follows_a_jvm_the_program_starts() {
    let Some((mut server, state)) =
        session("app.Fork", json!({"breakpoints": [{"file": orders("Orders.java"), "line": 32}]}))
    else {
        return;
    };
    assert_eq!(
        (&state["reason"], &state["location"]["function"], &state["location"]["line"]),
        (&json!("breakpoint"), &json!("Orders.total"), &json!(32)),
        "{state}"
    );
    let child = state["process"]["pid"].as_u64().unwrap();
    assert!(state["process"]["command"].as_str().unwrap().ends_with("app.Main"), "{state}");
    let thread = state["process"]["thread"].as_str().unwrap().to_string();
    assert!(thread.starts_with(&format!("{child}/")), "{state}");
    let item =
        tool(&mut server, "debug-evaluate", json!({"expression": "item.name() + item.qty()"}));
    assert_eq!(item["value"], "pen1", "{item}");
    let sessions = tool(&mut server, "debug-sessions", json!({}));
    let processes = sessions["sessions"][0]["processes"].as_array().unwrap().clone();
    assert_eq!(processes.len(), 2, "{sessions}");
    assert_eq!(processes[1]["pid"], child, "{sessions}");
    assert_eq!(processes[1]["parent"], processes[0]["pid"], "{sessions}");
    assert!(processes[0]["command"].as_str().unwrap().ends_with("app.Fork"), "{sessions}");
    let threads = tool(&mut server, "debug-threads", json!({}));
    let ids: Vec<&str> =
        threads["threads"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&thread.as_str()), "{threads}");
    assert!(ids.iter().any(|id| !id.contains('/')), "the first JVM's threads too: {threads}");
    let current = threads["threads"].as_array().unwrap().iter().find(|t| t["current"] == true);
    assert_eq!(current.unwrap()["id"], thread, "{threads}");

    let mut hits = 1;
    let ended = loop {
        let state = tool(&mut server, "debug-continue", json!({}));
        if state["state"] != "paused" {
            break state;
        }
        assert_eq!(state["process"]["pid"], child, "{state}");
        hits += 1;
    };
    assert_eq!(hits, 3, "one stop per item");
    assert_eq!((&ended["state"], &ended["exitCode"]), (&json!("exited"), &json!(0)), "{ended}");
    let stdout = ended["stdout"].as_str().unwrap();
    assert!(stdout.starts_with("total 35.0\n") && stdout.ends_with("child ended 0\n"), "{ended}");
}

/// Attaching by port to a JVM whose agent listens (`server=y,suspend=n`): a breakpoint in the
/// running server's handler stops a request; debug-stop lets go of the JVM, which answers the
/// next request by itself, and is not ended.
#[test]
fn attach_by_port_stops_a_running_server_and_lets_it_go() {
    if !need(Tool::Java) {
        return;
    }
    let classes = compiled(false);
    let agent_port = crate::free_port();
    let mut program = Command::new("java")
        .arg(format!(
            "-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=127.0.0.1:{agent_port}"
        ))
        .args(["-cp", &classes, "app.Server"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    {
        use std::io::BufRead;
        let mut out = std::io::BufReader::new(program.stdout.as_mut().unwrap());
        // "Listening for transport dt_socket…", then the server's own line.
        while !line.starts_with("listening on ") {
            line.clear();
            assert!(out.read_line(&mut line).unwrap() > 0, "the server ended");
        }
    }
    let port: u16 = line.trim().strip_prefix("listening on ").unwrap().parse().unwrap();
    let ask = move |qty: u32| price(port, qty);
    let mut server = Server::initialized();
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"port": agent_port, "language": "java", "cwd": fixture("java/orders"),
               "breakpoints": [{"file": orders("Server.java"), "line": 14}], "timeout": 1000}),
    );
    assert_eq!(state["state"], "running", "{state}");
    let first = ask(3);
    let stop = tool(&mut server, "debug-continue", json!({"timeout": 20000}));
    assert_eq!(
        (&stop["reason"], &stop["location"]["line"]),
        (&json!("breakpoint"), &json!(14)),
        "{stop}"
    );
    assert_eq!(stop["location"]["file"], orders("Server.java"), "{stop}");
    assert!(stop.get("process").is_none(), "an attached JVM's process is not known: {stop}");
    let qty = tool(&mut server, "debug-evaluate", json!({"expression": "qty * 10"}));
    assert_eq!(qty["value"], 30, "{qty}");
    let stopped = tool(&mut server, "debug-stop", json!({}));
    assert_eq!(stopped["stopped"], true, "{stopped}");
    assert!(first.join().unwrap().ends_with("total 7.5\n"));
    // Let go: the next request is answered without a stop.
    assert!(ask(4).join().unwrap().ends_with("total 10.0\n"));
    assert!(program.try_wait().unwrap().is_none(), "the attached JVM runs on");
    let _ = program.kill();
    let _ = program.wait();
}

/// `userUnhandled`: an exception that leaves the program's own code into a library that
/// catches it (a pool's task catches what the submitted code throws) is a failure of its own
/// kind with the own frames and their locals, and a session stops there; one the program
/// catches itself is neither; without `userUnhandled`, nothing.
#[test]
fn user_unhandled_is_an_exception_a_library_caught_from_own_code() {
    let command = |classes: &str| format!("java -cp {classes} app.Handled");
    let Some(result) = script(Tool::Java, |classes| {
        json!({"command": command(classes), "cwd": fixture("java/orders"), "failures": true,
               "userUnhandled": true})
    }) else {
        return;
    };
    let s = ok(&result);
    let failures = s["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{s}");
    let failure = &failures[0];
    assert_eq!(
        (&failure["kind"], &failure["type"], &failure["message"]),
        (
            &json!("userUnhandled"),
            &json!("java.lang.NumberFormatException"),
            &json!("For input string: \"x1\"")
        ),
        "{s}"
    );
    let frame = &failure["frames"][0];
    assert_eq!(
        (&frame["function"], &frame["line"]),
        (&json!("Handled.quantity"), &json!(12)),
        "{s}"
    );
    assert_eq!(frame["locals"]["text"], "\"x1\"", "{s}");
    assert!(s["output"]["stdout"].as_str().unwrap().contains("failed: For input string"), "{s}");

    let Some(result) = script(
        Tool::Java,
        |classes| json!({"command": command(classes), "cwd": fixture("java/orders"), "failures": true}),
    ) else {
        return;
    };
    assert_eq!(ok(&result)["failures"], json!([]), "{result}");

    let classes = compiled(false);
    let mut server = Server::initialized();
    let stop = tool(
        &mut server,
        "debug-launch",
        json!({"command": command(&classes), "cwd": fixture("java/orders"),
               "pauseOnExceptions": "userUnhandled"}),
    );
    assert_eq!(stop["reason"], "exception", "{stop}");
    assert_eq!(
        (
            &stop["exception"]["class"],
            &stop["exception"]["userUnhandled"],
            &stop["exception"]["uncaught"]
        ),
        (&json!("java.lang.NumberFormatException"), &json!(true), &json!(false)),
        "{stop}"
    );
    assert!(
        stop["exception"]["stack"].as_str().unwrap().starts_with("at Handled.quantity"),
        "{stop}"
    );
    let ended = tool(&mut server, "debug-continue", json!({}));
    assert_eq!((&ended["state"], &ended["exitCode"]), (&json!("exited"), &json!(0)), "{ended}");
}
