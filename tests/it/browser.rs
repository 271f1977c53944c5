//! Web pages in headless Chromium (Debian's `chromium`, installed by `.ci/run`), served from
//! `fixtures/web/` by a small HTTP server on 127.0.0.1 that each test starts: a static page
//! (`static/`) and a TypeScript bundle whose map the browser fetches (`bundled/`).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::need::{need, Tool};
use crate::{
    assert_no_debuggee, fixture, free_port, local, ok, tag, tool, values, Program, Server,
};

/// Serves `fixtures/web` on a free loopback port until dropped.
pub struct WebServer {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl WebServer {
    pub fn start() -> WebServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        std::thread::spawn(move || serve(stream));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        WebServer { port, stop }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/{path}", self.port)
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Answers one request with a file under `fixtures/web` (or 404), then closes.
fn serve(mut stream: TcpStream) {
    stream.set_nonblocking(false).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut request = String::new();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    if reader.read_line(&mut request).is_err() {
        return;
    }
    loop {
        let mut header = String::new();
        match reader.read_line(&mut header) {
            Ok(n) if n > 2 => {}
            _ => break,
        }
    }
    let path = request.split_whitespace().nth(1).unwrap_or("/");
    let path = path.split(['?', '#']).next().unwrap().trim_start_matches('/');
    let file = Path::new(&fixture("web")).join(path);
    let (status, body) = match std::fs::read(&file) {
        Ok(body) if !path.contains("..") => ("200 OK", body),
        _ => ("404 Not Found", b"not found".to_vec()),
    };
    let kind = match file.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript",
        Some("map") => "application/json",
        _ => "text/plain",
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(&body));
}

/// debug-script on a page, its browser tagged so that the test can see it is gone after.
fn page_script(server: &mut Server, tag: &str, arguments: Value) -> Value {
    let mut arguments = arguments;
    arguments["env"] = json!({"DMCP_TAG": tag});
    arguments["cwd"] = json!(fixture("web"));
    let result = server.call("debug-script", arguments);
    assert_no_debuggee(tag);
    result
}

/// The browser's throwaway profiles of a server (in its scratch directory): none once its
/// pages are closed.
fn profiles(server: &Server) -> Vec<String> {
    let prefix = format!("debug-mcp-{}-", server.pid());
    let mut found = Vec::new();
    for scratch in std::fs::read_dir(std::env::temp_dir()).unwrap().flatten() {
        if !scratch.file_name().to_string_lossy().starts_with(&prefix) {
            continue;
        }
        for entry in std::fs::read_dir(scratch.path()).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("browser-") {
                found.push(name);
            }
        }
    }
    found
}

/// `calls` in a page: its script's function, each call's arguments and what it returned (read
/// at the return, before the page changed the object further).
#[test]
fn a_page_traces_calls() {
    if !need(Tool::Chromium) {
        return;
    }
    let web = WebServer::start();
    let tag = tag();
    let mut server = Server::initialized();
    let result = page_script(
        &mut server,
        &tag,
        json!({"url": web.url("static/index.html"), "until": "idle",
               "calls": [{"file": "static/cart.js", "function": "addItem"}]}),
    );
    let s = ok(&result);
    let calls: Vec<(&Value, &Value)> =
        s["calls"].as_array().unwrap().iter().map(|c| (&c["args"]["item"], &c["return"])).collect();
    assert_eq!(
        calls,
        vec![
            (&json!("{\"name\":\"pen\",\"price\":1.5,\"qty\":2}"), &json!("{\"total\":3}")),
            (&json!("{\"name\":\"ink\",\"price\":4,\"qty\":1}"), &json!("{\"total\":7}")),
            (&json!("{\"name\":\"late\",\"price\":10,\"qty\":1}"), &json!("{\"total\":17}")),
        ],
        "{s}"
    );
    assert_eq!(s["calls"][0]["line"], 2, "{s}");
}

#[test]
fn a_page_gives_values_console_output_and_ends_at_its_load() {
    if !need(Tool::Chromium) {
        return;
    }
    let web = WebServer::start();
    let tag = tag();
    let mut server = Server::initialized();
    let result = page_script(
        &mut server,
        &tag,
        json!({"url": web.url("static/index.html"), "expression": "line",
               "breakpoint": {"file": "static/cart.js", "line": 4}}),
    );
    let s = ok(&result);
    assert_eq!(values(s), vec![json!(3), json!(4)], "the timer's hit comes after load: {s}");
    assert_eq!(s["results"][0]["type"], "number", "{s}");
    assert_eq!(s["breakpoint"]["resolvedLine"], 4, "{s}");
    assert_eq!(s["output"]["stdout"], "total 7\n", "{s}");
    assert_eq!(s["output"]["stderr"], "stock low\n", "{s}");
    assert!(s.get("exitCode").is_none() && s.get("signal").is_none(), "a page has no exit: {s}");
    assert!(s.get("undebugged").is_none(), "the browser's own processes are not the page's: {s}");
    assert_eq!(profiles(&server), Vec::<String>::new(), "the profile is removed");

    // Until the network is idle, or for a time: the timer's hit too, and its uncaught error.
    let result = page_script(
        &mut server,
        &tag,
        json!({"url": web.url("static/index.html"), "expression": "item.name", "until": "idle",
               "breakpoint": {"file": fixture("web/static/cart.js"), "line": 4}}),
    );
    assert_eq!(values(ok(&result)), vec![json!("pen"), json!("ink"), json!("late")]);
    let result = page_script(
        &mut server,
        &tag,
        json!({"url": web.url("static/index.html#fail"), "expression": "item.name",
               "until": 1500, "breakpoint": {"file": "static/cart.js", "line": 4}}),
    );
    let s = ok(&result);
    assert_eq!(values(s), vec![json!("pen"), json!("ink"), json!("late")], "{s}");
    let stderr = s["output"]["stderr"].as_str().unwrap();
    assert!(stderr.starts_with("stock low\nUncaught Error: checkout failed\n"), "{s}");
}

#[test]
fn a_page_without_a_hit_says_why() {
    if !need(Tool::Chromium) {
        return;
    }
    let web = WebServer::start();
    let tag = tag();
    let mut server = Server::initialized();
    // The timer's line runs after the load that ends the run.
    let result = page_script(
        &mut server,
        &tag,
        json!({"url": web.url("static/index.html"), "expression": "1",
               "breakpoint": {"file": "static/cart.js", "line": 21}}),
    );
    let s = &result["structuredContent"];
    assert_eq!(s["code"], "exited", "{s}");
    assert_eq!(s["error"], "the page reached its load event without a hit", "{s}");
    assert!(s["hint"].as_str().unwrap().contains("is bound in"), "{s}");
    assert_eq!(s["resolvedLine"], 21, "{s}");
    // A file the page never loads: the scripts it did load are named.
    let result = page_script(
        &mut server,
        &tag,
        json!({"url": web.url("bundled/index.html"), "expression": "1",
               "breakpoint": {"file": "static/cart.js", "line": 4}}),
    );
    let hint = result["structuredContent"]["hint"].as_str().unwrap().to_string();
    assert!(hint.contains(&format!("it loaded {}", web.url("bundled/dist/shop.js"))), "{hint}");
    // Nothing serves the page.
    let result = page_script(
        &mut server,
        &tag,
        json!({"url": format!("http://127.0.0.1:{}/", free_port()), "expression": "1",
               "breakpoint": {"file": "static/cart.js", "line": 4}}),
    );
    let s = &result["structuredContent"];
    assert_eq!(s["code"], "launch_failed", "{s}");
    // Chromium's words when its answer to the navigation says them; under load it has
    // answered first and shown its error page, which says the same in ours.
    let error = s["error"].as_str().unwrap();
    assert!(error.contains("net::ERR_CONNECTION_REFUSED") || error.contains("did not load"), "{s}");
}

#[test]
fn a_bundled_page_places_breakpoints_through_the_map_it_serves() {
    if !need(Tool::Chromium) {
        return;
    }
    let web = WebServer::start();
    let tag = tag();
    let mut server = Server::initialized();
    let result = page_script(
        &mut server,
        &tag,
        json!({"url": web.url("bundled/index.html"), "expression": "({sku: item.sku, cut})",
               "breakpoint": {"file": "bundled/src/prices.ts", "line": 9}}),
    );
    let s = ok(&result);
    assert_eq!(
        values(s),
        vec![json!({"sku": "a-1", "cut": 2.5}), json!({"sku": "b-2", "cut": 10})],
        "{s}"
    );
    assert_eq!(s["breakpoint"]["resolvedLine"], 9, "{s}");
    assert_eq!(s["breakpoint"]["generated"][0]["file"], fixture("web/bundled/dist/shop.js"), "{s}");
    assert_eq!(s["output"]["stdout"], "total 37.5\n", "{s}");

    // The source named by its URL, as a dev server would serve it.
    let result = page_script(
        &mut server,
        &tag,
        json!({"url": web.url("bundled/index.html"), "expression": "cut",
               "breakpoint": {"file": web.url("bundled/src/prices.ts"), "line": 9}}),
    );
    assert_eq!(values(ok(&result)), vec![json!(2.5), json!(10)]);

    // A session stops there too, in the TypeScript's lines.
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"url": web.url("bundled/index.html"),
        "cwd": fixture("web"), "env": {"DMCP_TAG": tag},
        "breakpoints": [{"file": "bundled/src/prices.ts", "line": 8}]}),
    );
    assert_eq!(state["reason"], "breakpoint", "{state}");
    assert_eq!(state["location"]["file"], fixture("web/bundled/src/prices.ts"), "{state}");
    assert_eq!(state["location"]["line"], 8, "{state}");
    assert_eq!(
        state["location"]["generated"]["file"],
        fixture("web/bundled/dist/shop.js"),
        "{state}"
    );
    assert_eq!(local(&state, "rate")["value"], 0.25, "{state}");
    let stack = tool(&mut server, "debug-stack", json!({}));
    assert_eq!(stack["frames"][1]["file"], fixture("web/bundled/src/main.ts"), "{stack}");
    assert_eq!(stack["frames"][1]["line"], 10, "{stack}");
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);

    // With `webRoot`, only the file under it: the same suffix elsewhere does not bind.
    let result = page_script(
        &mut server,
        &tag,
        json!({"url": web.url("static/index.html"), "expression": "line",
               "webRoot": fixture("web/bundled"),
               "breakpoint": {"file": fixture("web/static/cart.js"), "line": 4}}),
    );
    assert_eq!(result["structuredContent"]["code"], "invalid_arguments", "{result}");
    assert_eq!(result["structuredContent"]["field"], "webRoot", "{result}");
    let result = page_script(
        &mut server,
        &tag,
        json!({"url": web.url("static/index.html"), "expression": "line",
               "webRoot": fixture("web"), "breakpoint": {"file": "static/cart.js", "line": 4}}),
    );
    assert_eq!(values(ok(&result)), vec![json!(3), json!(4)]);
}

#[test]
fn a_page_session_steps_evaluates_stops_on_errors_and_reloads() {
    if !need(Tool::Chromium) {
        return;
    }
    let web = WebServer::start();
    let tag = tag();
    let mut server = Server::initialized();
    let file = fixture("web/static/cart.js");
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"url": web.url("static/index.html#fail"), "env": {"DMCP_TAG": tag},
               "breakpoints": [{"file": file, "line": 3}], "pauseOnExceptions": "uncaught"}),
    );
    assert_eq!(
        (&state["state"], &state["reason"]),
        (&json!("paused"), &json!("breakpoint")),
        "{state}"
    );
    assert_eq!(state["location"]["file"], file, "{state}");
    assert_eq!(state["location"]["function"], "addItem", "{state}");
    assert_eq!(local(&state, "item")["value"], "{name: 'pen', price: 1.5, qty: 2}", "{state}");

    let value = tool(&mut server, "debug-evaluate", json!({"expression": "item.price * 10"}));
    assert_eq!(value, json!({"type": "number", "value": 15}));
    let value = tool(&mut server, "debug-evaluate", json!({"expression": "document.title"}));
    assert_eq!(value, json!({"type": "string", "value": "Cart"}));
    let stack = tool(&mut server, "debug-stack", json!({}));
    assert_eq!(stack["frames"][1]["line"], 10, "the loop calling it: {stack}");
    let state = tool(&mut server, "debug-continue", json!({"step": "over"}));
    assert_eq!(state["location"]["line"], 4, "{state}");
    assert_eq!(local(&state, "line")["value"], 3, "{state}");
    let set = tool(&mut server, "debug-evaluate", json!({"set": "line", "expression": "100"}));
    assert_eq!(set["value"], 100, "{set}");
    let state = tool(&mut server, "debug-continue", json!({"step": "out"}));
    assert_eq!(state["location"]["function"], "(anonymous)", "{state}");
    assert_eq!(state["location"]["line"], 9, "back in the loop: {state}");

    tool(&mut server, "debug-breakpoint", json!({"remove": "1"}));
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(
        (&state["state"], &state["reason"]),
        (&json!("paused"), &json!("exception")),
        "{state}"
    );
    assert_eq!(state["exception"]["message"], "Error: checkout failed", "{state}");
    assert_eq!(state["location"]["line"], 23, "{state}");
    let total = tool(&mut server, "debug-evaluate", json!({"expression": "cart.total"}));
    assert_eq!(total["value"], 114, "the set value was kept: {total}");

    let output = tool(&mut server, "debug-output", json!({}));
    let console: Vec<(&Value, &Value)> =
        output["console"].as_array().unwrap().iter().map(|c| (&c["type"], &c["text"])).collect();
    assert_eq!(
        console,
        vec![(&json!("log"), &json!("total 104")), (&json!("warning"), &json!("stock low"))],
        "{output}"
    );

    // Let go, the error is the page's uncaught error: in its output.
    let state = tool(&mut server, "debug-continue", json!({"timeout": 300}));
    assert_eq!(state["state"], "running", "{state}");
    let since = output["cursor"].clone();
    let output = tool(&mut server, "debug-output", json!({"since": since}));
    let error = &output["console"][0];
    assert_eq!(error["type"], "error", "{output}");
    let text = error["text"].as_str().unwrap();
    assert!(text.starts_with("Uncaught Error: checkout failed\n    at http://"), "{output}");

    // debug-restart opens the page afresh, with the breakpoints.
    let set = tool(&mut server, "debug-breakpoint", json!({"file": file, "line": 4}));
    assert_eq!(set["verified"], true, "{set}");
    let state = tool(&mut server, "debug-restart", json!({}));
    assert_eq!(
        (&state["state"], &state["reason"]),
        (&json!("paused"), &json!("breakpoint")),
        "{state}"
    );
    assert_eq!(local(&state, "line")["value"], 3, "{state}");
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
    assert_eq!(profiles(&server), Vec::<String>::new(), "the profile is removed");
}

#[test]
fn a_running_browser_is_attached_by_port_and_left_open() {
    if !need(Tool::Chromium) {
        return;
    }
    let web = WebServer::start();
    let port = free_port();
    let profile = std::env::temp_dir().join(format!("dmcp-test-profile-{port}"));
    // Removed however the test ends (after the browser, dropped before it).
    struct Removed(std::path::PathBuf);
    impl Drop for Removed {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let _removed = Removed(profile.clone());
    let browser = Program::spawn(
        Command::new("chromium")
            .args(["--headless=new", "--disable-gpu", "--no-first-run", "--no-sandbox"])
            .arg("--disable-background-networking")
            .arg(format!("--remote-debugging-port={port}"))
            .arg(format!("--user-data-dir={}", profile.display()))
            // Its temporary files (org.chromium.Chromium.*) go with the profile.
            .env("TMPDIR", &profile)
            .arg(web.url("static/index.html"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    );
    let mut server = Server::initialized();
    // Until the browser lists its page (slow to start on a loaded machine). Attached as the
    // page's timer runs `addItem`, the session starts paused there: that is attached too.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let attached = loop {
        let attached = tool(
            &mut server,
            "debug-launch",
            json!({"port": port, "target": "Cart",
            "cwd": fixture("web"), "breakpoints": [{"file": "static/cart.js", "line": 4}],
            "timeout": 1}),
        );
        if attached["state"] == "running" || attached["state"] == "paused" {
            break attached;
        }
        assert!(std::time::Instant::now() < deadline, "the browser lists no page: {attached}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        attached["attached"]["url"].as_str().map(|u| u.contains("/devtools/page/")),
        Some(true)
    );
    // Attached at any moment of the page's life: before its script ran, in its load loop, or
    // in its 300 ms timer's call (each stops at the breakpoint), or after all that. The session
    // goes on until the page has run all of it and nothing stops it for a second (a reload
    // would navigate away from a stop under the session; 400 ms once ended before the timer's
    // call with CI's tests beside it): the cart then holds all three items.
    let mut running = false;
    for _ in 0..8 {
        let state = tool(&mut server, "debug-continue", json!({"timeout": 1000}));
        running = state["state"] == "running";
        if running {
            break;
        }
    }
    assert!(running, "the page kept stopping");
    let value = tool(&mut server, "debug-evaluate", json!({"expression": "cart.total"}));
    assert_eq!(value["value"], 17, "{value}");
    // The page loaded before we came: a reload runs the line again.
    tool(&mut server, "debug-evaluate", json!({"expression": "location.reload()"}));
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["reason"], "breakpoint", "{state}");
    assert_eq!(local(&state, "line")["value"], 3, "{state}");
    tool(&mut server, "debug-stop", json!({}));
    let pid = browser.0.id();
    assert!(Path::new(&format!("/proc/{pid}")).exists(), "the browser is left running");
    drop(browser);
}

#[test]
fn without_a_browser_the_answer_says_how_to_install_one() {
    let mut server =
        Server::initialized_with(&crate::root(), &[("CHROME_PATH", "/nonexistent/chromium")]);
    let result = server.call(
        "debug-script",
        json!({"url": "http://127.0.0.1:1/",
        "breakpoint": {"file": fixture("web/static/cart.js"), "line": 4}, "expression": "1"}),
    );
    let s = &result["structuredContent"];
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(s["code"], "no_adapter", "{s}");
    assert_eq!(s["install"], "apt-get install -y --no-install-recommends chromium", "{s}");
    let both =
        server.call("debug-launch", json!({"url": "http://127.0.0.1:1/", "command": "node x.js"}));
    assert_eq!(both["structuredContent"]["code"], "invalid_arguments", "{both}");
}

/// `failures` and `probes` on a page: an error thrown in a timer nobody catches, and two lines
/// of the page's script in one run.
#[test]
fn a_page_failure_and_probes() {
    if !need(Tool::Chromium) {
        return;
    }
    let web = WebServer::start();
    let tag = tag();
    let mut server = Server::initialized();
    let result = page_script(
        &mut server,
        &tag,
        json!({"url": format!("{}#fail", web.url("static/index.html")), "failures": true,
               "until": 1500}),
    );
    let s = ok(&result);
    let failures = s["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{s}");
    assert_eq!(
        (&failures[0]["kind"], &failures[0]["message"]),
        (&json!("uncaught"), &json!("checkout failed"))
    );
    assert_eq!(failures[0]["frames"][0]["line"], 23, "{s}");

    let result = page_script(
        &mut server,
        &tag,
        json!({"url": web.url("static/index.html"), "probes": [
            {"file": "static/cart.js", "line": 3}, {"file": "static/cart.js", "line": 4, "expression": "cart.total"}]}),
    );
    let s = ok(&result);
    let results = s["results"].as_array().unwrap();
    let order: Vec<&Value> = results.iter().map(|r| &r["probe"]).collect();
    assert_eq!(order, [&json!(0), &json!(1), &json!(0), &json!(1)], "{s}");
    assert_eq!(results[0]["locals"]["item"], "{name: 'pen', price: 1.5, qty: 2}", "{s}");
    assert_eq!((&results[1]["value"], &results[3]["value"]), (&json!(0), &json!(3)), "{s}");
}
