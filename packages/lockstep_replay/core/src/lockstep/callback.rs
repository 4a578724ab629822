//! An unmodified node's recorded callbacks as the replay reproduces them: what starts each one
//! ([`NodeCallback`], from the node's event log), what the replay delivers for it ([`GrantEvent`]) and what
//! it sends ([`EventOutput`]).

/// The event kinds (`lockstep_interfaces/msg/NodeEvent`): TAKE, PUBLISH, TIMER, REQUEST_TAKEN, RESPONSE_SENT,
/// REQUEST_SENT, RESPONSE_TAKEN, CLOCK.
pub mod kind {
    pub use lockstep_bag::traced::kind::*;
}

/// One callback of an unmodified node to reproduce: what started it, and what it read from its clocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeCallback {
    /// TAKE, TIMER, REQUEST_TAKEN or RESPONSE_TAKEN ([`kind`]).
    pub kind: u8,
    /// The topic or service; empty for a timer.
    pub name: String,
    /// The node's ROS time when it started.
    pub ros_time_ns: i64,
    /// TIMER: the timer's number in the process; services: the request's sequence number.
    pub sequence_number: i64,
    /// What it took (0 for a timer).
    pub payload_digest: u64,
    /// The ROS times it read from its clocks, in order.
    pub clock_reads_ns: Vec<i64>,
    /// A take of a recorded module's output: that output (channel, epoch, sequence number).
    pub producer: Option<(String, u64, u32)>,
    /// Where the event that started it is in the node's event log (its index in the epoch of the frame's
    /// header): the outputs of one callback are one step.
    pub index: u64,
}

impl NodeCallback {
    /// How a report names it: "the take of /raw at 12.345678901 s", "timer 0 at 12.345678901 s".
    pub fn describe(&self) -> String {
        let at = format!(
            "{}.{:09} s",
            self.ros_time_ns.div_euclid(1_000_000_000),
            self.ros_time_ns.rem_euclid(1_000_000_000)
        );
        match self.kind {
            kind::TIMER => format!("timer {} at {at}", self.sequence_number),
            kind::REQUEST_TAKEN => format!("the request to {} at {at}", self.name),
            kind::RESPONSE_TAKEN => format!("the response of {} at {at}", self.name),
            _ => format!("the take of {} at {at}", self.name),
        }
    }
}

/// One event an unmodified node is to reproduce, with what it delivers.
#[derive(Debug, Clone, Copy)]
pub struct GrantEvent<'a> {
    /// TAKE, TIMER, REQUEST_TAKEN or RESPONSE_TAKEN (`event_kind`).
    pub kind: u8,
    /// The topic or service; empty for a timer.
    pub name: &'a str,
    /// The node's ROS time when it happened.
    pub ros_time_ns: i64,
    /// TIMER: the timer's number in the process; services: the request's sequence number.
    pub sequence_number: i64,
    /// The message, request or response to deliver (CDR); empty for a timer.
    pub data: &'a [u8],
    /// The ROS times its callback read from its clocks when recorded, in order.
    pub clock_reads_ns: &'a [i64],
}

/// What a reproduced callback sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventOutput {
    /// PUBLISH, RESPONSE_SENT or REQUEST_SENT (`event_kind`).
    pub kind: u8,
    /// The topic or service.
    pub name: String,
    /// The message (CDR).
    pub data: Vec<u8>,
}
