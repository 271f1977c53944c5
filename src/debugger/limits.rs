//! How much an answer shows: the budgets every runtime keeps, and cutting a text to one. Every
//! part of the core (and each runtime) takes them from here.

/// The results of all hits together stay under this many bytes of JSON; the text block repeats
/// them, so the whole message stays well under the 10 MiB clients accept.
pub(crate) const RESULTS_BUDGET: usize = 3 * 1024 * 1024;
/// One value's JSON is cut to about this many characters.
pub(crate) const VALUE_CHARS: usize = 64 * 1024;

/// What a failure's record lists at most: the program's own frames, and characters of its
/// message; and of a frame's locals, the names shown and a preview's characters. The same for
/// every runtime (Python's tracer is given them in its plan).
pub(crate) const FAILURE_FRAMES: usize = 5;
pub(crate) const FAILURE_MESSAGE: usize = 1000;
pub(crate) const LOCALS_SHOWN: usize = 12;
pub(crate) const LOCAL_PREVIEW: usize = 100;

/// Bytes of a `failures` answer whole (the text block repeats the structured content) that
/// up to three failures fit in: the program's output is cut further to make room.
pub(crate) const FAILURES_ANSWER: usize = 8 * 1024;

/// Characters of a value in a stop state's `locals`, and in `debug-variables` unless its
/// `maxChars` says otherwise.
pub(crate) const VALUE_PREVIEW: usize = 200;
/// Characters of a variable's value a backend gives at most; the answer cuts it further.
pub(crate) const VALUE_MAX: usize = 64 * 1024;

/// The first `max` characters of `text`, marked when cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max).collect();
    format!("{cut}… [truncated]")
}

/// The last `max` characters of `text`, marked when cut: where a log's news is.
pub(crate) fn clip_end(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_string();
    }
    let kept: String = text.chars().skip(count - max).collect();
    format!("[truncated] …{kept}")
}
