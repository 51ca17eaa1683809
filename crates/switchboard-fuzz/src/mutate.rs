//! A small deterministic mutator: byte flips, interesting values, insertions, deletions,
//! duplications, splices with other corpus entries and dictionary words, stacked.

/// xorshift64*: fast, deterministic, good enough to pick mutations.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed (0 is replaced: xorshift needs a non-zero state).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// True one time in `n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }
}

/// Largest input the mutator makes.
pub const MAX_INPUT: usize = 64 * 1024;

const INTERESTING: &[u8] = &[
    0, 1, 0x7f, 0x80, 0xff, b'\n', b'\r', b' ', b'"', b'\\', b'{', b'}', b'[', b']', b':', b',',
    b'$', b'=', b'?', 0xc3, 0xe2, 0xef, 0xbb, 0xbf,
];

/// Where the mutator takes material from.
#[derive(Debug, Clone, Copy)]
pub struct Sources<'a> {
    /// The corpus, for splicing.
    pub corpus: &'a [Vec<u8>],
    /// Words to insert.
    pub dictionary: &'a [&'a [u8]],
}

/// A new input made from `base` by one to eight stacked mutations.
pub fn mutate(base: &[u8], sources: Sources<'_>, rng: &mut Rng) -> Vec<u8> {
    let mut data = base.to_vec();
    let rounds = 1 + rng.below(8);
    for _ in 0..rounds {
        mutate_once(&mut data, sources, rng);
    }
    data.truncate(MAX_INPUT);
    data
}

fn mutate_once(data: &mut Vec<u8>, sources: Sources<'_>, rng: &mut Rng) {
    let len = data.len();
    match rng.below(10) {
        0 if len > 0 => {
            let at = rng.below(len);
            data[at] ^= 1 << rng.below(8);
        }
        1 if len > 0 => {
            let at = rng.below(len);
            data[at] = INTERESTING[rng.below(INTERESTING.len())];
        }
        2 if len > 0 => {
            let at = rng.below(len);
            data[at] = rng.next_u64() as u8;
        }
        3 => {
            let at = rng.below(len + 1);
            let count = 1 + rng.below(16);
            let bytes: Vec<u8> = (0..count).map(|_| rng.next_u64() as u8).collect();
            data.splice(at..at, bytes);
        }
        4 if len > 0 => {
            let at = rng.below(len);
            let count = 1 + rng.below((len - at).min(64));
            data.drain(at..at + count);
        }
        5 if len > 0 => {
            // Duplicate a range somewhere (repeats, long lines, nesting).
            let from = rng.below(len);
            let count = 1 + rng.below((len - from).min(256));
            let piece = data[from..from + count].to_vec();
            let times = if rng.one_in(8) { 1 + rng.below(64) } else { 1 };
            let at = rng.below(len + 1);
            for _ in 0..times {
                data.splice(at..at, piece.iter().copied());
            }
        }
        6 | 7 if !sources.dictionary.is_empty() => {
            let word = sources.dictionary[rng.below(sources.dictionary.len())];
            let at = rng.below(len + 1);
            if rng.one_in(2) || len == 0 {
                data.splice(at..at, word.iter().copied());
            } else {
                let end = (at + word.len()).min(len);
                data.splice(at..end, word.iter().copied());
            }
        }
        8 if !sources.corpus.is_empty() => {
            // Splice: our head with another entry's tail.
            let other = &sources.corpus[rng.below(sources.corpus.len())];
            let cut = rng.below(len + 1);
            let other_cut = rng.below(other.len() + 1);
            data.truncate(cut);
            data.extend_from_slice(&other[other_cut..]);
        }
        _ if len > 1 => {
            // Swap two bytes (moves separators across chunk and cap boundaries).
            let a = rng.below(len);
            let b = rng.below(len);
            data.swap(a, b);
        }
        _ => data.push(rng.next_u64() as u8),
    }
}
