//! The task manager's policy, in-process: queues by priority, preemption, busy actuators, cancel, pause and
//! resume, recovery after a failure, and restart from the state file.

#[path = "common/world.rs"]
mod world;

use lockstep_tasks::manager::{AttributeRequest, Command, Environment, Event, EventKind, GoalRequest, State};
use lockstep_tasks::Outcome;
use world::World;

#[test]
fn queued_tasks_run_by_priority_then_arrival() {
    let mut w = World::new();
    let first = w.submit("job", 10).unwrap();
    let low = w.submit("job", 1).unwrap();
    let high = w.submit("job", 5).unwrap();
    let also_high = w.submit("job", 5).unwrap();
    assert_eq!(w.busy(), [format!("{first} arm")]);
    assert_eq!(w.state(&low), State::Queued);
    for expected in [&first, &high, &also_high, &low] {
        w.run("arm", true);
        w.tick(0.1);
        w.run("nav", true);
        w.tick(0.1);
        assert_eq!(w.finished().last().map(|f| &f.0), Some(expected));
    }
    assert!(w.finished().iter().all(|(_, o)| *o == Outcome::Completed));
}

#[test]
fn a_higher_priority_task_preempts_and_the_first_resumes_after_it() {
    let mut w = World::new();
    let low = w.submit("job", 0).unwrap();
    w.accept(0);
    let high = w.submit("job", 5).unwrap();
    assert_eq!(w.state(&low), State::Preempted);
    assert!(w.out[0].cancelled, "the preempted task's goal is cancelled");
    let interrupted = (w.log.iter()).any(
        |c| matches!(c, Command::Publish(e) if e.kind == EventKind::Interrupted && e.reason == "preempted"),
    );
    assert!(interrupted);
    // The arm takes no goal until the cancelled one has ended.
    w.tick(0.1);
    assert_eq!(w.busy(), [format!("{low} arm")]);
    w.end(0, false);
    w.tick(0.1);
    assert_eq!(w.busy(), [format!("{high} arm")]);
    w.run("arm", true);
    w.tick(0.1);
    w.run("nav", true);
    w.tick(0.1);
    assert_eq!(w.state(&low), State::Running);
    assert_eq!(w.busy(), [format!("{low} arm")]);
    w.run("arm", true);
    w.tick(0.1);
    w.run("nav", true);
    assert_eq!(
        w.finished(),
        [(high, Outcome::Completed), (low, Outcome::Completed)]
    );
}

#[test]
fn a_busy_actuator_delays_the_next_action() {
    let mut w = World::new();
    w.event(Event::ActuatorState {
        server: "/arm".into(),
        busy: true,
        remaining_s: 2.0,
    });
    let task = w.submit("job", 0).unwrap();
    assert!(w.out.is_empty(), "nothing goes to a busy arm");
    w.tick(1.0);
    assert!(w.out.is_empty());
    w.tick(1.1);
    assert_eq!(w.busy(), [format!("{task} arm")]);
}

#[test]
fn a_cancel_mid_task_cancels_the_live_goal_and_ends_the_task_once() {
    let mut w = World::new();
    let task = w.submit("job", 0).unwrap();
    w.run("arm", true);
    w.tick(0.1);
    w.accept(0);
    w.event(Event::Cancel { task: task.clone() });
    assert!(w.out[0].cancelled);
    w.end(0, false);
    w.tick(0.1);
    assert_eq!(w.finished(), [(task.clone(), Outcome::Cancelled)]);
    w.event(Event::Cancel { task });
    assert_eq!(w.finished().len(), 1);
}

#[test]
fn pause_cancels_the_goal_and_resume_sends_it_again() {
    let mut w = World::new();
    let task = w.submit("job", 0).unwrap();
    w.accept(0);
    w.event(Event::Pause {
        request: 100,
        task: task.clone(),
        reason: String::new(),
    });
    assert_eq!(w.state(&task), State::Paused);
    assert!(w.out[0].cancelled);
    w.end(0, false);
    w.tick(0.1);
    assert!(w.out.is_empty(), "a paused task sends nothing");
    w.event(Event::Resume {
        request: 101,
        task: task.clone(),
    });
    let replies = w.replies();
    assert!(
        replies[0].as_ref().is_ok_and(|m| m.contains("paused")),
        "{replies:?}"
    );
    assert_eq!(replies[1], Ok(format!("{task} resumed")));
    assert_eq!(w.busy(), [format!("{task} arm")]);
    w.run("arm", true);
    w.tick(0.1);
    w.run("nav", true);
    assert_eq!(w.finished(), [(task, Outcome::Completed)]);
}

#[test]
fn a_failed_action_is_retried_as_configured() {
    let mut w = World::new();
    let task = w.submit("flaky", 0).unwrap();
    w.run("arm", false);
    let retried = (w.log.iter()).any(|c| matches!(c, Command::Publish(e) if e.kind == EventKind::Retry));
    assert!(retried);
    w.tick(0.1);
    assert_eq!(w.busy(), [format!("{task} arm")]);
    w.run("arm", true);
    assert_eq!(w.finished(), [(task, Outcome::Completed)]);
}

#[test]
fn a_restart_from_the_state_file_does_not_run_completed_actions_again() {
    let mut w = World::new();
    w.manager.journal = true;
    let task = w.submit("job", 0).unwrap();
    w.run("arm", true);
    let written = (w.log.iter()).rev().find_map(|c| match c {
        Command::WriteJournal(state) => Some(state.clone()),
        _ => None,
    });
    let saved = written.expect("the state file is written");
    assert_eq!(saved.tasks[0].completed, ["task/action[0]"]);

    let mut again = World::new();
    again.event(Event::Restore(saved));
    assert_eq!(again.state(&task), State::Restored);
    again.tick(0.1);
    assert!(again.out.is_empty(), "a restored task waits for resume_task");
    again.event(Event::Resume {
        request: 1,
        task: task.clone(),
    });
    again.tick(0.1);
    assert_eq!(
        again.busy(),
        [format!("{task} nav")],
        "the pick does not run again"
    );
    again.run("nav", true);
    let ended = (again.log.iter()).any(|c| matches!(c, Command::Publish(e) if e.kind == EventKind::Finished));
    assert!(ended, "the restored task's end is on task_events");
    assert!(again.finished().is_empty(), "no ExecuteTask client waits for it");
}

#[test]
fn the_state_file_is_written_before_anything_announces_the_change() {
    let mut w = World::new();
    w.manager.journal = true;
    w.submit("job", 0).unwrap();
    w.accept(0);
    // The arm's goal ends: the state file must show it completed before the next goal goes out or the
    // task's progress is published, so a kill right after either never restarts the arm's action.
    let before = w.log.len();
    w.end(0, true);
    let batch = &w.log[before..];
    let announced = batch[1..]
        .iter()
        .any(|c| matches!(c, Command::SendGoal { .. } | Command::Publish(_)));
    assert!(announced, "ending the arm's goal sends the next one");
    let state = match &batch[0] {
        Command::WriteJournal(state) => state,
        _ => panic!("the state file is not written first"),
    };
    assert_eq!(state.tasks[0].completed, ["task/action[0]"]);
}

#[test]
fn a_goal_that_cannot_run_is_rejected() {
    let mut w = World::new();
    assert_eq!(w.submit("nope", 0), None);
    assert!(w
        .log
        .iter()
        .any(|c| matches!(c, Command::RejectGoal { request: 1 })));
    assert!(w.manager.tasks.is_empty());
}

/// The log lines the manager gave.
fn logged(w: &World) -> Vec<String> {
    (w.log.iter())
        .filter_map(|c| match c {
            Command::Log(_, text) => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn beyond_max_unfinished_tasks_a_goal_is_rejected_as_busy() {
    let mut w = World::new();
    w.manager.max_unfinished = 2;
    let first = w.submit("job", 0).unwrap();
    w.submit("job", 0).unwrap();
    assert_eq!(w.submit("job", 0), None);
    let busy = logged(&w)
        .into_iter()
        .find(|l| l.contains("busy: 2 tasks are unfinished (at most 2)"));
    assert!(busy.is_some(), "{:?}", logged(&w));
    // Once one has ended, a new goal is taken again.
    w.run("arm", true);
    w.tick(0.1);
    w.run("nav", true);
    assert_eq!(w.finished(), [(first, Outcome::Completed)]);
    assert!(w.submit("job", 0).is_some());
}

#[test]
fn ten_megabyte_request_text_is_refused_or_clipped_in_the_log_and_the_answers() {
    let mut w = World::new();
    let task = w.submit("job", 0).unwrap();
    let big = "x".repeat(10 * 1024 * 1024);
    for (task_type, parameters_json, robot) in [
        (big.as_str(), "{}", ""),
        ("job", big.as_str(), ""),
        ("job", "{}", big.as_str()),
    ] {
        w.next_request += 1;
        let goal = GoalRequest {
            uuid: "goal".into(),
            task_type: task_type.into(),
            parameters_json: parameters_json.into(),
            robot: robot.into(),
            ..GoalRequest::default()
        };
        w.event(Event::Goal {
            request: w.next_request,
            goal,
        });
    }
    w.event(Event::Pause {
        request: 100,
        task: big.clone(),
        reason: String::new(),
    });
    w.event(Event::Pause {
        request: 101,
        task: task.clone(),
        reason: big.clone(),
    });
    let text: usize = logged(&w).iter().map(String::len).sum::<usize>()
        + w.replies()
            .iter()
            .map(|r| r.as_ref().map_or_else(String::len, String::len))
            .sum::<usize>();
    assert!(text < 4096, "{text} bytes of log and answers");
    assert_eq!(w.manager.tasks.len(), 1, "no oversized goal was taken");
    let replies = w.replies();
    assert!(
        replies[0].as_ref().is_err_and(|e| e.contains("longer than 256")),
        "{replies:?}"
    );
    assert!(replies[1].is_ok(), "the task pauses; its reason is clipped");
}

#[test]
fn a_condition_whose_evaluation_overruns_the_limit_is_refused() {
    let mut w = World::new();
    let mut env = Environment::new(vec![(
        "count.dl".into(),
        "n(0).\nn(N + 1) :- n(N), N < 500.".into(),
    )]);
    env.set_facts(String::new()).unwrap();
    env.servers = w.manager.env.servers.clone();
    env.drain_timeout_s = 1e9;
    env.max_seconds = 1e-9;
    w.manager.env = env;
    let task = w.submit("job", 0).unwrap();
    let drive = (w.manager.tasks[&task].sched.tree().nodes.iter())
        .find(|n| n.actuator.as_deref() == Some("nav"))
        .map(|n| n.path.clone())
        .unwrap();
    w.event(Event::AddAttribute {
        request: 7,
        task,
        path: drive,
        attribute: AttributeRequest {
            kind: "condition".into(),
            query: "n(500)".into(),
            ..AttributeRequest::default()
        },
    });
    let replies = w.replies();
    assert!(
        replies[0]
            .as_ref()
            .is_err_and(|e| e.contains("count.dl") && e.contains("(rules_max_seconds)")),
        "{replies:?}"
    );
}
