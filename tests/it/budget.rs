//! Every tool answer within its stated byte budget (docs/tools.md, "What an answer costs"): the
//! whole `tools/call` result, text and structured content together, as a client puts it
//! before the model. Checked for every answer every test gets.

use serde_json::Value;

const KB: usize = 1024;

/// The budget of tool `name`'s answer `result` to a call with `arguments`, in bytes: the
/// table of docs/tools.md.
pub fn of(name: &str, arguments: &Value, result: &Value) -> usize {
    let structured = &result["structuredContent"];
    let count = |key: &str| structured[key].as_array().map_or(0, Vec::len);
    let integer = |key: &str, default: usize| {
        arguments[key].as_u64().and_then(|n| usize::try_from(n).ok()).unwrap_or(default)
    };
    match name {
        "debug-script" if structured.get("failures").is_some() && count("results") == 0 => {
            let hang = structured["hang"]["threads"].as_array().map_or(0, Vec::len);
            8 * KB + count("failures").saturating_sub(3) * 4 * KB + hang * 3 * KB
        }
        // Hits and calls: the results budget (3 MB of structured content).
        "debug-script" => 8 * KB + 7 * KB * KB,
        "debug-launch" | "debug-continue" | "debug-restart" | "debug-step" | "debug-pause"
        | "debug-attach" => 32 * KB + 10 * KB * count("watch"),
        "debug-stack" => KB + KB / 2 * integer("maxFrames", 20),
        "debug-variables" => {
            let chars = integer("maxChars", 200).max(200);
            KB + integer("maxItems", 50) * (6 * chars + 300)
        }
        "debug-evaluate" | "debug-set-variable" => KB + 6 * integer("maxChars", 4096),
        "debug-source" => {
            let lines = structured["lines"].as_array().map_or(0, Vec::len);
            let scripts = count("scripts");
            KB + lines * 2 * KB + scripts * KB
        }
        "debug-output" => 400 * KB,
        "debug-sessions" => KB + 2 * KB * count("sessions"),
        "debug-threads" => 2 * KB + KB / 2 * count("threads"),
        "debug-breakpoint"
        | "debug-list-breakpoints"
        | "debug-set-breakpoint"
        | "debug-remove-breakpoint"
        | "debug-pause-on-exceptions" => 2 * KB + KB * count("breakpoints"),
        "debug-watch" => KB + KB / 2 * count("watch"),
        "debug-stop" | "debug-scripts" => 4 * KB + KB * count("scripts"),
        _ => 8 * KB,
    }
}

/// Fails when `result` is over its budget.
pub fn check(name: &str, arguments: &Value, result: &Value) {
    let size = result.to_string().len();
    let budget = of(name, arguments, result);
    assert!(
        size <= budget,
        "the answer of {name} is {size} bytes, over its budget of {budget} (docs/tools.md, \
         \"What an answer costs\"): {}",
        result.to_string().chars().take(2000).collect::<String>()
    );
}
