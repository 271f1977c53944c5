//! Rust's legacy symbol names as lldb leaves them in frames, spelled as the source does:
//! `rt::tests::t::_$u7b$$u7b$closure$u7d$$u7d$::h0123456789abcdef` is `rt::tests::t::{{closure}}`,
//! `core::option::Option$LT$T$GT$::and_then` is `core::option::Option<T>::and_then`.

use std::borrow::Cow;

/// `name` demangled (the escapes of rustc's legacy mangling spelled out, the hash suffix left
/// out); a name that needs neither is borrowed as it is.
pub(crate) fn demangled(name: &str) -> Cow<'_, str> {
    let name = match name.rsplit_once("::h") {
        Some((head, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
            head
        }
        _ => name,
    };
    if !name.contains('$') && !name.contains("..") {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len());
    // Each path segment on its own: a leading `_` before an escape is only there to make the
    // segment an identifier.
    for (i, segment) in name.split("::").enumerate() {
        if i > 0 {
            out.push_str("::");
        }
        let segment = if segment.starts_with("_$") { &segment[1..] } else { segment };
        unescape(segment, &mut out);
    }
    Cow::Owned(out)
}

/// One segment's escapes: `$LT$` `<`, `$GT$` `>`, `$RF$` `&`, `$BP$` `*`, `$C$` `,`, `$SP$`
/// `@`, `$uXX$` the character XX (hex), and `..` `::`.
fn unescape(segment: &str, out: &mut String) {
    let mut rest = segment;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("..") {
            out.push_str("::");
            rest = after;
            continue;
        }
        if let Some(inner) = rest.strip_prefix('$') {
            if let Some(end) = inner.find('$') {
                let code = &inner[..end];
                let spelled = match code {
                    "LT" => Some('<'),
                    "GT" => Some('>'),
                    "RF" => Some('&'),
                    "BP" => Some('*'),
                    "C" => Some(','),
                    "SP" => Some('@'),
                    "LP" => Some('('),
                    "RP" => Some(')'),
                    _ => code
                        .strip_prefix('u')
                        .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                        .and_then(char::from_u32),
                };
                if let Some(c) = spelled {
                    out.push(c);
                    rest = &inner[end + 1..];
                    continue;
                }
            }
        }
        let mut chars = rest.chars();
        out.push(chars.next().expect("not empty"));
        rest = chars.as_str();
    }
}
