//! The manager's topic inputs (goals of `execute_task`, `task_facts`, the actuators' states, the robots'
//! batteries) and its step
//! ticks, each handed to the manager's loop.

use std::time::Duration;

use futures::{future, Stream, StreamExt as _};
use lockstep_tasks::manager::energy::BatteryView;
use r2r::lockstep_interfaces::action::ExecuteTask;
use r2r::lockstep_interfaces::msg::ActuatorState;
use r2r::sensor_msgs::msg::BatteryState;
use r2r::std_msgs::msg::String as StringMsg;
use tokio::sync::mpsc;

use crate::inputs::Input;
use lockstep_tasks_node::action_server::ActionServerGoalRequest;

/// Every topic input becomes an input of the manager's loop: goals, facts, actuator states, and the ticks
/// that step the schedulers every `step_period`.
pub async fn forward_topics(
    goals: impl Stream<Item = ActionServerGoalRequest<ExecuteTask::Action>> + Unpin,
    facts: impl Stream<Item = StringMsg> + Unpin,
    states: Vec<Box<dyn Stream<Item = ActuatorState> + Unpin>>,
    batteries: Vec<Box<dyn Stream<Item = (String, BatteryState)> + Unpin>>,
    tx: mpsc::UnboundedSender<Input>,
    step_period: Duration,
) {
    let send = |input| {
        let _ = tx.send(input);
        future::ready(())
    };
    let ticker = async {
        let mut interval = tokio::time::interval(step_period);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            interval.tick().await;
            if tx.send(Input::Tick).is_err() {
                return;
            }
        }
    };
    tokio::join!(
        goals.for_each(|request| send(Input::Goal(request))),
        facts.for_each(|msg| send(Input::Facts(msg.data))),
        futures::stream::select_all(states).for_each(|msg| send(Input::ActuatorState {
            server: msg.server,
            busy: msg.busy,
            remaining_s: msg.busy_remaining_s,
        })),
        futures::stream::select_all(batteries).for_each(|(robot, msg)| send(Input::Battery {
            robot,
            battery: battery_view(&msg),
        })),
        ticker
    );
}

/// A battery's charge and capacity in Wh: BatteryState gives them in Ah at its voltage (the design capacity
/// when the capacity is unknown, NaN).
fn battery_view(msg: &BatteryState) -> BatteryView {
    let volts = f64::from(msg.voltage);
    let capacity_ah = if msg.capacity.is_finite() && msg.capacity > 0.0 {
        msg.capacity
    } else {
        msg.design_capacity
    };
    BatteryView {
        charge_wh: f64::from(msg.charge) * volts,
        capacity_wh: f64::from(capacity_ah) * volts,
    }
}
