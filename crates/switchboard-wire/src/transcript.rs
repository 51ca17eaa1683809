//! A frame tap that records a bounded transcript of both directions.

use std::collections::VecDeque;
use std::fmt::Write;
use std::sync::Mutex;

use crate::connection::{Direction, FrameTap};

/// Keeps the last `capacity` frames in both directions, for tests and debugging.
#[derive(Debug)]
pub struct Transcript {
    frames: Mutex<VecDeque<(Direction, Vec<u8>)>>,
    capacity: usize,
}

impl Transcript {
    /// A transcript keeping at most `capacity` frames (older ones are dropped).
    pub fn new(capacity: usize) -> Transcript {
        Transcript {
            frames: Mutex::new(VecDeque::new()),
            capacity: capacity.max(1),
        }
    }

    /// The frames as lines: `→ ` for ours, `← ` for the peer's, each cut at 300 bytes.
    pub fn render(&self) -> String {
        let frames = self.frames.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = String::new();
        for (direction, bytes) in frames.iter() {
            let arrow = match direction {
                Direction::Outbound => "→",
                Direction::Inbound => "←",
            };
            let _ = writeln!(out, "{arrow} {}", crate::excerpt(bytes, 300));
        }
        out
    }
}

impl FrameTap for Transcript {
    fn frame(&self, direction: Direction, bytes: &[u8]) {
        let mut frames = self.frames.lock().unwrap_or_else(|p| p.into_inner());
        if frames.len() == self.capacity {
            frames.pop_front();
        }
        frames.push_back((direction, bytes.to_vec()));
    }
}
