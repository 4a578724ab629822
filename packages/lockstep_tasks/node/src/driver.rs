//! The manager's loop: each ROS input becomes an event for the state machine ([`lockstep_tasks::manager`]),
//! and each command it returns becomes an r2r call. Only what cannot be plain data lives here: goal handles,
//! reply channels, clients, the clock.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use lockstep_tasks::manager::{Command, Event, Level, Manager, RequestId};
use lockstep_tasks::{Id, Outcome};
use r2r::lockstep_interfaces::action::ExecuteTask;
use r2r::lockstep_interfaces::msg::TaskEvent;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::actuators::LeafEvent;
use crate::convert;
use crate::inputs::{Input, Pending, Reload};
use crate::loaded::Loaded;
use lockstep_tasks_node::action_server::ActionServerGoal;

/// `/task_events`, stamped with the node's clock (simulated time under `use_sim_time`).
pub struct Events {
    pub publisher: r2r::Publisher<TaskEvent>,
    pub clock: std::sync::Arc<std::sync::Mutex<r2r::Clock>>,
    /// `fleet_markers`: the live fleet view, published when it changed.
    pub markers: r2r::Publisher<r2r::visualization_msgs::msg::MarkerArray>,
    pub last_view: Option<lockstep_tasks::manager::view::FleetView>,
}

pub struct Driver {
    pub manager: Manager<Loaded>,
    pub events: Events,
    pub tx: mpsc::UnboundedSender<Input>,
    pub logger: String,
    pub server_wait: Duration,
    /// Reloads the configuration (the node's part: file, clients).
    pub reload: Reload,
    pub state_file: Option<PathBuf>,
    /// The steady clock the state machine's times are read on.
    pub epoch: Instant,
    /// What waits for an answer: goal requests, service replies, accepted actuator goals.
    pending: Pending,
    /// Each task's ExecuteTask goal.
    goals: BTreeMap<String, ActionServerGoal<ExecuteTask::Action>>,
}

impl Driver {
    pub fn new(
        manager: Manager<Loaded>,
        events: Events,
        tx: mpsc::UnboundedSender<Input>,
        logger: String,
    ) -> Self {
        Self {
            manager,
            events,
            tx,
            logger,
            server_wait: Duration::from_secs(5),
            reload: Box::new(|| Err("no reload".into())),
            state_file: None,
            epoch: Instant::now(),
            pending: Pending::default(),
            goals: BTreeMap::new(),
        }
    }

    /// Handle the inputs at hand: each as an event of the state machine, then every command they gave, in
    /// order, with the state file written once for all of them before anything else. A burst of goals
    /// (hundreds at once) is then one state file write, not one per goal, each with every task queued so far.
    pub fn handle_all(&mut self, inputs: impl IntoIterator<Item = Input>) {
        let mut commands = Vec::new();
        for input in inputs {
            let event = self.pending.event(input, &mut self.reload);
            let now = self.epoch.elapsed().as_secs_f64();
            commands.extend(self.manager.handle(now, event));
        }
        self.carry_out(commands);
    }

    /// Hand `event` to the state machine and carry out what it says (and what that leads to).
    pub fn run(&mut self, event: Event<Loaded>) {
        let now = self.epoch.elapsed().as_secs_f64();
        let commands = self.manager.handle(now, event);
        self.carry_out(commands);
    }

    /// Carry out `commands`, then the events they lead to. Of the state file writes only the last is made
    /// (it holds what every earlier one did), and first: whoever sees an answer, a goal or an event of these
    /// and then kills the node finds at least that much in the state file after the restart.
    fn carry_out(&mut self, mut commands: Vec<Command<Loaded>>) {
        let mut queue = VecDeque::new();
        loop {
            let journal = |c: &Command<Loaded>| matches!(c, Command::WriteJournal(_));
            if let Some(last) = commands.iter().rposition(journal) {
                let state = commands.remove(last);
                commands.retain(|c| !journal(c));
                commands.insert(0, state);
            }
            for command in commands {
                if let Some(next) = self.command(command) {
                    queue.push_back(next);
                }
            }
            let Some(event) = queue.pop_front() else {
                self.publish_view();
                return;
            };
            let now = self.epoch.elapsed().as_secs_f64();
            commands = self.manager.handle(now, event);
        }
    }

    /// The fleet view on `fleet_markers`, if it changed (a manager without a map has none).
    fn publish_view(&mut self) {
        let view = self.manager.fleet_view();
        if view.is_none() || view == self.events.last_view {
            return;
        }
        if let Some(view) = &view {
            let stamp = lockstep_ros::time::clock_stamp(&self.events.clock);
            if let Err(e) = self
                .events
                .markers
                .publish(&crate::markers::fleet_markers(view, stamp))
            {
                r2r::log_warn!(&self.logger, "could not publish on fleet_markers: {e}");
            }
        }
        self.events.last_view = view;
    }

    fn command(&mut self, command: Command<Loaded>) -> Option<Event<Loaded>> {
        match command {
            Command::Log(level, text) => match level {
                Level::Info => r2r::log_info!(&self.logger, "{text}"),
                Level::Warn => r2r::log_warn!(&self.logger, "{text}"),
                Level::Error => r2r::log_error!(&self.logger, "{text}"),
            },
            Command::AcceptGoal { request, task } => return self.accept(request, task),
            Command::RejectGoal { request } => {
                let goal = self.pending.goal_requests.remove(&request)?;
                let uuid = goal.uuid.to_string();
                if let Err(e) = goal.reject() {
                    r2r::log_warn!(&self.logger, "could not answer goal {uuid} (rejected): {e}");
                }
            }
            Command::SendGoal {
                task,
                leaf,
                generation,
                robot,
                actuator,
                goal,
                setup,
            } => self.send_goal((task, leaf, generation), &setup, (&robot, &actuator), goal),
            Command::CancelGoal { task, generation } => {
                if let Some(handle) = self.pending.handles.remove(&(task, generation)) {
                    handle.cancel();
                }
            }
            Command::PauseGoal {
                task,
                leaf,
                robot,
                actuator,
                resume,
                setup,
            } => self.pause_goal(task, leaf, &setup, (&robot, &actuator), resume),
            Command::AskResult {
                task,
                path,
                robot,
                actuator,
                goal_id,
                setup,
            } => self.ask_result(task, path, &setup, (&robot, &actuator), goal_id),
            Command::Publish(event) => {
                let stamp = lockstep_ros::time::clock_stamp(&self.events.clock);
                let _ = self.events.publisher.publish(&convert::task_event(event, stamp));
            }
            Command::Feedback(feedback) => {
                if let Some(goal) = self.goals.get(&feedback.task_id) {
                    let _ = goal.publish_feedback(convert::feedback(feedback));
                }
            }
            Command::Finish {
                task,
                outcome,
                result,
            } => self.finish(&task, outcome, convert::result(result)),
            Command::Reply { request, answer } => {
                let _ = self.pending.replies.remove(&request)?.send(answer);
            }
            Command::Listed { request, listing } => {
                let response = convert::list_response(listing, &self.events.clock);
                let _ = self.pending.lists.remove(&request)?.send(response);
            }
            Command::WriteJournal(state) => {
                let path = self.state_file.as_ref()?;
                if let Err(e) = lockstep_tasks::journal::write(path, &state) {
                    r2r::log_error!(&self.logger, "{e}");
                }
            }
        }
        None
    }

    /// End a task's ExecuteTask goal as its outcome says.
    fn finish(&mut self, task: &str, outcome: Outcome, result: ExecuteTask::Result) {
        let Some(mut goal) = self.goals.remove(task) else {
            return;
        };
        let _ = match outcome {
            Outcome::Completed => goal.succeed(result),
            Outcome::Cancelled => goal.cancel(result),
            Outcome::Failed { .. } => goal.abort(result),
        };
    }

    /// Accept an ExecuteTask goal as `task`; its cancel requests come back as [`Input::Cancel`]. A goal that
    /// cannot be answered is dropped unstarted (the client may send it again).
    fn accept(&mut self, request: RequestId, task: String) -> Option<Event<Loaded>> {
        let (goal, mut cancels) = match self.pending.goal_requests.remove(&request)?.accept() {
            Ok(accepted) => accepted,
            Err(e) => {
                r2r::log_error!(
                    &self.logger,
                    "could not answer goal {task} ({e}); dropped unstarted: the client may send it again"
                );
                return Some(Event::GoalLost { task });
            }
        };
        let tx = self.tx.clone();
        let cancel_id = task.clone();
        tokio::spawn(async move {
            while let Some(request) = cancels.next().await {
                request.accept();
                if tx.send(Input::Cancel(cancel_id.clone())).is_err() {
                    return;
                }
            }
        });
        self.goals.insert(task, goal);
        None
    }

    /// Send a leaf's goal through `setup`'s client; what becomes of it comes back as [`Input::Leaf`].
    fn send_goal(
        &self,
        (task, leaf, generation): (String, Id, u64),
        setup: &Loaded,
        to: (&str, &str),
        goal: Value,
    ) {
        let tx = self.tx.clone();
        let report = Box::new(move |event| {
            let task = task.clone();
            let _ = tx.send(Input::Leaf {
                task,
                leaf,
                generation,
                event,
            });
        });
        match (setup.clients.get(to.0)).and_then(|c| c.get(to.1)) {
            Some(client) => client.send(goal, self.server_wait, report),
            None => report(LeafEvent::Refused(format!(
                "actuator `{}` is not configured",
                to.1
            ))),
        }
    }

    /// Pause or resume a pausable actuator's goal; a failure comes back as [`Input::PauseFailed`].
    fn pause_goal(
        &self,
        task: String,
        leaf: Id,
        setup: &Loaded,
        (robot, actuator): (&str, &str),
        resume: bool,
    ) {
        let Some(pauser) = (setup.pausers.get(robot)).and_then(|p| p.get(actuator)) else {
            return;
        };
        let tx = self.tx.clone();
        let failed: Box<dyn FnOnce(String) + Send> = Box::new(move |reason| {
            let _ = tx.send(Input::PauseFailed { task, leaf, reason });
        });
        if resume {
            pauser.resume(self.server_wait, failed);
        } else {
            pauser.pause(self.server_wait, failed);
        }
    }

    /// Ask an actuator how a goal of the manager's earlier life ended; the answer comes back as
    /// [`Input::Recovered`].
    fn ask_result(
        &self,
        task: String,
        path: String,
        setup: &Loaded,
        (robot, actuator): (&str, &str),
        id: [u8; 16],
    ) {
        let tx = self.tx.clone();
        let report = Box::new(move |event| {
            let (outcome, reason) = match event {
                LeafEvent::Done { success, message } => (Some(success), message),
                LeafEvent::Refused(reason) => (None, reason),
                _ => return,
            };
            let _ = tx.send(Input::Recovered {
                task: task.clone(),
                path: path.clone(),
                outcome,
                reason,
            });
        });
        match (setup.clients.get(robot)).and_then(|c| c.get(actuator)) {
            Some(client) => client.result_of(id, self.server_wait, report),
            None => report(LeafEvent::Refused(format!(
                "actuator `{actuator}` is not configured"
            ))),
        }
    }
}
