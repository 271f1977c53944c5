//! Source maps (revision 3, ECMA-426): decoding the Base64 VLQ mappings, index maps with
//! `sections`, `sourceRoot` and source path resolution, and position lookups both ways.
//!
//! Decoded once into a flat list of 16-byte segments in generated order with an index of where
//! each generated line starts (generated -> original: binary search within the line), plus, per
//! source and on first use, a permutation in original order (original -> generated: binary
//! search). Lines and columns are 0-based here, as in source maps and CDP.
//!
//! This module does no I/O: `cdp/maps.rs` finds the maps and reads the files.

use std::borrow::Cow;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

/// A position in a file, 0-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Position {
    pub(crate) line: u32,
    pub(crate) column: u32,
}

/// One mapping segment; its generated line is implied by [`SourceMap::lines`]. 16 bytes: a
/// 20 MB map holds a few million of these. `source == NONE` marks a generated range that maps
/// to nothing.
#[derive(Debug, Clone, Copy)]
struct Segment {
    column: u32,
    source: u32,
    original: Position,
}

const NONE: u32 = u32::MAX;

/// A source as the map names it, and where that is on disk when it can be told.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Source {
    /// `sourceRoot` + the entry in `sources`, as written.
    pub(crate) name: String,
    /// The absolute path it resolves to, when it is a path or a `file://` URL.
    pub(crate) path: Option<PathBuf>,
    /// The path without scheme, namespace and leading `./`/`../`, for suffix matching
    /// (`webpack://shop/./src/app.ts` -> `src/app.ts`).
    suffix: String,
}

#[derive(Debug)]
pub(crate) struct SourceMap {
    sources: Vec<Source>,
    /// Sorted by generated position.
    segments: Vec<Segment>,
    /// `segments[lines[l]..lines[l + 1]]` are generated line `l`'s.
    lines: Vec<u32>,
    /// Per source, built on first use: its segments' indices sorted by original position.
    by_original: Vec<OnceLock<Vec<u32>>>,
}

/// Collects segments in generated order, noting where each line starts.
#[derive(Default)]
struct Builder {
    segments: Vec<Segment>,
    lines: Vec<u32>,
    /// Segments that came out of order (overlapping index-map sections), with their lines.
    stray: Vec<(u32, Segment)>,
}

impl Builder {
    fn push(&mut self, line: u32, segment: Segment) {
        let current = self.lines.len().checked_sub(1);
        let in_order = match current {
            Some(current) if (line as usize) < current => false,
            Some(current) if line as usize == current => {
                self.segments.len() == self.lines[current] as usize
                    || self.segments.last().is_some_and(|s| s.column <= segment.column)
            }
            _ => true,
        };
        if !in_order {
            self.stray.push((line, segment));
            return;
        }
        while self.lines.len() <= line as usize {
            self.lines.push(self.segments.len() as u32);
        }
        self.segments.push(segment);
    }

    fn finish(mut self) -> (Vec<Segment>, Vec<u32>) {
        if !self.stray.is_empty() {
            // Rare: rebuild in order.
            let mut all: Vec<(u32, Segment)> =
                Vec::with_capacity(self.segments.len() + self.stray.len());
            for (line, window) in self.lines.iter().enumerate() {
                let end = self.lines.get(line + 1).map_or(self.segments.len(), |&e| e as usize);
                all.extend(self.segments[*window as usize..end].iter().map(|s| (line as u32, *s)));
            }
            all.append(&mut self.stray);
            all.sort_by_key(|(line, s)| (*line, s.column));
            let mut sorted = Builder::default();
            for (line, segment) in all {
                sorted.push(line, segment);
            }
            return sorted.finish();
        }
        self.lines.push(self.segments.len() as u32);
        (self.segments, self.lines)
    }
}

impl SourceMap {
    /// Parses a map. Relative sources resolve against `base`, the directory of the map file
    /// (for an inline map: of the generated file). `sourcesContent` is skipped, not kept.
    pub(crate) fn parse(text: &str, base: Option<&Path>) -> Result<SourceMap, String> {
        SourceMap::parse_in(text, base.map_or(Base::None, Base::Dir))
    }

    /// Parses a map a page loaded from `url` (or inline in a script loaded from it): relative
    /// sources resolve against that URL (`main.ts` next to `http://h/src/main.js.map` is
    /// `http://h/src/main.ts`), to be matched to files by their path's suffix.
    pub(crate) fn parse_at_url(text: &str, url: &str) -> Result<SourceMap, String> {
        SourceMap::parse_in(text, Base::Url(url))
    }

    fn parse_in(text: &str, base: Base) -> Result<SourceMap, String> {
        let raw: RawMap =
            serde_json::from_str(text).map_err(|e| format!("not a source map: {e}"))?;
        let mut sources = Vec::new();
        let mut builder = Builder::default();
        match raw.sections {
            Some(sections) => {
                for (i, section) in sections.into_iter().enumerate() {
                    let map = section.map.ok_or_else(|| {
                        format!("section {i} of the index map has no `map` (a `url` section is not supported)")
                    })?;
                    add(&mut sources, &mut builder, &map, base, section.offset)?;
                }
            }
            None => add(&mut sources, &mut builder, &raw, base, Position { line: 0, column: 0 })?,
        }
        let (segments, lines) = builder.finish();
        let by_original = sources.iter().map(|_| OnceLock::new()).collect();
        Ok(SourceMap { sources, segments, lines, by_original })
    }

    /// Gives every source's path as `local` says it (a program's files elsewhere, mapped here).
    pub(crate) fn map_paths(&mut self, local: impl Fn(&Path) -> PathBuf) {
        for source in &mut self.sources {
            source.path = source.path.as_deref().map(&local);
        }
    }

    pub(crate) fn sources(&self) -> &[Source] {
        &self.sources
    }

    /// The index of the source that is `file` (absolute, symlinks resolved or not): an exact
    /// path match first, else the longest suffix match (`webpack://` and other schemes).
    pub(crate) fn find_source(&self, file: &Path) -> Option<usize> {
        let file = normalize(file);
        if let Some(i) = self.sources.iter().position(|s| s.path.as_deref() == Some(&file)) {
            return Some(i);
        }
        let file_text = file.to_string_lossy();
        self.sources
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                !s.suffix.is_empty()
                    && (file_text == s.suffix.as_str()
                        || file_text.ends_with(&format!("/{}", s.suffix)))
            })
            .max_by_key(|(_, s)| s.suffix.len())
            .map(|(i, _)| i)
    }

    /// The generated position of segment `i` (its line found by binary search).
    fn generated_of(&self, i: u32) -> Position {
        let line = self.lines.partition_point(|&start| start <= i) - 1;
        Position { line: line as u32, column: self.segments[i as usize].column }
    }

    /// Segments of `source`, sorted by original then generated position; built once.
    fn by_original(&self, source: usize) -> &[u32] {
        self.by_original[source].get_or_init(|| {
            let mut indices: Vec<u32> = (0..self.segments.len() as u32)
                .filter(|&i| self.segments[i as usize].source == source as u32)
                .collect();
            // Segment indices already follow generated order, so a stable sort by original
            // position keeps generated order among equals.
            indices.sort_by_key(|&i| self.segments[i as usize].original);
            indices
        })
    }

    /// The generated positions of original `line` of `source`, earliest original column first.
    /// When the line has no mapping (a comment, a type), the next line that has one is used,
    /// as V8 moves a breakpoint to the next line with code; the line used comes back too.
    pub(crate) fn generated_for(&self, source: usize, line: u32) -> Option<(u32, Vec<Position>)> {
        let indices = self.by_original.get(source).map(|_| self.by_original(source))?;
        let line_of = |i: &u32| self.segments[*i as usize].original.line;
        let start = indices.partition_point(|i| line_of(i) < line);
        let found_line = line_of(indices.get(start)?);
        let positions = indices[start..]
            .iter()
            .take_while(|i| line_of(i) == found_line)
            .map(|&i| self.generated_of(i))
            .collect();
        Some((found_line, positions))
    }

    /// The original position of a generated position: the closest segment at or before it on
    /// the same generated line (the source-map "greatest lower bound").
    pub(crate) fn original_for(&self, generated: Position) -> Option<(usize, Position)> {
        let line = generated.line as usize;
        let (start, end) = (*self.lines.get(line)? as usize, *self.lines.get(line + 1)? as usize);
        let on_line = &self.segments[start..end];
        let after = on_line.partition_point(|s| s.column <= generated.column);
        let segment = on_line[..after].last()?;
        (segment.source != NONE).then_some((segment.source as usize, segment.original))
    }
}

/// Adds one regular map, its generated positions shifted by `offset` (index map sections).
fn add(
    sources: &mut Vec<Source>,
    builder: &mut Builder,
    raw: &RawMap,
    base: Base,
    offset: Position,
) -> Result<(), String> {
    if raw.version != Some(3) {
        return Err("unsupported source map version (only version 3 exists)".into());
    }
    let root = raw.source_root.as_deref().unwrap_or("");
    let first = sources.len() as u32;
    for source in &raw.sources {
        sources.push(resolve_source(base, root, source.as_deref().unwrap_or("")));
    }
    let count = sources.len() as u32 - first;
    // Reserve exactly (a segment ends at each `,` or `;`): growing by doubling would hold the
    // old and the new buffer at once, tens of MiB for a large map.
    let separators = raw.mappings.bytes().filter(|&b| b == b',' || b == b';').count();
    builder.segments.reserve(separators + 1);
    builder.lines.reserve(raw.mappings.bytes().filter(|&b| b == b';').count() + 2);
    decode_mappings(&raw.mappings, |generated, original| {
        let line = generated.line + offset.line;
        let column =
            if generated.line == 0 { generated.column + offset.column } else { generated.column };
        let (source, original) = match original {
            Some((source, _)) if source >= count => {
                return Err(format!("a mapping names source {source}, but the map has {count}"))
            }
            Some((source, original)) => (first + source, original),
            None => (NONE, Position { line: 0, column: 0 }),
        };
        builder.push(line, Segment { column, source, original });
        Ok(())
    })
}

/// The fields of a map this module uses. Read with a hand-written serde visitor so that
/// `mappings` is borrowed from the text and `sourcesContent` (often half of a map) is skipped
/// rather than held while the segments are built.
#[derive(Default)]
struct RawMap<'a> {
    version: Option<u64>,
    sources: Vec<Option<String>>,
    source_root: Option<String>,
    mappings: Cow<'a, str>,
    sections: Option<Vec<RawSection<'a>>>,
}

struct RawSection<'a> {
    offset: Position,
    map: Option<RawMap<'a>>,
}

impl<'de> Deserialize<'de> for RawMap<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MapVisitor;
        impl<'de> Visitor<'de> for MapVisitor {
            type Value = RawMap<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a source map object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<RawMap<'de>, A::Error> {
                let mut map = RawMap::default();
                while let Some(key) = access.next_key::<Cow<'de, str>>()? {
                    match key.as_ref() {
                        "version" => map.version = access.next_value()?,
                        "sources" => {
                            map.sources = access.next_value::<Option<_>>()?.unwrap_or_default()
                        }
                        "sourceRoot" => map.source_root = access.next_value()?,
                        "mappings" => map.mappings = access.next_value::<Text<'de>>()?.0,
                        "sections" => map.sections = Some(access.next_value()?),
                        _ => {
                            access.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(map)
            }
        }
        deserializer.deserialize_map(MapVisitor)
    }
}

impl<'de> Deserialize<'de> for RawSection<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SectionVisitor;
        impl<'de> Visitor<'de> for SectionVisitor {
            type Value = RawSection<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an index map section")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut access: A,
            ) -> Result<RawSection<'de>, A::Error> {
                let mut section = RawSection { offset: Position { line: 0, column: 0 }, map: None };
                while let Some(key) = access.next_key::<Cow<'de, str>>()? {
                    match key.as_ref() {
                        "offset" => {
                            let offset: Value = access.next_value()?;
                            let field = |k: &str| offset[k].as_u64().unwrap_or(0) as u32;
                            section.offset =
                                Position { line: field("line"), column: field("column") };
                        }
                        "map" => section.map = Some(access.next_value()?),
                        _ => {
                            access.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(section)
            }
        }
        deserializer.deserialize_map(SectionVisitor)
    }
}

/// A string borrowed from the input when it has no escapes (a `mappings` never has), owned
/// otherwise.
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

/// Decodes a `mappings` string, calling `f(generated, Some((source, original)))` for each
/// mapped segment and `f(generated, None)` for each segment that maps to nothing.
fn decode_mappings(
    mappings: &str,
    mut f: impl FnMut(Position, Option<(u32, Position)>) -> Result<(), String>,
) -> Result<(), String> {
    // Source index, original line and column carry over from segment to segment and across
    // lines; the generated column restarts at every line.
    let (mut source, mut original_line, mut original_column) = (0i64, 0i64, 0i64);
    for (line, text) in mappings.split(';').enumerate() {
        let line = clamp(line as i64)?;
        let mut column = 0i64;
        for segment in text.split(',').filter(|s| !s.is_empty()) {
            let mut fields = [0i64; 5];
            let n = decode_vlq(segment.as_bytes(), &mut fields).map_err(|e| {
                format!("bad mapping `{segment}` on generated line {}: {e}", line + 1)
            })?;
            column += fields[0];
            let generated = Position { line, column: clamp(column)? };
            match n {
                1 => f(generated, None)?,
                4 | 5 => {
                    source += fields[1];
                    original_line += fields[2];
                    original_column += fields[3];
                    let original =
                        Position { line: clamp(original_line)?, column: clamp(original_column)? };
                    f(generated, Some((clamp(source)?, original)))?;
                }
                n => return Err(format!("a mapping segment has {n} fields (1, 4 or 5 expected)")),
            }
        }
    }
    Ok(())
}

fn clamp(value: i64) -> Result<u32, String> {
    u32::try_from(value).map_err(|_| format!("a mapping points at position {value}"))
}

/// Decodes up to five Base64 VLQ values of one segment; returns how many.
fn decode_vlq(bytes: &[u8], out: &mut [i64; 5]) -> Result<usize, &'static str> {
    let mut count = 0;
    let (mut value, mut shift) = (0i64, 0u32);
    for &byte in bytes {
        let digit = match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return Err("not a Base64 character"),
        } as i64;
        if shift > 60 {
            return Err("number too large");
        }
        value |= (digit & 31) << shift;
        if digit & 32 != 0 {
            shift += 5;
            continue;
        }
        if count == 5 {
            return Err("more than 5 fields");
        }
        // The lowest bit is the sign.
        out[count] = if value & 1 == 1 { -(value >> 1) } else { value >> 1 };
        count += 1;
        value = 0;
        shift = 0;
    }
    if shift != 0 {
        return Err("the last number is cut off");
    }
    Ok(count)
}

/// What a map's relative sources are relative to.
#[derive(Clone, Copy)]
enum Base<'a> {
    None,
    /// The directory of the map file (for an inline map: of the generated file).
    Dir(&'a Path),
    /// The URL a page loaded the map (or its script) from.
    Url(&'a str),
}

fn resolve_source(base: Base, root: &str, source: &str) -> Source {
    let name = if root.is_empty() || source.contains("://") || source.starts_with('/') {
        source.to_string()
    } else if root.ends_with('/') {
        format!("{root}{source}")
    } else {
        format!("{root}/{source}")
    };
    let name = match base {
        Base::Url(url) if !name.contains("://") => join_url(url, &name),
        _ => name,
    };
    let base = match base {
        Base::Dir(dir) => Some(dir),
        _ => None,
    };
    let (path, rest) = if let Some(path) = name.strip_prefix("file://") {
        let path = percent_decode(path);
        (Some(normalize(Path::new(&path))), path)
    } else if let Some((_, rest)) = name.split_once("://") {
        // `webpack://namespace/./src/a.ts`: the part after the namespace is relative to a root
        // we cannot know, so only suffix matching can place it. A query is no part of the path
        // (webpack's eval-source-map names `webpack://app/./src/a.js?3ac8`).
        let path = rest.split_once('/').map_or("", |(_, p)| p);
        (None, path.split(['?', '#']).next().unwrap_or(path).to_string())
    } else if name.starts_with('/') {
        (Some(normalize(Path::new(&name))), name.clone())
    } else {
        (base.map(|base| normalize(&base.join(&name))), name.clone())
    };
    let suffix = Path::new(&rest)
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/");
    Source { name, path, suffix }
}

/// `reference` resolved against `base`, a URL with a path (`a/../b.ts` against
/// `http://h/src/x.js` is `http://h/b.ts`; `/b.ts` is `http://h/b.ts`).
pub(crate) fn join_url(base: &str, reference: &str) -> String {
    let base = base.split(['?', '#']).next().unwrap_or(base);
    let Some((scheme, rest)) = base.split_once("://") else { return reference.to_string() };
    let (host, path) = rest.find('/').map_or((rest, "/"), |at| rest.split_at(at));
    let joined = match reference.strip_prefix('/') {
        Some(absolute) => absolute.to_string(),
        None => format!("{}{reference}", &path[1..path.rfind('/').map_or(0, |at| at + 1)]),
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    format!("{scheme}://{host}/{}", parts.join("/"))
}

/// Resolves `.` and `..` without touching the disk.
/// `sourcesContent[index]` of a map's JSON text, counting the sources of an index map's
/// sections in order as [`SourceMap::sources`] does. Parses the whole text: only for the rare
/// source that is not on disk.
pub(crate) fn source_content(json: &str, index: usize) -> Option<String> {
    let map: serde_json::Value = serde_json::from_str(json).ok()?;
    let parts: Vec<&serde_json::Value> = match map["sections"].as_array() {
        Some(sections) => sections.iter().map(|s| &s["map"]).collect(),
        None => vec![&map],
    };
    let mut index = index;
    for part in parts {
        let count = part["sources"].as_array().map_or(0, Vec::len);
        if index < count {
            return part["sourcesContent"].get(index)?.as_str().map(String::from);
        }
        index -= count;
    }
    None
}

pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

pub(crate) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = (bytes[i] == b'%')
            .then(|| text.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match hex {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The JSON text of a `data:` URL (`data:application/json;base64,...` or percent-encoded).
pub(crate) fn data_url_text(url: &str) -> Result<String, String> {
    let rest = url.strip_prefix("data:").ok_or("not a data: URL")?;
    let (meta, data) = rest.split_once(',').ok_or("a data: URL needs a comma")?;
    if meta.split(';').any(|p| p == "base64") {
        let bytes = base64_decode(data)?;
        String::from_utf8(bytes).map_err(|_| "the inline source map is not UTF-8".to_string())
    } else {
        Ok(percent_decode(data))
    }
}

fn base64_decode(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for &byte in text.as_bytes() {
        let value = match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => break,
            b' ' | b'\n' | b'\r' | b'\t' => continue,
            _ => return Err(format!("`{}` is not Base64", char::from(byte))),
        };
        buffer = (buffer << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_vlq() {
        let check = |text: &str, expected: &[i64]| {
            let mut out = [0; 5];
            let n = decode_vlq(text.as_bytes(), &mut out).unwrap();
            assert_eq!(&out[..n], expected, "{text}");
        };
        check("A", &[0]);
        check("C", &[1]);
        check("D", &[-1]);
        check("gB", &[16]);
        check("hB", &[-16]);
        check("AAAA", &[0, 0, 0, 0]);
        check("SAAQ", &[9, 0, 0, 8]);
        check("2HAAA", &[123, 0, 0, 0]);
        check("+/////D", &[i64::from(i32::MAX)]);
        let mut out = [0; 5];
        assert_eq!(decode_vlq(b"g", &mut out), Err("the last number is cut off"));
        assert_eq!(decode_vlq(b"A!", &mut out), Err("not a Base64 character"));
        assert_eq!(decode_vlq(b"AAAAAA", &mut out), Err("more than 5 fields"));
    }

    #[test]
    fn decodes_base64_and_data_urls() {
        assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode("aGVsbG8").unwrap(), b"hello");
        assert_eq!(
            data_url_text("data:application/json;charset=utf-8;base64,eyJhIjoxfQ==").unwrap(),
            r#"{"a":1}"#
        );
        assert_eq!(data_url_text("data:application/json,%7B%22a%22%3A1%7D").unwrap(), r#"{"a":1}"#);
    }

    #[test]
    fn resolves_sources() {
        let base = Path::new("/p/dist");
        let check = |root: &str, source: &str, path: Option<&str>, suffix: &str| {
            let s = resolve_source(Base::Dir(base), root, source);
            assert_eq!(s.path.as_deref(), path.map(Path::new), "{root} {source}");
            assert_eq!(s.suffix, suffix, "{root} {source}");
        };
        check("", "../src/app.ts", Some("/p/src/app.ts"), "src/app.ts");
        check("../src/", "app.ts", Some("/p/src/app.ts"), "src/app.ts");
        check("../src", "app.ts", Some("/p/src/app.ts"), "src/app.ts");
        check("", "/abs/a.ts", Some("/abs/a.ts"), "abs/a.ts");
        check("", "file:///abs/my%20app.ts", Some("/abs/my app.ts"), "abs/my app.ts");
        check("", "webpack://shop/./src/app.ts", None, "src/app.ts");
        check("", "webpack:///src/app.ts", None, "src/app.ts");
        check("webpack://", "shop/./src/app.ts", None, "src/app.ts");
        check("", "webpack://app/./src/a.js?3ac8", None, "src/a.js");
        let at_url =
            |source: &str| resolve_source(Base::Url("http://h:1/src/a.js?v=2"), "", source);
        let s = at_url("main.ts");
        assert_eq!(
            (s.name.as_str(), s.path.as_deref(), s.suffix.as_str()),
            ("http://h:1/src/main.ts", None, "src/main.ts")
        );
        assert_eq!(at_url("../lib/./b.ts").name, "http://h:1/lib/b.ts");
        assert_eq!(at_url("/c.ts").name, "http://h:1/c.ts");
        assert_eq!(at_url("webpack://app/./src/d.ts").suffix, "src/d.ts");
    }

    /// A tiny map by hand: `a.js` line 0 = `a.ts` line 2 (cols 0 and 4), line 1 unmapped at
    /// col 0 then `b.ts` line 0 col 0 at col 10.
    fn small() -> SourceMap {
        let text = r#"{"version":3,"sources":["a.ts","b.ts"],"names":[],
                      "mappings":"AAEA,IAAI;A,UCFJ"}"#;
        SourceMap::parse(text, Some(Path::new("/p"))).unwrap()
    }

    #[test]
    fn looks_up_both_ways() {
        let map = small();
        let p = |line, column| Position { line, column };
        assert_eq!(map.original_for(p(0, 0)), Some((0, p(2, 0))));
        assert_eq!(map.original_for(p(0, 3)), Some((0, p(2, 0))));
        assert_eq!(map.original_for(p(0, 99)), Some((0, p(2, 4))));
        assert_eq!(map.original_for(p(1, 5)), None, "unmapped segment");
        assert_eq!(map.original_for(p(1, 10)), Some((1, p(0, 0))));
        assert_eq!(map.original_for(p(2, 0)), None, "no line");
        assert_eq!(map.generated_for(0, 2), Some((2, vec![p(0, 0), p(0, 4)])));
        assert_eq!(map.generated_for(0, 0), Some((2, vec![p(0, 0), p(0, 4)])), "moves forward");
        assert_eq!(map.generated_for(0, 3), None, "past the last mapped line");
        assert_eq!(map.generated_for(1, 0), Some((0, vec![p(1, 10)])));
        assert_eq!(map.find_source(Path::new("/p/a.ts")), Some(0));
        assert_eq!(map.find_source(Path::new("/p/./x/../b.ts")), Some(1));
        assert_eq!(map.find_source(Path::new("/p/c.ts")), None);
    }

    #[test]
    fn index_maps_shift_their_sections() {
        let text = r#"{"version":3,"sections":[
            {"offset":{"line":0,"column":0},"map":{"version":3,"sources":["a.ts"],"mappings":"AAAA"}},
            {"offset":{"line":1,"column":5},"map":{"version":3,"sources":["b.ts"],"mappings":"AAAA;AACA"}}]}"#;
        let map = SourceMap::parse(text, None).unwrap();
        let p = |line, column| Position { line, column };
        assert_eq!(map.original_for(p(1, 5)), Some((1, p(0, 0))));
        assert_eq!(map.original_for(p(1, 4)), None);
        assert_eq!(map.original_for(p(2, 0)), Some((1, p(1, 0))));
        assert_eq!(map.generated_for(1, 1), Some((1, vec![p(2, 0)])));
    }

    #[test]
    fn rejects_broken_maps() {
        let check = |text: &str, expected: &str| {
            let error = SourceMap::parse(text, None).unwrap_err();
            assert!(error.starts_with(expected), "{text}: {error}");
        };
        check("{", "not a source map");
        check(r#"{"version":2,"mappings":""}"#, "unsupported source map version");
        check(r#"{"version":3,"sources":["a"],"mappings":"AAAA,C!"}"#, "bad mapping `C!`");
        check(
            r#"{"version":3,"sources":["a"],"mappings":"ACAA"}"#,
            "a mapping names source 1, but the map has 1",
        );
        check(r#"{"version":3,"sources":["a"],"mappings":"AA"}"#, "a mapping segment has 2 fields");
    }
}

/// The decoder against the answers of the `source-map` npm package for the fixtures' maps
/// (see fixtures/sourcemaps/README.md).
#[cfg(test)]
mod reference {
    use super::*;

    #[test]
    fn source_content_counts_sources_across_sections() {
        let regular =
            r#"{"version":3,"sources":["a.ts","b.ts"],"sourcesContent":["A",null],"mappings":""}"#;
        assert_eq!(source_content(regular, 0).as_deref(), Some("A"));
        assert_eq!(source_content(regular, 1), None);
        assert_eq!(source_content(regular, 2), None);
        let index = r#"{"version":3,"sections":[
            {"offset":{"line":0,"column":0},"map":{"version":3,"sources":["x.ts"],"mappings":""}},
            {"offset":{"line":9,"column":0},"map":{"version":3,"sources":["y.ts","z.ts"],
             "sourcesContent":["Y","Z"],"mappings":""}}]}"#;
        assert_eq!(source_content(index, 0), None);
        assert_eq!(source_content(index, 2).as_deref(), Some("Z"));
        assert_eq!(source_content("not json", 0), None);
    }

    #[test]
    fn matches_the_source_map_package() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sourcemaps");
        let mut checked = 0;
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().ends_with(".expected.json"))
            .collect();
        names.sort();
        assert_eq!(names.len(), 8, "expected tables in {}", dir.display());
        for expected_path in names {
            let name = expected_path.to_string_lossy().replace(".expected.json", "");
            let map =
                SourceMap::parse(&std::fs::read_to_string(format!("{name}.map")).unwrap(), None)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
            let expected: Value =
                serde_json::from_str(&std::fs::read_to_string(&expected_path).unwrap()).unwrap();
            assert_eq!(map.sources().len() as u64, expected["sources"].as_u64().unwrap(), "{name}");
            let n = |v: &Value| v.as_u64().map(|n| n as u32);
            for row in expected["original"].as_array().unwrap() {
                let generated = Position { line: n(&row[0]).unwrap(), column: n(&row[1]).unwrap() };
                let want = n(&row[2]).map(|source| {
                    (
                        source as usize,
                        Position { line: n(&row[3]).unwrap(), column: n(&row[4]).unwrap() },
                    )
                });
                assert_eq!(map.original_for(generated), want, "{name}: original of {generated:?}");
                checked += 1;
            }
            for row in expected["generated"].as_array().unwrap() {
                let (source, line) = (n(&row[0]).unwrap() as usize, n(&row[1]).unwrap());
                let mut want: Vec<Position> = row[2]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| Position { line: n(&p[0]).unwrap(), column: n(&p[1]).unwrap() })
                    .collect();
                let mut got = map.generated_for(source, line).map(|(_, p)| p).unwrap_or_default();
                want.sort();
                got.sort();
                assert_eq!(got, want, "{name}: generated of source {source} line {line}");
                checked += 1;
            }
        }
        assert!(checked > 4000, "only {checked} lookups checked");
    }
}
