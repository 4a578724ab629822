//! Building the ROS messages from the simulator's state. Every stamp is simulated time.

use lockstep_ros::time::secs_to_time;
use lockstep_sim::{grid_cells, BatteryReading, Pose2D, Rgba, Simulator, Supply, OBSTACLE_COLOR};
use r2r::geometry_msgs::msg::{
    Point, Pose, PoseStamped, PoseWithCovariance, PoseWithCovarianceStamped, Quaternion, Twist, TwistStamped,
    TwistWithCovariance, Vector3,
};
use r2r::nav_msgs::msg::Odometry;
use r2r::rosgraph_msgs::msg::Clock;
use r2r::sensor_msgs::msg::{BatteryState, JointState, Range};
use r2r::std_msgs::msg::{ColorRGBA, Header};
use r2r::visualization_msgs::msg::{Marker, MarkerArray};

use crate::config::Statics;

fn header(secs: f64, frame: &str) -> Header {
    Header {
        stamp: secs_to_time(secs),
        frame_id: frame.to_owned(),
    }
}

fn quaternion(yaw: f64) -> Quaternion {
    Quaternion {
        x: 0.0,
        y: 0.0,
        z: (0.5 * yaw).sin(),
        w: (0.5 * yaw).cos(),
    }
}

fn pose_msg(p: &Pose2D, z: f64) -> Pose {
    Pose {
        position: Point {
            x: p.x_m,
            y: p.y_m,
            z,
        },
        orientation: quaternion(p.yaw_rad),
    }
}

fn vector(x: f64, y: f64, z: f64) -> Vector3 {
    Vector3 { x, y, z }
}

fn diag_covariance(xy: f64, yaw: f64) -> Vec<f64> {
    let mut c = vec![0.0; 36];
    c[0] = xy;
    c[7] = xy;
    c[14] = 1e-6;
    c[21] = 1e-6;
    c[28] = 1e-6;
    c[35] = yaw;
    c
}

fn color([r, g, b, a]: Rgba) -> ColorRGBA {
    ColorRGBA { r, g, b, a }
}

/// The true pose in the map frame.
pub fn ground_truth(sim: &Simulator, st: &Statics) -> PoseStamped {
    PoseStamped {
        header: header(sim.time_secs(), &st.p.map_frame),
        pose: pose_msg(&sim.pose(), 0.0),
    }
}

/// The battery as sensor_msgs/BatteryState: charge and capacity in Ah at the nominal voltage, the current
/// negative while it drains; what is not simulated (temperature, cells) is NaN or empty, as the message asks.
pub fn battery_state(sim: &Simulator, reading: &BatteryReading, st: &Statics) -> BatteryState {
    let b = &st.p.battery;
    let volts = b.voltage_v;
    let status = match reading.supply {
        Supply::Charging => BatteryState::POWER_SUPPLY_STATUS_CHARGING as u8,
        Supply::Discharging => BatteryState::POWER_SUPPLY_STATUS_DISCHARGING as u8,
        Supply::Full => BatteryState::POWER_SUPPLY_STATUS_FULL as u8,
    };
    BatteryState {
        header: header(sim.time_secs(), &st.p.base_frame),
        voltage: volts as f32,
        temperature: f32::NAN,
        current: (reading.power_w / volts) as f32,
        charge: (reading.charge_wh / volts) as f32,
        capacity: (b.capacity_wh / volts) as f32,
        design_capacity: (b.capacity_wh / volts) as f32,
        percentage: reading.fraction as f32,
        power_supply_status: status,
        power_supply_health: BatteryState::POWER_SUPPLY_HEALTH_GOOD as u8,
        power_supply_technology: BatteryState::POWER_SUPPLY_TECHNOLOGY_UNKNOWN as u8,
        present: true,
        ..BatteryState::default()
    }
}

/// Odometry (nominal parameters), odom -> base_link.
pub fn odometry(sim: &Simulator, st: &Statics) -> Odometry {
    let odom = sim.odometry();
    Odometry {
        header: header(sim.time_secs(), &st.p.odom_frame),
        child_frame_id: st.p.base_frame.clone(),
        pose: PoseWithCovariance {
            pose: pose_msg(&odom.pose, 0.0),
            covariance: diag_covariance(1e-3, 1e-3),
        },
        twist: TwistWithCovariance {
            twist: Twist {
                linear: vector(odom.v_mps, 0.0, 0.0),
                angular: vector(0.0, 0.0, odom.w_radps),
            },
            covariance: diag_covariance(1e-3, 1e-3),
        },
    }
}

/// Odometry in the map frame: the start pose composed with the odometry pose, i.e. where dead reckoning
/// from the known start puts the vehicle. rviz draws it beside `ground_truth` with no TF (topic `odom_map`).
pub fn odometry_in_map(sim: &Simulator, st: &Statics) -> Odometry {
    let mut msg = odometry(sim, st);
    let start = sim.start_pose();
    let odom = sim.odometry().pose;
    let pose = start.compose(&odom);
    msg.header.frame_id = st.p.map_frame.clone();
    msg.pose.pose = pose_msg(&pose, 0.0);
    msg
}

/// The front and rear range sensors (`scan_front`, `scan_rear`: the example pipeline's inputs), as REP 117
/// readings: the free distance beyond the footprint, `+inf` when nothing is within the sensor range.
pub fn ranges(sim: &Simulator, st: &Statics) -> (Range, Range) {
    let (front, rear) = sim.front_rear_ranges();
    let max_range = sim.sensor_range_m();
    let reading = |distance: f64| Range {
        header: header(sim.time_secs(), &st.p.base_frame),
        radiation_type: Range::ULTRASOUND as u8,
        field_of_view: 0.5,
        min_range: 0.0,
        max_range: max_range as f32,
        range: if distance >= max_range {
            f32::INFINITY
        } else {
            distance as f32
        },
        variance: 0.0,
    };
    (reading(front), reading(rear))
}

/// The wheel encoders.
pub fn joint_states(sim: &Simulator, st: &Statics) -> JointState {
    let wheels = sim.wheels();
    JointState {
        header: header(sim.time_secs(), &st.p.base_frame),
        name: vec![st.p.left_wheel_joint.clone(), st.p.right_wheel_joint.clone()],
        position: vec![wheels.left_position_rad, wheels.right_position_rad],
        velocity: vec![wheels.left_velocity_radps, wheels.right_velocity_radps],
        effort: vec![],
    }
}

/// The command the last step decided, stamped with the simulated time it was issued (before the delay).
pub fn issued_command(sim: &Simulator, st: &Statics) -> TwistStamped {
    let (t, v, w) = sim.issued_command();
    TwistStamped {
        header: header(t, &st.p.base_frame),
        twist: Twist {
            linear: vector(v, 0.0, 0.0),
            angular: vector(0.0, 0.0, w),
        },
    }
}

/// The simulated time.
pub fn clock(sim: &Simulator) -> Clock {
    Clock {
        clock: secs_to_time(sim.time_secs()),
    }
}

/// The latest SLAM sample, if there is one.
pub fn slam_pose(sim: &Simulator, st: &Statics) -> Option<PoseWithCovarianceStamped> {
    let sample = sim.slam()?;
    Some(PoseWithCovarianceStamped {
        header: header(sample.time_secs, &st.p.map_frame),
        pose: PoseWithCovariance {
            pose: pose_msg(&sample.pose, 0.0),
            covariance: diag_covariance(
                st.p.slam_sigma_xy_m * st.p.slam_sigma_xy_m,
                st.p.slam_sigma_yaw_rad * st.p.slam_sigma_yaw_rad,
            ),
        },
    })
}

/// The behaviour state.
pub fn state(sim: &Simulator) -> r2r::std_msgs::msg::String {
    r2r::std_msgs::msg::String {
        data: sim.state().to_owned(),
    }
}

/// The cells coloured by surface (floor) and the obstacles (walls): two cube lists.
pub fn grid_markers(sim: &Simulator, st: &Statics) -> MarkerArray {
    let cs = sim.scene().cell_size_m();
    let mut floor = Marker {
        header: header(0.0, &st.p.map_frame),
        ns: "grid".into(),
        id: 0,
        type_: Marker::CUBE_LIST as i32,
        action: Marker::ADD as i32,
        pose: pose_msg(&Pose2D::default(), 0.0),
        scale: vector(cs, cs, 0.02),
        color: color([1.0; 4]),
        ..Default::default()
    };
    let mut walls = Marker {
        ns: "obstacles".into(),
        id: 1,
        scale: vector(cs, cs, 0.5),
        color: color(OBSTACLE_COLOR),
        ..floor.clone()
    };
    for cell in grid_cells(sim.scene(), sim.surfaces()) {
        let (marker, z) = if cell.obstacle {
            (&mut walls, 0.25)
        } else {
            (&mut floor, -0.01)
        };
        marker.points.push(Point {
            x: cell.x_m,
            y: cell.y_m,
            z,
        });
        marker.colors.push(color(cell.color));
    }
    MarkerArray {
        markers: vec![floor, walls],
    }
}

/// The vehicle (arrow), its path (line strip, bounded by `path_max_points`), the destination and the state.
pub fn vehicle_markers(sim: &Simulator, st: &Statics) -> MarkerArray {
    let pose = sim.pose();
    let base = Marker {
        header: header(sim.time_secs(), &st.p.map_frame),
        action: Marker::ADD as i32,
        pose: pose_msg(&Pose2D::default(), 0.0),
        color: color([1.0; 4]),
        ..Default::default()
    };
    let d = 2.0 * st.p.vehicle_radius_m;
    let vehicle = Marker {
        ns: "vehicle".into(),
        id: 0,
        type_: Marker::ARROW as i32,
        pose: pose_msg(&pose, 0.1),
        scale: vector(d, 0.5 * d, 0.5 * d),
        color: color([0.95, 0.4, 0.1, 1.0]),
        ..base.clone()
    };
    let path = Marker {
        ns: "path".into(),
        id: 0,
        type_: Marker::LINE_STRIP as i32,
        scale: vector(0.05, 0.0, 0.0),
        color: color([0.1, 0.3, 0.95, 1.0]),
        points: sim
            .path()
            .iter()
            .map(|&(_, x, y)| Point { x, y, z: 0.05 })
            .collect(),
        ..base.clone()
    };
    let mut markers = vec![vehicle, path];
    if let Some(dest) = sim.destination() {
        let (x, y) = sim.scene().cell_center(dest);
        let cs = sim.scene().cell_size_m();
        markers.push(Marker {
            ns: "destination".into(),
            id: 0,
            type_: Marker::CUBE as i32,
            pose: Pose {
                position: Point { x, y, z: 0.05 },
                orientation: quaternion(0.0),
            },
            scale: vector(cs * 0.8, cs * 0.8, 0.1),
            color: color([0.1, 0.9, 0.2, 0.6]),
            ..base.clone()
        });
    }
    let above = Pose2D { yaw_rad: 0.0, ..pose };
    markers.push(Marker {
        ns: "state".into(),
        id: 0,
        type_: Marker::TEXT_VIEW_FACING as i32,
        pose: pose_msg(&above, 0.8),
        scale: vector(0.0, 0.0, 0.4),
        text: sim.state().to_owned(),
        ..base
    });
    MarkerArray { markers }
}
