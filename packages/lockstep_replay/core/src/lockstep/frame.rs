//! One recorded computation ([`Frame`]): the unit the replay orders, plans and steps.

use lockstep_trace::TraceHeader;

use super::callback::NodeCallback;

/// One recorded computation: a module's output header.
#[derive(Debug, Clone)]
pub struct Frame {
    /// The header as recorded.
    pub header: TraceHeader,
    /// When the recorder logged the header.
    pub header_log_time_ns: u64,
    /// An output of an unmodified node (its recording holds its event log): the callbacks to reproduce for
    /// it, those that published nothing since the node's previous replayed output first, the one that
    /// published it last (empty: the log does not show it published by a callback). `None` for a module.
    pub events: Option<Vec<NodeCallback>>,
}

impl Frame {
    /// (channel, epoch, sequence): what names this output everywhere.
    pub fn id(&self) -> (String, u64, u32) {
        (
            self.header.channel_name.clone(),
            self.header.epoch,
            self.header.sequence_num,
        )
    }
}
