//! The task manager's ROS interfaces: the `execute_task` action server, the `task_events` publisher, the
//! `task_facts` and actuator-state subscriptions, and the services.
//!
//! `task_events` is reliable and transient-local, keeping the last `events_kept` events: a subscriber that
//! joins later with transient-local durability still receives them. The RESTORED events of the tasks taken
//! back from the state file go out a few milliseconds after the start, before any subscriber can have
//! matched; volatile subscribers match as before and receive what follows their match.

use std::collections::BTreeMap;

use futures::{Stream, StreamExt as _};
use lockstep_ros::{lock, qos, SharedNode};
use lockstep_tasks::robots::Robot;
use r2r::lockstep_interfaces::action::ExecuteTask;
use r2r::lockstep_interfaces::msg::{ActuatorState, TaskEvent};
use r2r::lockstep_interfaces::srv::{AddAttribute, ListTasks, PauseTask, ResumeTask};
use r2r::sensor_msgs::msg::BatteryState;
use r2r::std_msgs::msg::String as StringMsg;
use r2r::std_srvs::srv::Trigger;
use r2r::visualization_msgs::msg::MarkerArray;

use crate::driver::Events;
use crate::services::Services;
use lockstep_tasks_node::action_server::{create_action_server, ActionServerGoalRequest};

/// The node's action server, topics and services.
pub struct Interfaces {
    pub goals: Box<dyn Stream<Item = ActionServerGoalRequest<ExecuteTask::Action>> + Unpin>,
    pub events: Events,
    pub facts: Box<dyn Stream<Item = StringMsg> + Unpin>,
    pub states: Vec<Box<dyn Stream<Item = ActuatorState> + Unpin>>,
    /// Each robot's `battery_state`, with the robot's name.
    pub batteries: Vec<Box<dyn Stream<Item = (String, BatteryState)> + Unpin>>,
    pub services: Services,
}

/// The QoS of `task_events`: reliable, transient-local, the last `kept` events.
fn events_qos(kept: i64) -> anyhow::Result<r2r::QosProfile> {
    let depth = usize::try_from(kept)
        .map_err(|_| anyhow::anyhow!("parameter 'events_kept' = {kept}: does not fit"))?;
    Ok(r2r::QosProfile::default()
        .reliable()
        .transient_local()
        .keep_last(depth))
}

/// Creates the interfaces; the actuator states come from `actuator_states` and from each robot's.
pub fn interfaces(
    node: &SharedNode,
    robots: &BTreeMap<String, Robot>,
    events_kept: i64,
) -> anyhow::Result<Interfaces> {
    let mut n = lock(node)?;
    let mut state_topics: Vec<String> = robots.values().map(|r| r.topic("actuator_states")).collect();
    state_topics.push("actuator_states".into());
    state_topics.sort();
    state_topics.dedup();
    let mut states: Vec<Box<dyn Stream<Item = ActuatorState> + Unpin>> = Vec::new();
    for topic in &state_topics {
        states.push(Box::new(n.subscribe::<ActuatorState>(topic, qos::reliable(100))?));
    }
    let mut batteries: Vec<Box<dyn Stream<Item = (String, BatteryState)> + Unpin>> = Vec::new();
    for (name, robot) in robots {
        let stream = n.subscribe::<BatteryState>(&robot.topic("battery_state"), qos::reliable(10))?;
        let name = name.clone();
        batteries.push(Box::new(stream.map(move |msg| (name.clone(), msg))));
    }
    Ok(Interfaces {
        goals: Box::new(create_action_server::<ExecuteTask::Action>(
            &mut n,
            "execute_task",
        )?),
        events: Events {
            publisher: n.create_publisher::<TaskEvent>("task_events", events_qos(events_kept)?)?,
            clock: n.get_ros_clock(),
            markers: n.create_publisher::<MarkerArray>("fleet_markers", events_qos(1)?)?,
            last_view: None,
        },
        facts: Box::new(n.subscribe::<StringMsg>("task_facts", qos::reliable(10))?),
        states,
        batteries,
        services: Services {
            list: Box::new(n.create_service::<ListTasks::Service>("list_tasks", qos::requests())?),
            pause: Box::new(n.create_service::<PauseTask::Service>("pause_task", qos::requests())?),
            resume: Box::new(n.create_service::<ResumeTask::Service>("resume_task", qos::requests())?),
            add: Box::new(n.create_service::<AddAttribute::Service>("add_attribute", qos::requests())?),
            reload: Box::new(n.create_service::<Trigger::Service>("~/reload", qos::requests())?),
        },
    })
}
