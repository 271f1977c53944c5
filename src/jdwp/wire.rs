//! JDWP's packets, written and read: big-endian numbers, strings as a length and (modified)
//! UTF-8, and ids whose sizes the VM says once (`VirtualMachine.IDSizes`).

/// The sizes of the VM's ids, in bytes (8 each on HotSpot; asked, never assumed).
#[derive(Debug, Clone, Copy)]
pub(crate) struct IdSizes {
    pub(crate) field: usize,
    pub(crate) method: usize,
    pub(crate) object: usize,
    pub(crate) reference_type: usize,
    pub(crate) frame: usize,
}

impl Default for IdSizes {
    fn default() -> IdSizes {
        IdSizes { field: 8, method: 8, object: 8, reference_type: 8, frame: 8 }
    }
}

/// An id of any kind, as the VM sent it (at most 8 bytes).
pub(crate) type Id = u64;

/// A place in the code: a class, a method of it and a bytecode index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) struct Location {
    pub(crate) tag: u8,
    pub(crate) class: Id,
    pub(crate) method: Id,
    pub(crate) index: u64,
}

impl Location {
    /// The "no location" of an exception nothing catches.
    pub(crate) fn is_none(&self) -> bool {
        self.class == 0 && self.method == 0
    }
}

/// A value as JDWP tags it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Void,
    Boolean(bool),
    Byte(i8),
    Char(u16),
    Short(i16),
    Int(i32),
    Long(i64),
    Float(f32),
    Double(f64),
    /// An object: its tag (`L`, `s` a String, `[` an array, `t` a thread, `c` a class, …)
    /// and id; id 0 is `null`.
    Object(u8, Id),
}

pub(crate) mod tag {
    pub(crate) const ARRAY: u8 = b'[';
    pub(crate) const OBJECT: u8 = b'L';
    pub(crate) const STRING: u8 = b's';
    pub(crate) const THREAD: u8 = b't';
    pub(crate) const CLASS_OBJECT: u8 = b'c';
}

impl Value {
    pub(crate) fn is_null(&self) -> bool {
        matches!(self, Value::Object(_, 0))
    }

    /// The tag JDWP writes before it.
    pub(crate) fn tag(&self) -> u8 {
        match self {
            Value::Void => b'V',
            Value::Boolean(_) => b'Z',
            Value::Byte(_) => b'B',
            Value::Char(_) => b'C',
            Value::Short(_) => b'S',
            Value::Int(_) => b'I',
            Value::Long(_) => b'J',
            Value::Float(_) => b'F',
            Value::Double(_) => b'D',
            Value::Object(tag, _) => *tag,
        }
    }
}

/// A packet's data being written.
pub(crate) struct Out<'a> {
    pub(crate) bytes: Vec<u8>,
    sizes: &'a IdSizes,
}

impl<'a> Out<'a> {
    pub(crate) fn new(sizes: &'a IdSizes) -> Out<'a> {
        Out { bytes: Vec::with_capacity(32), sizes }
    }

    pub(crate) fn u8(mut self, n: u8) -> Self {
        self.bytes.push(n);
        self
    }

    pub(crate) fn i32(mut self, n: i32) -> Self {
        self.bytes.extend_from_slice(&n.to_be_bytes());
        self
    }

    pub(crate) fn u64(mut self, n: u64) -> Self {
        self.bytes.extend_from_slice(&n.to_be_bytes());
        self
    }

    pub(crate) fn bool(self, b: bool) -> Self {
        self.u8(u8::from(b))
    }

    pub(crate) fn string(mut self, text: &str) -> Self {
        self = self.i32(text.len() as i32);
        self.bytes.extend_from_slice(text.as_bytes());
        self
    }

    fn id(mut self, id: Id, size: usize) -> Self {
        self.bytes.extend_from_slice(&id.to_be_bytes()[8 - size..]);
        self
    }

    pub(crate) fn object(self, id: Id) -> Self {
        let size = self.sizes.object;
        self.id(id, size)
    }

    pub(crate) fn class(self, id: Id) -> Self {
        let size = self.sizes.reference_type;
        self.id(id, size)
    }

    pub(crate) fn method(self, id: Id) -> Self {
        let size = self.sizes.method;
        self.id(id, size)
    }

    pub(crate) fn field(self, id: Id) -> Self {
        let size = self.sizes.field;
        self.id(id, size)
    }

    pub(crate) fn frame(self, id: Id) -> Self {
        let size = self.sizes.frame;
        self.id(id, size)
    }

    pub(crate) fn location(self, at: &Location) -> Self {
        self.u8(at.tag).class(at.class).method(at.method).u64(at.index)
    }

    /// A tagged value (an argument of a call, a value set).
    pub(crate) fn value(self, value: &Value) -> Self {
        let out = self.u8(value.tag());
        out.untagged(value)
    }

    /// A value without its tag (the type is known: a field's or a slot's).
    pub(crate) fn untagged(mut self, value: &Value) -> Self {
        match *value {
            Value::Void => self,
            Value::Boolean(b) => self.bool(b),
            Value::Byte(n) => self.u8(n as u8),
            Value::Char(c) => {
                self.bytes.extend_from_slice(&c.to_be_bytes());
                self
            }
            Value::Short(n) => {
                self.bytes.extend_from_slice(&n.to_be_bytes());
                self
            }
            Value::Int(n) => self.i32(n),
            Value::Long(n) => self.u64(n as u64),
            Value::Float(f) => self.i32(f.to_bits() as i32),
            Value::Double(f) => self.u64(f.to_bits()),
            Value::Object(_, id) => self.object(id),
        }
    }
}

/// A reply's or an event's data being read. Reading past its end gives zeros and marks it
/// short (`ok` then says so): a malformed packet is found once, where it is used.
pub(crate) struct In<'a> {
    bytes: &'a [u8],
    at: usize,
    short: bool,
    sizes: &'a IdSizes,
}

impl<'a> In<'a> {
    pub(crate) fn new(bytes: &'a [u8], sizes: &'a IdSizes) -> In<'a> {
        In { bytes, at: 0, short: false, sizes }
    }

    /// Whether every read so far was within the data.
    pub(crate) fn ok(&self) -> bool {
        !self.short
    }

    fn take(&mut self, n: usize) -> &'a [u8] {
        match self.bytes.get(self.at..self.at + n) {
            Some(taken) => {
                self.at += n;
                taken
            }
            None => {
                self.short = true;
                self.at = self.bytes.len();
                &[]
            }
        }
    }

    fn number(&mut self, n: usize) -> u64 {
        let taken = self.take(n);
        taken.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b))
    }

    pub(crate) fn u8(&mut self) -> u8 {
        self.number(1) as u8
    }

    pub(crate) fn bool(&mut self) -> bool {
        self.u8() != 0
    }

    pub(crate) fn i32(&mut self) -> i32 {
        self.number(4) as u32 as i32
    }

    /// A count: an `int` that must not be negative nor claim more than the data could hold.
    pub(crate) fn count(&mut self) -> usize {
        let n = self.i32();
        match usize::try_from(n) {
            Ok(n) if n <= self.bytes.len() - self.at => n,
            _ => {
                self.short = true;
                0
            }
        }
    }

    pub(crate) fn u64(&mut self) -> u64 {
        self.number(8)
    }

    pub(crate) fn string(&mut self) -> String {
        let n = self.count();
        decode_modified_utf8(self.take(n))
    }

    pub(crate) fn object(&mut self) -> Id {
        self.number(self.sizes.object)
    }

    pub(crate) fn class(&mut self) -> Id {
        self.number(self.sizes.reference_type)
    }

    pub(crate) fn method(&mut self) -> Id {
        self.number(self.sizes.method)
    }

    pub(crate) fn field(&mut self) -> Id {
        self.number(self.sizes.field)
    }

    pub(crate) fn frame(&mut self) -> Id {
        self.number(self.sizes.frame)
    }

    pub(crate) fn location(&mut self) -> Location {
        Location { tag: self.u8(), class: self.class(), method: self.method(), index: self.u64() }
    }

    /// A tagged value.
    pub(crate) fn value(&mut self) -> Value {
        let tag = self.u8();
        self.untagged(tag)
    }

    /// A value of a known tag.
    pub(crate) fn untagged(&mut self, tag: u8) -> Value {
        match tag {
            b'V' => Value::Void,
            b'Z' => Value::Boolean(self.bool()),
            b'B' => Value::Byte(self.u8() as i8),
            b'C' => Value::Char(self.number(2) as u16),
            b'S' => Value::Short(self.number(2) as u16 as i16),
            b'I' => Value::Int(self.i32()),
            b'J' => Value::Long(self.u64() as i64),
            b'F' => Value::Float(f32::from_bits(self.number(4) as u32)),
            b'D' => Value::Double(f64::from_bits(self.u64())),
            _ => Value::Object(tag, self.object()),
        }
    }
}

/// Java's modified UTF-8 (a NUL as two bytes, supplementary characters as two surrogates of
/// three bytes each) as a Rust string; what does not decode is replaced.
pub(crate) fn decode_modified_utf8(bytes: &[u8]) -> String {
    if let Ok(text) = std::str::from_utf8(bytes) {
        if !text.contains('\u{FFFD}') && !bytes.windows(2).any(|w| w == [0xC0, 0x80]) {
            return text.to_string();
        }
    }
    let mut units: Vec<u16> = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let (unit, len) = match b {
            0x00..=0x7F => (u16::from(b), 1),
            0xC0..=0xDF if i + 1 < bytes.len() => {
                ((u16::from(b & 0x1F) << 6) | u16::from(bytes[i + 1] & 0x3F), 2)
            }
            0xE0..=0xEF if i + 2 < bytes.len() => (
                (u16::from(b & 0x0F) << 12)
                    | (u16::from(bytes[i + 1] & 0x3F) << 6)
                    | u16::from(bytes[i + 2] & 0x3F),
                3,
            ),
            _ => (0xFFFD, 1),
        };
        units.push(unit);
        i += len;
    }
    String::from_utf16_lossy(&units)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_go_out_and_come_back() {
        let sizes = IdSizes::default();
        let values = [
            Value::Boolean(true),
            Value::Int(-5),
            Value::Long(1 << 40),
            Value::Double(2.5),
            Value::Char(0x263A),
            Value::Object(tag::STRING, 77),
        ];
        let mut out = Out::new(&sizes);
        for value in &values {
            out = out.value(value);
        }
        let bytes = out.string("é").bytes;
        let mut read = In::new(&bytes, &sizes);
        for value in &values {
            assert_eq!(&read.value(), value);
        }
        assert_eq!(read.string(), "é");
        assert!(read.ok());
        assert_eq!(read.i32(), 0);
        assert!(!read.ok(), "reading past the end is said");
    }

    #[test]
    fn ids_take_the_sizes_the_vm_said() {
        let sizes = IdSizes { object: 4, ..IdSizes::default() };
        let bytes = Out::new(&sizes).object(0x0102_0304).bytes;
        assert_eq!(bytes, [1, 2, 3, 4]);
        assert_eq!(In::new(&bytes, &sizes).object(), 0x0102_0304);
    }

    #[test]
    fn modified_utf8_reads_nul_and_surrogate_pairs() {
        // NUL as C0 80; U+1F600 as the surrogates D83D DE00, three bytes each.
        let bytes = [b'a', 0xC0, 0x80, 0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80];
        assert_eq!(decode_modified_utf8(&bytes), "a\0😀");
        // A count larger than the data is refused, not trusted.
        let sizes = IdSizes::default();
        let mut read = In::new(&[0x7F, 0xFF, 0xFF, 0xFF, b'x'], &sizes);
        assert_eq!(read.string(), "");
        assert!(!read.ok());
    }
}
