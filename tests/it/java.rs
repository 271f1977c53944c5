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
pub(crate) fn java_files(dir: &str) -> Vec<PathBuf> {
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
pub(crate) fn script(tool: Tool, arguments: impl FnOnce(&str) -> Value) -> Option<Value> {
    if !need(tool) {
        return None;
    }
    let classes = compiled(matches!(tool, Tool::JUnit));
    Some(Server::initialized().debug_script(arguments(&classes)))
}

pub(crate) fn orders(file: &str) -> String {
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
