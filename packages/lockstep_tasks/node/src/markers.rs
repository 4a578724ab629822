//! The live fleet view as `visualization_msgs/MarkerArray` (topic `fleet_markers`, latched) for rviz and
//! Foxglove: per robot a sphere at the station it reached last (green going, orange waiting, red lost) with
//! its name, the route it still drives (a line), the lanes it holds (a thick line list) and the stations it
//! holds (flat cubes), in the robot's colour. Every marker of the previous view is deleted first, so robots
//! that left leave nothing behind.

use lockstep_tasks::manager::view::{FleetView, RobotMark, RobotMood};
use r2r::geometry_msgs::msg::{Point, Pose, Quaternion, Vector3};
use r2r::std_msgs::msg::{ColorRGBA, Header};
use r2r::visualization_msgs::msg::{Marker, MarkerArray};

fn color(rgba: [f32; 4]) -> ColorRGBA {
    let [r, g, b, a] = rgba;
    ColorRGBA { r, g, b, a }
}

fn point([x, y]: [f64; 2], z: f64) -> Point {
    Point { x, y, z }
}

fn at(xy: [f64; 2], z: f64) -> Pose {
    Pose {
        position: point(xy, z),
        orientation: Quaternion {
            w: 1.0,
            ..Default::default()
        },
    }
}

fn mood_color(mood: RobotMood) -> [f32; 4] {
    match mood {
        RobotMood::Going => [0.1, 0.75, 0.25, 1.0],
        RobotMood::Waiting => [1.0, 0.55, 0.0, 1.0],
        RobotMood::Lost => [0.85, 0.1, 0.1, 1.0],
    }
}

/// The markers of `view`, stamped `stamp`.
pub fn fleet_markers(view: &FleetView, stamp: r2r::builtin_interfaces::msg::Time) -> MarkerArray {
    let base = Marker {
        header: Header {
            stamp,
            frame_id: view.frame_id.clone(),
        },
        action: Marker::ADD as i32,
        pose: at([0.0, 0.0], 0.0),
        frame_locked: false,
        ..Default::default()
    };
    let mut markers = vec![Marker {
        action: Marker::DELETEALL as i32,
        ..base.clone()
    }];
    for (i, robot) in view.robots.iter().enumerate() {
        markers.extend(robot_markers(robot, i as i32, &base));
    }
    MarkerArray { markers }
}

/// One robot's markers (sphere, name, route, held lanes and stations), numbered `id` in each namespace.
fn robot_markers(robot: &RobotMark, id: i32, base: &Marker) -> Vec<Marker> {
    let mut markers = Vec::new();
    let rgba = mood_color(robot.mood);
    let faded = [rgba[0], rgba[1], rgba[2], 0.45];
    markers.push(Marker {
        ns: "robots".into(),
        id,
        type_: Marker::SPHERE as i32,
        pose: at(robot.at, 0.25),
        scale: Vector3 {
            x: 0.5,
            y: 0.5,
            z: 0.5,
        },
        color: color(rgba),
        ..base.clone()
    });
    markers.push(Marker {
        ns: "names".into(),
        id,
        type_: Marker::TEXT_VIEW_FACING as i32,
        pose: at(robot.at, 0.8),
        scale: Vector3 {
            z: 0.4,
            ..Default::default()
        },
        color: color(rgba),
        text: robot.name.clone(),
        ..base.clone()
    });
    if robot.route.len() >= 2 {
        markers.push(Marker {
            ns: "routes".into(),
            id,
            type_: Marker::LINE_STRIP as i32,
            scale: Vector3 {
                x: 0.06,
                ..Default::default()
            },
            color: color(faded),
            points: robot.route.iter().map(|p| point(*p, 0.05)).collect(),
            ..base.clone()
        });
    }
    if !robot.lanes.is_empty() {
        markers.push(Marker {
            ns: "held_lanes".into(),
            id,
            type_: Marker::LINE_LIST as i32,
            scale: Vector3 {
                x: 0.25,
                ..Default::default()
            },
            color: color(faded),
            points: (robot.lanes.iter())
                .flat_map(|(a, b)| [point(*a, 0.02), point(*b, 0.02)])
                .collect(),
            ..base.clone()
        });
    }
    if !robot.stations.is_empty() {
        markers.push(Marker {
            ns: "held_stations".into(),
            id,
            type_: Marker::CUBE_LIST as i32,
            scale: Vector3 {
                x: 0.8,
                y: 0.8,
                z: 0.04,
            },
            color: color(faded),
            points: robot.stations.iter().map(|p| point(*p, 0.02)).collect(),
            ..base.clone()
        });
    }
    markers
}
