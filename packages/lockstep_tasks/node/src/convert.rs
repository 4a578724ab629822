//! The state machine's plain messages as ROS messages.

use lockstep_tasks::manager as m;
use r2r::lockstep_interfaces::action::ExecuteTask;
use std::time::Duration;

use lockstep_tasks::manager::{EventKind, Listing};
use r2r::lockstep_interfaces::msg::{ActuatorState, RobotInfo, TaskEvent, TaskInfo};
use r2r::lockstep_interfaces::srv::ListTasks;

pub fn feedback(f: m::Feedback) -> ExecuteTask::Feedback {
    ExecuteTask::Feedback {
        task_id: f.task_id,
        state: f.state,
        level_names: f.level_names,
        level_total: f.level_total,
        level_completed: f.level_completed,
        level_running: f.level_running,
        running_paths: f.running_paths,
        robot: f.robot,
    }
}

pub fn result(r: m::TaskResult) -> ExecuteTask::Result {
    ExecuteTask::Result {
        success: r.success,
        outcome: r.outcome,
        summary: r.summary,
        failed_path: r.failed_path,
        reason: r.reason,
        task_id: r.task_id,
        leaves_executed: r.leaves_executed,
        group_reports: r.group_reports,
        robot: r.robot,
    }
}

pub fn task_info(t: m::TaskInfo) -> TaskInfo {
    TaskInfo {
        task_id: t.task_id,
        task_type: t.task_type,
        priority: t.priority,
        state: t.state,
        leaves_total: t.leaves_total,
        leaves_completed: t.leaves_completed,
        running_paths: t.running_paths,
        robot: t.robot,
        last_completed_leaf: t.last_completed_leaf,
    }
}

/// A robot is the namespace it is named after.
pub fn robot_info(r: m::RobotInfo) -> RobotInfo {
    RobotInfo {
        robot_namespace: r.name.clone(),
        name: r.name,
        station: r.station,
        state: r.state,
        running_task: r.running_task,
        queued_tasks: r.queued_tasks,
    }
}

/// ListTasks' answer; each actuator state is stamped with when it was heard.
pub fn list_response(listing: Listing, clock: &std::sync::Mutex<r2r::Clock>) -> ListTasks::Response {
    let now = lockstep_ros::time::clock_now(clock);
    let actuators = (listing.actuators.into_iter())
        .map(|a| {
            let received = now.and_then(|now| now.checked_sub(Duration::from_secs_f64(a.age_s)));
            ActuatorState {
                stamp: received
                    .map(|d| r2r::Clock::to_builtin_time(&d))
                    .unwrap_or_default(),
                server: a.server,
                busy: a.remaining_s > 0.0,
                busy_remaining_s: a.remaining_s,
            }
        })
        .collect();
    ListTasks::Response {
        tasks: listing
            .tasks
            .into_iter()
            .map(task_info)
            .collect::<Vec<TaskInfo>>(),
        actuators,
        robots: listing
            .robots
            .into_iter()
            .map(robot_info)
            .collect::<Vec<RobotInfo>>(),
    }
}

/// A `task_events` message.
pub fn task_event(
    e: lockstep_tasks::manager::TaskEvent,
    stamp: r2r::builtin_interfaces::msg::Time,
) -> TaskEvent {
    let kind = match e.kind {
        EventKind::Status => TaskEvent::STATUS as u8,
        EventKind::GroupCompleted => TaskEvent::GROUP_COMPLETED as u8,
        EventKind::Interrupted => TaskEvent::INTERRUPTED as u8,
        EventKind::Finished => TaskEvent::FINISHED as u8,
        EventKind::Restored => TaskEvent::RESTORED as u8,
        EventKind::Retry => TaskEvent::RETRY as u8,
        EventKind::TimedOut => TaskEvent::TIMED_OUT as u8,
        EventKind::Fallback => TaskEvent::FALLBACK as u8,
        EventKind::Waiting => TaskEvent::WAITING as u8,
    };
    TaskEvent {
        stamp,
        task_id: e.task_id,
        robot: e.robot,
        kind,
        path: e.path,
        level: e.level,
        old_status: e.old_status,
        new_status: e.new_status,
        reason: e.reason,
    }
}
