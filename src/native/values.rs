//! Values as C, C++, Rust and Go adapters write them: typed as JSON (`typed_text`), told when
//! their text hides the value (an address, a size) so that it is read one level down
//! (`opaque`); and rustc's lldb formatters, loaded with our fixes to them.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::dap::flavour::Opaque;

/// A value's text as JSON, in the terms of C, C++, Rust and Go as their adapters print them:
/// numbers, `true`/`false`, characters (`'a'`), strings (`"ada"`, and a `char *`'s
/// `0x5555… "ada"`); anything else is its text.
pub(crate) fn typed_text(kind: &str, text: &str) -> Value {
    let text = text.trim();
    if let Some(quoted) =
        text.find('"').map(|at| &text[at..]).filter(|q| q.len() >= 2 && q.ends_with('"'))
    {
        let pointer_like = text.starts_with('"') || text.starts_with("0x");
        if pointer_like {
            if let Ok(Value::String(s)) = serde_json::from_str::<Value>(quoted) {
                return s.into();
            }
            return quoted[1..quoted.len() - 1].into();
        }
    }
    match text {
        "true" => return true.into(),
        "false" => return false.into(),
        "nil" | "NULL" | "nullptr" if !kind.is_empty() => return Value::Null,
        _ => {}
    }
    if kind.contains('*') || text.starts_with("0x") {
        // A null pointer is JSON's null; any other address is its text.
        let null = text.strip_prefix("0x").is_some_and(|hex| hex.bytes().all(|b| b == b'0'));
        return if null { Value::Null } else { text.into() };
    }
    let floating = ["double", "float", "f32", "f64"].iter().any(|f| kind.contains(f));
    if let (true, Ok(f)) = (floating, text.parse::<f64>()) {
        if f.is_finite() {
            return f.into();
        }
    }
    if let Ok(n) = text.parse::<i64>() {
        return n.into();
    }
    if let Ok(n) = text.parse::<u64>() {
        return n.into();
    }
    if let Ok(f) = text.parse::<f64>() {
        if f.is_finite() {
            return f.into();
        }
    }
    // A `char`: `'a'` (lldb writes `97 'a'` for C's char).
    if let Some(c) = text.rsplit_once(' ').map_or(text, |(_, c)| c).strip_prefix('\'') {
        if let Some(c) = c.strip_suffix('\'') {
            return c.into();
        }
    }
    text.into()
}

/// How an adapter's text hides a value, when it does: lldb's `0x00007ff…` for a reference or
/// a `Box` (and Delve's `(*main.T)(0xc000…)`), `Version @ 0x7ff…` or `{...}` for a structure
/// without a summary, `size=3` for a `Vec`, a slice, a map or a C++ container, `strong=1,
/// weak=0` for an `Rc` or `Arc`. A string beside an address (`0x5555… "ada"`) says it whole.
pub(super) fn opaque(kind: &str, text: &str) -> Option<Opaque> {
    let text = text.trim();
    let hex = |t: &str| {
        t.strip_prefix("0x")
            .is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    let null = |t: &str| t.strip_prefix("0x").is_some_and(|h| h.bytes().all(|b| b == b'0'));
    if hex(text) && !null(text) {
        return Some(Opaque::Pointer);
    }
    // Delve: `(*main.Order)(0xc000012345)`.
    if let Some(address) = text.strip_prefix("(*").and_then(|t| t.rsplit_once(")(")) {
        let address = address.1.trim_end_matches(')');
        return (hex(address) && !null(address)).then_some(Opaque::Pointer);
    }
    if text.starts_with("size=") {
        return Some(Opaque::Items);
    }
    if text.starts_with("strong=") {
        return Some(Opaque::Shared);
    }
    let addressed = text.rsplit_once(" @ ").is_some_and(|(_, at)| hex(at));
    let _ = kind;
    (addressed || text == "{...}" || text.is_empty()).then_some(Opaque::Members)
}

/// A Rust `u8` (a local, a field), which lldb types as C's `unsigned char` and prints as a
/// character (`'\x05'`): its number. (An `i8` is lldb's `char`, as a Rust `char` may be.)
pub(super) fn rust_u8(kind: &str, text: &str) -> Option<u8> {
    matches!(kind, "u8" | "unsigned char").then(|| char_byte(text))?
}

/// The byte a C character literal says (`'C'`, `'\t'`, `'\x01'`).
fn char_byte(item: &str) -> Option<u8> {
    let inner = item.strip_prefix('\'')?.strip_suffix('\'')?;
    let mut chars = inner.chars();
    let byte = match (chars.next()?, chars.next()) {
        (c, None) => u8::try_from(u32::from(c)).ok()?,
        ('\\', Some(escape)) => match (escape, chars.as_str()) {
            ('x', hex) => u8::from_str_radix(hex, 16).ok()?,
            (_, rest) if !rest.is_empty() => return None,
            ('0', _) => 0,
            ('a', _) => 7,
            ('b', _) => 8,
            ('t', _) => 9,
            ('n', _) => 10,
            ('v', _) => 11,
            ('f', _) => 12,
            ('r', _) => 13,
            ('e', _) => 27,
            (other, _) => u8::try_from(u32::from(other)).ok()?,
        },
        _ => return None,
    };
    Some(byte)
}

/// Our fixes to rustc's lldb formatters (`rust_lldb.py`), loaded after them.
const RUST_LLDB: &str = include_str!("rust_lldb.py");

/// lldb commands that load rustc's formatters (`String`, `Vec`, `HashMap` contents), quietly,
/// with our fixes to them (written once per server in its scratch directory).
pub(super) fn rust_formatters() -> Vec<String> {
    let Ok(output) =
        crate::process::output_of(std::process::Command::new("rustc").args(["--print", "sysroot"]))
    else {
        return Vec::new();
    };
    let sysroot = String::from_utf8_lossy(&output.stdout).trim().to_string();
    let etc = Path::new(&sysroot).join("lib/rustlib/etc");
    if !etc.join("lldb_lookup.py").exists() {
        return Vec::new();
    }
    let mut commands = vec![
        format!("command script import \"{}\"", etc.join("lldb_lookup.py").display()),
        format!("command source -s 1 \"{}\"", etc.join("lldb_commands").display()),
    ];
    match rust_fixes() {
        Ok(fixes) => commands.push(format!("command script import \"{}\"", fixes.display())),
        Err(e) => crate::log::warn(format_args!("rustc's lldb formatters go unfixed: {e}")),
    }
    commands
}

/// `rust_lldb.py`, written once per server in its scratch directory.
fn rust_fixes() -> std::io::Result<PathBuf> {
    static WRITTEN: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);
    let mut written = WRITTEN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(file) = written.as_ref() {
        return Ok(file.clone());
    }
    let file = crate::scratch::private_dir("lldb")?.join("debug_mcp_rust_lldb.py");
    std::fs::write(&file, RUST_LLDB)?;
    *written = Some(file.clone());
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rust_u8s_are_numbers() {
        assert_eq!(rust_u8("unsigned char", "'\\x05'"), Some(5));
        assert_eq!(rust_u8("unsigned char", "'\\xc8'"), Some(200));
        assert_eq!(rust_u8("u8", "'A'"), Some(65));
        assert_eq!(rust_u8("char", "'A'"), None);
    }

    #[test]
    fn rust_bytes_are_numbers() {
        // Items of `&[u8]`, `Vec<u8>`, `[u8; N]` too: lldb types each `unsigned char`.
        assert_eq!(rust_u8("unsigned char", "'C'"), Some(67));
        assert_eq!(rust_u8("unsigned char", "'\\t'"), Some(9));
        assert_eq!(rust_u8("unsigned char", "'\\x01'"), Some(1));
        assert_eq!(rust_u8("unsigned char", "'\\''"), Some(39));
        assert_eq!(rust_u8("unsigned char", "'\\xff'"), Some(255));
        assert_eq!(rust_u8("char", "'C'"), None);
    }

    #[test]
    fn texts_that_hide_a_value() {
        for (kind, text, expected) in [
            ("rv::Version *", "0x00007fffffffe1e0", Some(Opaque::Pointer)),
            ("int *", "0x0000000000000000", None),
            ("const char *", "0x0000555555556008 \"ada\"", None),
            ("*main.Order", "(*main.Order)(0xc000012345)", Some(Opaque::Pointer)),
            ("alloc::vec::Vec<&str>", "size=3", Some(Opaque::Items)),
            ("alloc::rc::Rc<rv::Version>", "strong=1, weak=0", Some(Opaque::Shared)),
            ("versions::Version", "versions::Version @ 0x7ffff7db04e8", Some(Opaque::Members)),
            ("Point", "{...}", Some(Opaque::Members)),
            ("core::option::Option<u64>", "Some(5)", None),
            ("main.Order", "main.Order {ID: 1}", None),
            ("int", "42", None),
        ] {
            assert_eq!(opaque(kind, text), expected, "{text}");
        }
    }

    #[test]
    fn values_are_typed_as_the_language_prints_them() {
        assert_eq!(typed_text("int", "42"), json!(42));
        assert_eq!(typed_text("double", "9.5"), json!(9.5));
        assert_eq!(typed_text("double", "19"), json!(19.0));
        assert_eq!(typed_text("bool", "true"), json!(true));
        assert_eq!(typed_text("const char *", "0x0000555555556008 \"ada\""), json!("ada"));
        assert_eq!(typed_text("alloc::string::String", "\"a \\\"b\\\"\""), json!("a \"b\""));
        assert_eq!(typed_text("string", "\"tea\""), json!("tea"));
        assert_eq!(typed_text("char", "97 'a'"), json!("a"));
        assert_eq!(typed_text("int *", "0x00007fffffffe4d0"), json!("0x00007fffffffe4d0"));
        assert_eq!(typed_text("int *", "0x0000000000000000"), Value::Null);
        assert_eq!(typed_text("main.Order", "main.Order {ID: 1}"), json!("main.Order {ID: 1}"));
    }
}
