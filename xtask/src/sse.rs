//! Server-Sent Events read as the HTML standard's event stream parser reads them (`field:
//! value`, the space after the colon dropped, a line starting with a colon a comment, a blank
//! line ending a block): the one reader of the tasks and benchmarks that listen to
//! `/calls/live`.

use std::io::{self, BufRead};
use std::time::Duration;

/// One block of a stream: its lines up to a blank one.
#[derive(Debug, PartialEq, Eq)]
pub enum Block {
    /// An event: its name (`message` without an `event:` line), its `data:` lines joined by
    /// line breaks, and the stream's last id (this event's, or an earlier one's).
    Event {
        name: String,
        data: String,
        id: Option<String>,
    },
    /// A block without data: a `retry:` alone, a comment (the heartbeat).
    Other,
}

/// A stream read block by block, with the last `retry:` and `id:` it gave.
pub struct EventSource<R> {
    body: R,
    line: Vec<u8>,
    pub retry: Option<Duration>,
    pub last_id: Option<String>,
}

impl<R: BufRead> EventSource<R> {
    pub const fn new(body: R) -> Self {
        Self {
            body,
            line: Vec::new(),
            retry: None,
            last_id: None,
        }
    }

    /// The next block; `None` once the body ends (a block cut off by the end included).
    pub fn next_block(&mut self) -> io::Result<Option<Block>> {
        let (mut name, mut data, mut id) = (None, None::<String>, None);
        let mut in_block = false;
        loop {
            self.line.clear();
            if self.body.read_until(b'\n', &mut self.line)? == 0 {
                return Ok(None);
            }
            let text = String::from_utf8_lossy(&self.line);
            let line = text.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if in_block {
                    break;
                }
                continue;
            }
            in_block = true;
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => name = Some(value.to_owned()),
                "data" => match &mut data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(value);
                    }
                    None => data = Some(value.to_owned()),
                },
                "id" if !value.contains('\0') => id = Some(value.to_owned()),
                "retry" => {
                    if let Ok(millis) = value.parse() {
                        self.retry = Some(Duration::from_millis(millis));
                    }
                }
                _ => {}
            }
        }
        if id.is_some() {
            self.last_id = id;
        }
        Ok(Some(match data {
            Some(data) => Block::Event {
                name: name.unwrap_or_else(|| "message".to_owned()),
                data,
                id: self.last_id.clone(),
            },
            None => Block::Other,
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;

    fn event(name: &str, data: &str, id: Option<&str>) -> Option<Block> {
        Some(Block::Event {
            name: name.to_owned(),
            data: data.to_owned(),
            id: id.map(str::to_owned),
        })
    }

    #[test]
    fn an_event_source_reads_the_blocks_of_a_live_stream() {
        let stream = "retry: 5000\n\nevent: live\nid: 17\ndata: {\"totals\":{}}\n\n\
                      id:18\ndata: a\nevent:live\ndata:b\n\n: keep-alive\n\n\
                      event: unavailable\nid: 19\ndata: {}\n\nevent: live\ndata: x\n\n";
        let mut source = EventSource::new(Cursor::new(stream));
        assert_eq!(source.next_block().unwrap(), Some(Block::Other));
        assert_eq!(source.retry, Some(Duration::from_secs(5)));
        assert_eq!(
            source.next_block().unwrap(),
            event("live", "{\"totals\":{}}", Some("17"))
        );
        // The fields in any order, the space after the colon optional, data on several lines.
        assert_eq!(
            source.next_block().unwrap(),
            event("live", "a\nb", Some("18"))
        );
        // A heartbeat changes nothing; another event changes the last id.
        assert_eq!(source.next_block().unwrap(), Some(Block::Other));
        assert_eq!(
            source.next_block().unwrap(),
            event("unavailable", "{}", Some("19"))
        );
        assert_eq!(source.last_id.as_deref(), Some("19"));
        assert_eq!(source.retry, Some(Duration::from_secs(5)));
        // An event without an id of its own keeps the last one.
        assert_eq!(source.next_block().unwrap(), event("live", "x", Some("19")));
        assert_eq!(source.next_block().unwrap(), None);
    }

    #[test]
    fn events_are_read_with_their_name_and_data_and_comments_skipped() {
        let body = "retry: 5000\n\nid: 7\nevent: live\ndata: {\"as_of\":\"x\"}\n\n\
                    : keep-alive\n\ndata: a\r\ndata: b\r\n\r\nevent: cut";
        let mut source = EventSource::new(Cursor::new(body));
        assert_eq!(source.next_block().unwrap(), Some(Block::Other));
        assert_eq!(
            source.next_block().unwrap(),
            event("live", "{\"as_of\":\"x\"}", Some("7"))
        );
        assert_eq!(source.next_block().unwrap(), Some(Block::Other));
        assert_eq!(
            source.next_block().unwrap(),
            event("message", "a\nb", Some("7"))
        );
        assert_eq!(source.next_block().unwrap(), None);
    }
}
