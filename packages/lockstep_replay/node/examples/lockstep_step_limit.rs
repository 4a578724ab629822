//! The DDS limit of a lock-step step, for the replay benchmark (scripts/bench/lockstep.sh): what one step
//! costs when neither the replay nor the module does anything but DDS.
//!
//! - `lockstep_step_limit serve`: a trivial module. It serves `/lockstep_limit_module/lockstep/step`
//!   (`lockstep_interfaces/srv/Step`) and answers each request at once, after publishing its output (a
//!   `std_msgs/String` holding the frame's sequence number) on `/lockstep_limit/output`. It exits once its
//!   caller has come and gone.
//! - `lockstep_step_limit call [STEPS] [WARMUP]`: steps it STEPS times (after WARMUP steps that are not
//!   timed), each step being one service call plus the delivery of the module's output to this process's
//!   subscription, and prints the timing as one JSON line.
//! - `lockstep_step_limit call-module MODULE CHANNEL [STEPS] [WARMUP]`: the same caller stepping a real module
//!   in step mode that needs no input (the example pipeline's `mission_planner` on `/mission`), timing only
//!   the service call: what the module's own runtime adds to the limit.
//!
//! Both sides run one thread that waits on the ROS wait set and nothing else (no executor, no locks), so the
//! figure is what DDS itself takes: the bound the replay's own per-frame time is measured against.

use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use futures::{FutureExt as _, StreamExt as _};
use lockstep_ros::qos;
use r2r::lockstep_interfaces::srv::Step;
use r2r::std_msgs::msg::String as Text;

const SERVICE: &str = "/lockstep_limit_module/lockstep/step";
const OUTPUT: &str = "/lockstep_limit/output";
/// Longest wait for the other side to appear, and for one step.
const PATIENCE: Duration = Duration::from_secs(30);
const SPIN: Duration = Duration::from_millis(50);

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .take_while(|a| a != "--ros-args")
        .collect();
    let number = |i: usize, default: u32| -> anyhow::Result<u32> {
        args.get(i).map_or(Ok(default), |a| {
            a.parse()
                .with_context(|| format!("`{a}`: expected a whole number of steps"))
        })
    };
    match args.first().map(String::as_str) {
        Some("serve") => serve(),
        Some("call") => call(number(1, 2000)?, number(2, 200)?),
        Some("call-module") if args.len() >= 3 => call_module(&args[1], &args[2], number(3, 2000)?, number(4, 200)?),
        _ => bail!(
            "usage: lockstep_step_limit serve | call [STEPS] [WARMUP] | call-module MODULE CHANNEL [STEPS] [WARMUP]"
        ),
    }
}

/// The trivial module: publish the output, answer, nothing else.
fn serve() -> anyhow::Result<()> {
    let mut node = lockstep_ros::create_node("lockstep_limit_module", "")?;
    let mut requests = node
        .create_service::<Step::Service>(SERVICE, qos::reliable(10))
        .context("creating the step service")?;
    let output = node
        .create_publisher::<Text>(OUTPUT, qos::reliable(10))
        .context("creating the output publisher")?;
    let mut caller_seen = false;
    let mut last_request = Instant::now();
    loop {
        node.spin_once(SPIN);
        while let Some(Some(request)) = requests.next().now_or_never() {
            last_request = Instant::now();
            let text = Text {
                data: request.message.frame.sequence_num.to_string(),
            };
            output.publish(&text).context("publishing the output")?;
            request
                .respond(Step::Response {
                    success: true,
                    ..Step::Response::default()
                })
                .context("answering the step")?;
        }
        let readers = output.get_inter_process_subscription_count().unwrap_or(0);
        caller_seen |= readers > 0;
        if (caller_seen && readers == 0) || last_request.elapsed() > PATIENCE * 4 {
            return Ok(());
        }
    }
}

/// A real module stepped by the same caller: the service call only (the module publishes as usual).
fn call_module(module: &str, channel: &str, steps: u32, warmup: u32) -> anyhow::Result<()> {
    let service = format!("/{module}/lockstep/step");
    let mut node = lockstep_ros::create_node("lockstep_limit_replay", "")?;
    let client = node
        .create_client::<Step::Service>(&service, qos::reliable(10))
        .context("creating the step client")?;
    let mut available = Box::pin(r2r::Node::is_available(&client)?);
    let started = Instant::now();
    while (&mut available).now_or_never().is_none() {
        if started.elapsed() > PATIENCE {
            bail!("{service} did not appear within {PATIENCE:?}");
        }
        node.spin_once(SPIN);
    }
    let mut answer_us = Vec::with_capacity(steps as usize);
    for sequence in 0..steps + warmup {
        let mut request = Step::Request::default();
        request.frame.module_name = module.to_owned();
        request.frame.channel_name = channel.to_owned();
        request.frame.sequence_num = sequence;
        request.frame.epoch = 1;
        let t0 = Instant::now();
        let mut answer = Box::pin(client.request(&request).context("sending the step")?);
        loop {
            node.spin_once(SPIN);
            if let Some(response) = (&mut answer).now_or_never() {
                let response = response.context("the step call failed")?;
                if !response.success {
                    bail!("{module} refused step #{sequence}: {}", response.message);
                }
                break;
            }
            if t0.elapsed() > PATIENCE {
                bail!("step #{sequence}: no answer within {PATIENCE:?}");
            }
        }
        if sequence >= warmup {
            answer_us.push(t0.elapsed().as_secs_f64() * 1e6);
        }
    }
    let mean = answer_us.iter().sum::<f64>() / answer_us.len().max(1) as f64;
    println!(
        "{{\"steps\": {}, \"service_call_mean_us\": {mean:.1}, \"steps_per_s\": {:.1}}}",
        answer_us.len(),
        1e6 / mean
    );
    Ok(())
}

/// The replay side: one step = one service call + the output's delivery.
fn call(steps: u32, warmup: u32) -> anyhow::Result<()> {
    if steps == 0 {
        bail!("STEPS: at least one step to time");
    }
    let mut node = lockstep_ros::create_node("lockstep_limit_replay", "")?;
    let client = node
        .create_client::<Step::Service>(SERVICE, qos::reliable(10))
        .context("creating the step client")?;
    let mut outputs = node
        .subscribe::<Text>(OUTPUT, qos::reliable(10))
        .context("subscribing to the output")?;
    let mut available = Box::pin(r2r::Node::is_available(&client)?);
    let started = Instant::now();
    while (&mut available).now_or_never().is_none() {
        if started.elapsed() > PATIENCE {
            bail!("{SERVICE} did not appear within {PATIENCE:?}");
        }
        node.spin_once(SPIN);
    }
    let mut step_us = Vec::with_capacity(steps as usize);
    let mut answer_us = Vec::with_capacity(steps as usize);
    let mut sequence = 0u32;
    let mut matched = false;
    while step_us.len() < steps as usize {
        sequence += 1;
        let mut request = Step::Request::default();
        request.frame.sequence_num = sequence;
        let wanted = sequence.to_string();
        let t0 = Instant::now();
        let mut answer = Box::pin(client.request(&request).context("sending the step")?);
        let (mut answered, mut delivered) = (None, None);
        while answered.is_none() || delivered.is_none() {
            node.spin_once(SPIN);
            if answered.is_none() {
                if let Some(response) = (&mut answer).now_or_never() {
                    response.context("the step call failed")?;
                    answered = Some(t0.elapsed());
                }
            }
            while let Some(Some(text)) = outputs.next().now_or_never() {
                if text.data == wanted {
                    delivered = Some(t0.elapsed());
                }
            }
            // Until the output subscription has matched, an output may be published to nobody: step again.
            if !matched && answered.is_some() && t0.elapsed() > Duration::from_millis(500) {
                break;
            }
            if t0.elapsed() > PATIENCE {
                bail!("step #{sequence}: no answer and output within {PATIENCE:?}");
            }
        }
        let (Some(answered), Some(delivered)) = (answered, delivered) else {
            continue;
        };
        matched = true;
        if sequence > warmup {
            step_us.push(answered.max(delivered).as_secs_f64() * 1e6);
            answer_us.push(answered.as_secs_f64() * 1e6);
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let mut sorted = step_us.clone();
    sorted.sort_by(f64::total_cmp);
    let quantile = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
    println!(
        "{{\"steps\": {}, \"step_mean_us\": {:.1}, \"step_p50_us\": {:.1}, \"step_p99_us\": {:.1}, \
         \"service_call_mean_us\": {:.1}, \"steps_per_s\": {:.1}}}",
        step_us.len(),
        mean(&step_us),
        quantile(0.5),
        quantile(0.99),
        mean(&answer_us),
        1e6 / mean(&step_us)
    );
    Ok(())
}
