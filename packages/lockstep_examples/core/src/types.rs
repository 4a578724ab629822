//! The plain values the computations read and write: only the fields they use, so the computations need no
//! ROS message types (the node crate converts messages to and from these, field for field).

/// A time stamp: seconds and nanoseconds, as in `builtin_interfaces/Time`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Stamp {
    /// Whole seconds.
    pub sec: i32,
    /// Nanoseconds within the second.
    pub nanosec: u32,
}

/// A range sensor's reading (`sensor_msgs/Range`): its stamp, its limits and the measured distance.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RangeReading {
    /// When the reading was taken.
    pub stamp: Stamp,
    /// Closest distance the sensor can measure (m).
    pub min_range: f32,
    /// Farthest distance the sensor can measure (m).
    pub max_range: f32,
    /// The measured distance (m); ±inf and NaN as REP 117 defines them.
    pub range: f32,
}

/// Obstacles in the robot's base frame (`geometry_msgs/PoseArray`): each on the x axis, x forward.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Obstacles {
    /// Stamp of the obstacles.
    pub stamp: Stamp,
    /// Each obstacle's x position (m).
    pub xs: Vec<f64>,
}

/// A mission goal's position in the map frame (`geometry_msgs/PoseStamped`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Goal {
    /// x (m).
    pub x: f64,
    /// y (m).
    pub y: f64,
}

/// The robot's pose from odometry (`nav_msgs/Odometry`'s `pose.pose`): position and orientation.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OdomPose {
    /// x (m).
    pub x: f64,
    /// y (m).
    pub y: f64,
    /// The orientation quaternion, `[x, y, z, w]`.
    pub orientation: [f64; 4],
}

/// A velocity command (`geometry_msgs/Twist`): forward speed and turn rate; the other axes are zero.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Velocity {
    /// Forward speed (m/s), `linear.x`.
    pub linear_x: f64,
    /// Turn rate (rad/s), `angular.z`.
    pub angular_z: f64,
}
