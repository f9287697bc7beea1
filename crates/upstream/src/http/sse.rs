//! A bounded parser for `text/event-stream` bodies: bytes in, events out, as the HTML living standard's
//! event-stream rules define them (lines end in CR, LF or CRLF; `data:` lines join with LF; `event:`, `id:`,
//! `retry:`; lines starting with a colon are comments and keep-alives).
//!
//! An event's data is bounded by the message limit: past it the data is no longer kept (only its first and last
//! bytes, so the request id at its edges can still be found) and the event comes out `Oversized`. A line is never
//! buffered past the limit either, so an endless line cannot grow memory. It does not know JSON-RPC.

/// Bytes kept at each edge of an oversized event, for finding its id.
const EDGE: usize = 256;

/// One complete item of an event stream.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SseItem {
    /// An event with data. `event` is empty for the default type (`message`).
    Event {
        event: String,
        data: Vec<u8>,
        id: Option<String>,
    },
    /// An event whose data went over the limit; `head` and `tail` are its edges.
    Oversized {
        len: usize,
        head: Vec<u8>,
        tail: Vec<u8>,
    },
}

/// Feeds on chunks as they arrive; keeps the last event id and reconnection delay the stream gave.
pub(crate) struct SseParser {
    max: usize,
    line: Vec<u8>,
    /// The current line went over the limit: its bytes are counted, not kept.
    line_overflow: bool,
    /// A CR ended the last line; an LF right after it belongs to that line end.
    after_cr: bool,
    event: String,
    data: Vec<u8>,
    data_len: usize,
    has_data: bool,
    tail: Vec<u8>,
    pending_id: Option<String>,
    /// The last event id the stream set (`Last-Event-ID` when resuming).
    pub(crate) last_id: Option<String>,
    /// The reconnection delay the stream asked for, in milliseconds.
    pub(crate) retry_ms: Option<u64>,
}

impl SseParser {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            max,
            line: Vec::new(),
            line_overflow: false,
            after_cr: false,
            event: String::new(),
            data: Vec::new(),
            data_len: 0,
            has_data: false,
            tail: Vec::new(),
            pending_id: None,
            last_id: None,
            retry_ms: None,
        }
    }

    /// Parses one chunk; returns the events it completed.
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Vec<SseItem> {
        let mut out = Vec::new();
        for &b in chunk {
            match b {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\r' | b'\n' => {
                    self.after_cr = b == b'\r';
                    self.end_line(&mut out);
                }
                _ => {
                    self.after_cr = false;
                    // A field name, the colon and the data of one line: data past the limit is useless anyway.
                    if self.line.len() <= self.max + 16 {
                        self.line.push(b);
                    } else {
                        self.line_overflow = true;
                        self.data_len += 1;
                        self.keep_tail(&[b]);
                    }
                }
            }
        }
        out
    }

    fn keep_tail(&mut self, bytes: &[u8]) {
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > 4 * EDGE {
            self.tail.drain(..self.tail.len() - EDGE);
        }
    }

    fn end_line(&mut self, out: &mut Vec<SseItem>) {
        let line = std::mem::take(&mut self.line);
        let overflow = std::mem::replace(&mut self.line_overflow, false);
        if line.is_empty() && !overflow {
            self.dispatch(out);
            return;
        }
        if line.first() == Some(&b':') {
            return;
        }
        let (field, value) = match line.iter().position(|&c| c == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (&line[..], &[][..]),
        };
        match field {
            b"data" => self.push_data(value, overflow),
            b"event" => self.event = String::from_utf8_lossy(value).into_owned(),
            // An id with NUL is ignored, as the standard says.
            b"id" if !value.contains(&0) => {
                self.pending_id = Some(String::from_utf8_lossy(value).into_owned())
            }
            b"retry" => {
                if let Ok(ms) = std::str::from_utf8(value).unwrap_or("").parse::<u64>() {
                    self.retry_ms = Some(ms);
                }
            }
            _ => {}
        }
    }

    fn push_data(&mut self, value: &[u8], overflow: bool) {
        if self.has_data {
            self.data_len += 1;
            if self.data.len() < self.max {
                self.data.push(b'\n');
            }
        }
        self.has_data = true;
        // Bytes counted while the line overflowed were already added to `data_len` and the tail.
        self.data_len += value.len();
        if self.data.len() + value.len() <= self.max && !overflow {
            self.data.extend_from_slice(value);
        } else {
            let room = self.max.saturating_sub(self.data.len());
            self.data.extend_from_slice(&value[..room.min(value.len())]);
            self.data_len = self.data_len.max(self.max + 1);
        }
        // An overflowing line's tail was kept as it was read.
        if !overflow {
            let edge = value.len().saturating_sub(EDGE);
            self.tail.clear();
            self.keep_tail(&value[edge..]);
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseItem>) {
        if let Some(id) = self.pending_id.take() {
            self.last_id = Some(id);
        }
        let event = std::mem::take(&mut self.event);
        let data = std::mem::take(&mut self.data);
        let len = std::mem::replace(&mut self.data_len, 0);
        let tail = std::mem::take(&mut self.tail);
        if !std::mem::replace(&mut self.has_data, false) {
            return;
        }
        if len > self.max {
            out.push(SseItem::Oversized {
                len,
                head: data[..data.len().min(EDGE)].to_vec(),
                tail: tail[tail.len().saturating_sub(EDGE)..].to_vec(),
            });
        } else {
            out.push(SseItem::Event {
                event,
                data,
                id: self.last_id.clone(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(item: &SseItem) -> &[u8] {
        match item {
            SseItem::Event { data, .. } => data,
            SseItem::Oversized { .. } => panic!("oversized"),
        }
    }

    #[test]
    fn events_split_across_chunks_and_line_endings() {
        let mut p = SseParser::new(1024);
        let mut items = p.feed(b"event: endpoint\r\ndata: /messages?s=1\r");
        items.extend(p.feed(b"\n\r\n: keep-alive\n\nid: 7\ndata: {\"a\":\ndata: 1}\n"));
        items.extend(p.feed(b"\nretry: 1500\n\n"));
        assert_eq!(items.len(), 2);
        assert!(matches!(&items[0], SseItem::Event { event, id: None, .. } if event == "endpoint"));
        assert_eq!(data(&items[0]), b"/messages?s=1");
        assert_eq!(data(&items[1]), b"{\"a\":\n1}");
        assert!(matches!(&items[1], SseItem::Event { id: Some(id), .. } if id == "7"));
        assert_eq!(p.last_id.as_deref(), Some("7"));
        assert_eq!(p.retry_ms, Some(1500));
    }

    #[test]
    fn an_event_over_the_limit_keeps_only_its_edges() {
        let mut p = SseParser::new(64);
        let body = format!(
            "data: {{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":\"{}\"}}\n\n",
            "x".repeat(10_000)
        );
        let mut items = Vec::new();
        for chunk in body.as_bytes().chunks(100) {
            items.extend(p.feed(chunk));
            assert!(
                p.line.len() <= 64 + 17,
                "a line is never kept past the limit"
            );
        }
        let [SseItem::Oversized { len, head, tail }] = &items[..] else {
            panic!("{items:?}");
        };
        assert!(*len > 10_000);
        assert_eq!(
            jsonrpc::recover_id(head, tail),
            Some(jsonrpc::Id::Int(42)),
            "the id is found at the edges"
        );
        // The stream goes on after it.
        let next = p.feed(b"data: {}\n\n");
        assert_eq!(data(&next[0]), b"{}");
    }

    #[test]
    fn many_small_data_lines_are_bounded_too() {
        let mut p = SseParser::new(100);
        let mut items = Vec::new();
        for _ in 0..1000 {
            items.extend(p.feed(b"data: 0123456789\n"));
        }
        items.extend(p.feed(b"\n"));
        assert!(p.data.is_empty());
        assert!(matches!(&items[..], [SseItem::Oversized { len, .. }] if *len > 10_000));
    }
}
