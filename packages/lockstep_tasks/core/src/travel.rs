//! Travel over a station map's lanes: one direction of a lane as the route search sees it ([`Edge`]), what a
//! route costs ([`Cost`]), and why a route cannot be planned ([`RouteError`]). The map builds its lane graph
//! of edges; the route search (`routes.rs`) adds them up.

/// Why a route cannot be planned.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RouteError {
    #[error("`{name}` is not a station of {map} (it has: {known})")]
    UnknownStation {
        name: String,
        map: String,
        known: String,
    },
    #[error("no route from {from} to {to} on {map}: {reason}")]
    Unreachable {
        from: String,
        to: String,
        map: String,
        reason: String,
    },
}

/// One direction of a lane, as the planner sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Edge {
    pub(crate) length_m: f64,
    pub(crate) speed_limit_mps: f64,
    pub(crate) time_s: f64,
    /// The time in whole nanoseconds: sums of these are exact, so equally fast routes tie exactly.
    pub(crate) nanos: u64,
}

/// What a route costs: its time, then its number of lanes (fewer wins a tie).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Cost {
    nanos: u64,
    lanes: u32,
}

impl std::ops::Add for Cost {
    type Output = Cost;
    fn add(self, other: Cost) -> Cost {
        Cost {
            nanos: self.nanos.saturating_add(other.nanos),
            lanes: self.lanes.saturating_add(other.lanes),
        }
    }
}

impl Edge {
    pub(crate) fn new(length_m: f64, speed_limit_mps: f64) -> Self {
        let time_s = length_m / speed_limit_mps;
        Edge {
            length_m,
            speed_limit_mps,
            time_s,
            // Saturates (at 584 years): no lane is that slow in a real map.
            nanos: (time_s * 1e9).round() as u64,
        }
    }

    pub(crate) fn cost(&self) -> Cost {
        Cost {
            nanos: self.nanos,
            lanes: 1,
        }
    }
}
