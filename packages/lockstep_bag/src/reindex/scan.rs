//! The first pass over one MCAP file: which schemas, channels and messages it holds and how far it
//! reads cleanly. Both the report and the rewrite work from it.

use super::report::ReindexedFile;
use super::salvage;
use crate::metadata::union_range;
use crate::Result;
use mcap::records::{Channel, Record};
use std::collections::BTreeMap;
use std::path::Path;

/// What a first scan of one file found.
#[derive(Default)]
pub(crate) struct FileScan {
    pub(super) schemas: BTreeMap<u16, (String, String, Vec<u8>)>,
    pub(super) channels: BTreeMap<u16, Channel>,
    /// Per channel id: messages, first and last log time.
    pub(super) per_channel: BTreeMap<u16, (u64, u64, u64)>,
    /// Messages on known channels (the ones a rewrite keeps).
    pub(super) messages: u64,
    pub(super) range: Option<(u64, u64)>,
    pub(super) without_channel: u64,
    pub(super) outcome: salvage::ScanOutcome,
}

impl FileScan {
    pub(super) fn of(path: &Path) -> Result<Self> {
        let mut scan = FileScan::default();
        if !salvage::check_magic(path)? {
            return Ok(scan);
        }
        scan.outcome = salvage::scan(path, |record| {
            match record {
                Record::Schema { header, data } => {
                    scan.schemas.entry(header.id).or_insert((
                        header.name,
                        header.encoding,
                        data.into_owned(),
                    ));
                }
                Record::Channel(c) => {
                    scan.channels.entry(c.id).or_insert(c);
                }
                Record::Message { header, .. } => {
                    let t = header.log_time;
                    let e = scan.per_channel.entry(header.channel_id).or_insert((0, t, t));
                    *e = (e.0 + 1, e.1.min(t), e.2.max(t));
                }
                _ => {}
            }
            Ok(())
        })?;
        for (id, &(n, first, last)) in &scan.per_channel {
            if scan.channels.contains_key(id) {
                scan.messages += n;
                scan.range = union_range(scan.range, first, last);
            } else {
                scan.without_channel += n;
            }
        }
        Ok(scan)
    }

    pub(super) fn report(&self, path: &Path, output: &Path) -> ReindexedFile {
        let o = &self.outcome;
        ReindexedFile {
            path: path.to_path_buf(),
            output: output.to_path_buf(),
            was_complete: o.complete,
            messages: self.messages,
            chunks: o.chunks,
            skipped: o.skipped.clone(),
            bytes_dropped: o.skipped.iter().chain(&o.tail).map(|s| s.length).sum(),
            stop_reason: o.tail.as_ref().map(|t| t.reason.clone()),
            messages_without_channel: self.without_channel,
        }
    }
}
