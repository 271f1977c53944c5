//! What lldb reads before a program runs: rustc's formatters for a Rust program, and no
//! separate debug information when the program carries its own.
//!
//! lldb looks for the separate debug information of every shared library a program loads
//! (`/usr/lib/debug/.build-id/…`, where Debian's `libc6-dbg` keeps libc's 4 MB of DWARF) and
//! reads what it finds before the first stop: a C program's `launch` to its first breakpoint
//! took 318-368 ms with `libc6-dbg` installed, 80-92 ms with `symbols.enable-external-lookup`
//! off (lldb-dap 19, `fixtures/native/c/loop.c`). The program's frames need none of it when its
//! own DWARF is in the binary (frames in libc then show no source lines, and stepping passes
//! over them); a program whose DWARF is elsewhere (stripped, with a `.gnu_debuglink`) keeps
//! the lookup.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::values::rust_formatters;

/// The `initCommands` lldb-dap starts with for `program` (`rust`: a Rust program's).
pub(super) fn init_commands(program: &Path, rust: bool) -> Vec<String> {
    let mut commands = if rust { rust_formatters() } else { Vec::new() };
    if has_own_dwarf(program) {
        commands.push("settings set symbols.enable-external-lookup false".into());
    }
    commands
}

/// Whether an ELF file (64-bit, little-endian) has a `.debug_info` section of its own
/// (`.zdebug_info` compressed), read from its section headers only.
fn has_own_dwarf(path: &Path) -> bool {
    section_names(path).is_some_and(|names| {
        names.iter().any(|name| name == b".debug_info" || name == b".zdebug_info")
    })
}

fn section_names(path: &Path) -> Option<Vec<Vec<u8>>> {
    let mut file = File::open(path).ok()?;
    let mut header = [0u8; 64];
    file.read_exact(&mut header).ok()?;
    // ELF, 64-bit, little-endian.
    if &header[..4] != b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        return None;
    }
    let u16_at = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]) as u64;
    let u32_at =
        |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]));
    let u64_at =
        |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]));
    let (table, size, count, names) = (
        u64_at(&header, 0x28),
        u16_at(&header, 0x3a),
        u16_at(&header, 0x3c),
        u16_at(&header, 0x3e),
    );
    if size < 64 || count == 0 || count > 65_535 || names >= count {
        return None;
    }
    let mut sections = vec![0u8; (size * count) as usize];
    file.seek(SeekFrom::Start(table)).ok()?;
    file.read_exact(&mut sections).ok()?;
    let section = |i: u64| &sections[(i * size) as usize..((i + 1) * size) as usize];
    let strings = section(names);
    let (offset, length) = (u64_at(strings, 0x18), u64_at(strings, 0x20));
    if length > 16 << 20 {
        return None;
    }
    let mut text = vec![0u8; length as usize];
    file.seek(SeekFrom::Start(offset)).ok()?;
    file.read_exact(&mut text).ok()?;
    let name_of = |i: u64| {
        let start = u32_at(section(i), 0) as usize;
        let rest = text.get(start..)?;
        Some(rest[..rest.iter().position(|&b| b == 0)?].to_vec())
    };
    Some((0..count).filter_map(name_of).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_whether_a_program_has_its_own_dwarf() {
        // This test binary is built with debug information; /bin/sh is stripped (Debian).
        let me = std::env::current_exe().unwrap();
        assert!(has_own_dwarf(&me));
        let names = section_names(&me).unwrap();
        assert!(names.iter().any(|n| n == b".text"), "{:?}", names.len());
        assert!(!has_own_dwarf(Path::new("/bin/sh")));
        assert!(!has_own_dwarf(Path::new("/nonexistent")));
        assert!(!has_own_dwarf(Path::new(file!())), "not ELF");
    }
}
