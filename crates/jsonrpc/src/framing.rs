//! Newline-delimited framing with a hard size cap, for stdio in both directions.
//!
//! The reader never holds more than `max` bytes of one frame: past the cap it keeps reading to the next newline,
//! discarding, and reports an `Oversized` frame with a short head and tail, so the caller can answer with an error
//! (and, for an upstream's response, find the request id) instead of buffering without limit or hanging.

#[cfg(feature = "io")]
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// How many bytes of an oversized frame's start and end are kept for diagnosis and id recovery.
#[cfg(feature = "io")]
const KEEP_EDGE: usize = 512;

/// One unit read from a newline-delimited stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete line without its newline (and without a trailing `\r`).
    Line(Vec<u8>),
    /// A line longer than the cap; only its edges were kept.
    Oversized {
        len: usize,
        head: Vec<u8>,
        tail: Vec<u8>,
    },
}

/// Reads frames from an async byte stream.
#[cfg(feature = "io")]
pub struct FrameReader<R> {
    inner: R,
    max: usize,
}

#[cfg(feature = "io")]
impl<R: AsyncBufRead + Unpin> FrameReader<R> {
    pub fn new(inner: R, max_frame_bytes: usize) -> Self {
        Self {
            inner,
            max: max_frame_bytes,
        }
    }

    /// The next non-blank frame, or `None` at end of stream. A final line without a newline still counts.
    pub async fn next(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            match self.read_one().await? {
                None => return Ok(None),
                Some(Frame::Line(l)) if l.iter().all(u8::is_ascii_whitespace) => continue,
                Some(f) => return Ok(Some(f)),
            }
        }
    }

    async fn read_one(&mut self) -> std::io::Result<Option<Frame>> {
        let mut line = Vec::new();
        let mut len = 0usize;
        let mut tail: Vec<u8> = Vec::new();
        let mut saw_any = false;
        loop {
            let buf = self.inner.fill_buf().await?;
            if buf.is_empty() {
                if !saw_any {
                    return Ok(None);
                }
                break;
            }
            saw_any = true;
            let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[..i], true),
                None => (buf, false),
            };
            len += chunk.len();
            let room = self.max.saturating_sub(line.len());
            let (fits, rest) = chunk.split_at(room.min(chunk.len()));
            line.extend_from_slice(fits);
            if !rest.is_empty() {
                tail.extend_from_slice(rest);
                if tail.len() > KEEP_EDGE {
                    tail.drain(..tail.len() - KEEP_EDGE);
                }
            }
            let used = chunk.len() + usize::from(done);
            self.inner.consume(used);
            if done {
                break;
            }
        }
        if len > self.max {
            line.truncate(KEEP_EDGE);
            return Ok(Some(Frame::Oversized {
                len,
                head: line,
                tail,
            }));
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Ok(Some(Frame::Line(line)))
    }
}

/// Serialises `value` as one line (with its newline), or refuses when it would exceed `max` bytes: a truncated
/// JSON line would be worse than none.
pub fn encode_line(value: &serde_json::Value, max: usize) -> Result<Vec<u8>, usize> {
    // serde_json escapes control characters, so the output never contains a raw newline.
    let mut out = serde_json::to_vec(value).map_err(|_| 0usize)?;
    if out.len() > max {
        return Err(out.len());
    }
    out.push(b'\n');
    Ok(out)
}

/// Lines gathered into one write: a writer takes the lines already queued behind the one it writes, in order,
/// up to `Gathered::MAX` bytes, so a burst costs one system call instead of one a line, and a lone line is written
/// at once. The buffer is kept between writes, except after a very long line.
#[derive(Debug, Default)]
pub struct Gathered {
    buf: Vec<u8>,
}

impl Gathered {
    /// Bytes gathered into one write at most (one line longer than this is written alone).
    pub const MAX: usize = 64 * 1024;

    /// Adds a line; true while there is room for more.
    pub fn push(&mut self, line: &[u8]) -> bool {
        self.buf.extend_from_slice(line);
        self.buf.len() < Self::MAX
    }

    /// What to write.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Empties it after a write; a very long line leaves no large buffer behind.
    pub fn clear(&mut self) {
        self.buf.clear();
        if self.buf.capacity() > 4 * Self::MAX {
            self.buf = Vec::new();
        }
    }
}

#[cfg(test)]
#[cfg(feature = "io")]
mod tests {

    #[test]
    fn gathered_lines_stop_taking_at_the_bound_and_a_long_line_leaves_no_large_buffer() {
        let mut g = Gathered::default();
        assert!(g.push(b"a\n"));
        assert!(!g.push(&vec![b'x'; Gathered::MAX]));
        assert_eq!(g.bytes().len(), Gathered::MAX + 2);
        g.clear();
        assert!(g.bytes().is_empty());
        assert!(!g.push(&vec![b'y'; 5 * Gathered::MAX]));
        g.clear();
        assert!(g.buf.capacity() <= 4 * Gathered::MAX);
    }
    use super::*;
    use pretty_assertions::assert_eq;

    async fn frames(input: &[u8], max: usize) -> Vec<Frame> {
        // A tiny buffer exercises frames that span many reads.
        let reader = tokio::io::BufReader::with_capacity(3, input);
        let mut r = FrameReader::new(reader, max);
        let mut out = Vec::new();
        while let Some(f) = r.next().await.unwrap() {
            out.push(f);
        }
        out
    }

    #[tokio::test]
    async fn splits_lines_and_skips_blank_ones() {
        let got = frames(b"{\"a\":1}\r\n\n  \n{\"b\":2}", 100).await;
        assert_eq!(
            got,
            vec![
                Frame::Line(b"{\"a\":1}".to_vec()),
                Frame::Line(b"{\"b\":2}".to_vec())
            ]
        );
    }

    #[tokio::test]
    async fn oversized_line_is_reported_and_the_next_line_survives() {
        let mut input = vec![b'x'; 5000];
        input.extend_from_slice(b"END\nok\n");
        let got = frames(&input, 100).await;
        match &got[0] {
            Frame::Oversized { len, head, tail } => {
                assert_eq!(*len, 5003);
                assert_eq!(head.len(), 100);
                assert!(tail.ends_with(b"END"));
                assert!(tail.len() <= KEEP_EDGE);
            }
            other => panic!("expected oversized, got {other:?}"),
        }
        assert_eq!(got[1], Frame::Line(b"ok".to_vec()));
    }

    #[test]
    fn encode_refuses_rather_than_truncates() {
        let v = serde_json::json!({"s": "a".repeat(100)});
        assert!(encode_line(&v, 50).is_err());
        let line = encode_line(&serde_json::json!({"s": "a\nb"}), 50).unwrap();
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
    }
}

/// Finds the id of an oversized message from the edges `FrameReader` kept, so the error can reach the caller
/// that waits for it. SDKs put the id first (Rust, Python) or last (TypeScript), so the end of the tail is
/// searched first, then the start of the head. A wrong guess fails one request early with a clear error, which
/// its timeout would do anyway.
pub fn recover_id(head: &[u8], tail: &[u8]) -> Option<crate::Id> {
    find_id(tail, true).or_else(|| find_id(head, false))
}

fn find_id(fragment: &[u8], last: bool) -> Option<crate::Id> {
    let text = String::from_utf8_lossy(fragment);
    let mut found = text.match_indices("\"id\"").filter_map(|(at, _)| {
        let value = text[at + 4..].trim_start().strip_prefix(':')?.trim_start();
        if let Some(s) = value.strip_prefix('"') {
            return s.split_once('"').map(|(s, _)| crate::Id::Str(s.to_owned()));
        }
        let digits: String = value
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '-')
            .collect();
        digits.parse().ok().map(crate::Id::Int)
    });
    if last {
        found.last()
    } else {
        found.next()
    }
}

#[cfg(test)]
mod recover_tests {
    use super::recover_id;
    use crate::Id;

    #[test]
    fn finds_ids_at_either_edge() {
        let head = br#"{"jsonrpc":"2.0","id": 42,"result":{"content":[{"id":1,"text":"xxxx"#;
        assert_eq!(recover_id(head, b"xxxx"), Some(Id::Int(42)));
        assert_eq!(
            recover_id(
                b"{\"result\":",
                br#"xx","id":3}]},"jsonrpc":"2.0","id":"s-7"}"#
            ),
            Some(Id::Str("s-7".into()))
        );
        assert_eq!(recover_id(br#"{"result":{"text":"no id here"#, b"xx"), None);
    }
}
