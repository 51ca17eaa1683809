//! Reading a fuzz input: a few leading bytes choose sizes and chunkings, the rest is text.

/// A fuzz input being taken apart from the front.
pub(crate) struct Input<'a> {
    bytes: &'a [u8],
}

impl<'a> Input<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Input<'a> {
        Input { bytes }
    }

    /// The next byte, or 0 when the input is used up.
    pub(crate) fn byte(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((first, rest)) => {
                self.bytes = rest;
                *first
            }
            None => 0,
        }
    }

    /// A size in `1..=max`, from two bytes.
    pub(crate) fn size(&mut self, max: usize) -> usize {
        let raw = usize::from(self.byte()) << 8 | usize::from(self.byte());
        1 + raw % max
    }

    /// Up to `n` bytes that describe a chunking (see [`chunks`]).
    pub(crate) fn pattern(&mut self, n: usize) -> &'a [u8] {
        let (pattern, rest) = self.bytes.split_at(n.min(self.bytes.len()));
        self.bytes = rest;
        pattern
    }

    /// Whatever is left.
    pub(crate) fn rest(self) -> &'a [u8] {
        self.bytes
    }
}

/// Splits `stream` into chunks whose sizes cycle through `pattern` (a 0 in the pattern is a
/// one-byte chunk, so every split point can be reached); no pattern means one chunk.
pub(crate) fn chunks<'a>(stream: &'a [u8], pattern: &[u8]) -> Vec<&'a [u8]> {
    if pattern.is_empty() {
        return vec![stream];
    }
    let mut out = Vec::new();
    let mut rest = stream;
    let mut sizes = pattern.iter().cycle();
    while !rest.is_empty() {
        let size = sizes.next().map_or(1, |s| usize::from(*s).max(1));
        let (chunk, tail) = rest.split_at(size.min(rest.len()));
        out.push(chunk);
        rest = tail;
    }
    out
}
