//! `lockstep_loadgen`: publishes `count` messages of `size_bytes` on `topic` (std_msgs/UInt8MultiArray) at
//! `rate_hz`, each carrying its index in its first 8 bytes, so a recording can be checked for loss and order.
//! A benchmark tool for the recorder (scripts/bench/recorder_e2e.sh), not a product node.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use lockstep_ros::{lock, qos};
use r2r::std_msgs::msg::UInt8MultiArray;

/// Load generator parameters.
#[derive(r2r::RosParams, Debug)]
struct LoadParams {
    /// Topic to publish on.
    topic: String,
    /// Payload bytes per message (at least 8).
    size_bytes: i64,
    /// Messages per second.
    rate_hz: f64,
    /// Messages in all.
    count: i64,
    /// Seconds to wait for a subscriber before starting.
    wait_for_subscriber_secs: f64,
    /// After publishing, keep the publisher alive until SIGINT/SIGTERM. A reliable publisher that exits at
    /// once can take its last, not yet acknowledged messages with it (a 1 MiB message is still being sent
    /// in fragments when `publish` returns), which would look like a loss at the subscriber.
    stay_alive: bool,
}

impl Default for LoadParams {
    fn default() -> Self {
        Self {
            topic: "load".into(),
            size_bytes: 256,
            rate_hz: 1000.0,
            count: 1000,
            wait_for_subscriber_secs: 30.0,
            stay_alive: false,
        }
    }
}

fn main() -> std::process::ExitCode {
    lockstep_ros::exit_status("lockstep_loadgen", run())
}

fn run() -> anyhow::Result<()> {
    lockstep_ros::help::exit_if_requested(&lockstep_ros::help::NodeHelp {
        binary: "lockstep_loadgen",
        about: "benchmark load for the recorder: publishes `count` messages of `size_bytes` on `topic` (std_msgs/UInt8MultiArray) at `rate_hz`, each carrying its index in its first 8 bytes.",
        readme: None,
        rules: &[],
    });
    lockstep_ros::run_node("lockstep_loadgen", |node| {
        let params = lockstep_ros::declare_parameters(&node, LoadParams::default())?.values;
        let p = params.lock().map_err(|_| lockstep_ros::Error::Poisoned)?;
        let (size, count, rate_hz, wait, stay_alive) = (
            (p.size_bytes.max(8)) as usize,
            p.count.max(0) as u64,
            p.rate_hz,
            p.wait_for_subscriber_secs,
            p.stay_alive,
        );
        let publisher =
            lock(&node)?.create_publisher::<UInt8MultiArray>(&p.topic, qos::keep_all_reliable())?;
        drop(p);
        let logger = lockstep_ros::logger_name(&node)?;
        let load = Load {
            size,
            count,
            rate_hz,
            wait_secs: wait,
        };
        Ok(async move {
            let publisher = generate(publisher, load, logger)
                .await
                .map_err(lockstep_ros::BoxError::from)?;
            if stay_alive {
                // Until the stop signal ends the node (run_node), with the publisher still serving resends.
                futures::future::pending::<()>().await;
            }
            drop(publisher);
            Ok(())
        })
    })
    .context("lockstep_loadgen")
}

struct Load {
    size: usize,
    count: u64,
    rate_hz: f64,
    wait_secs: f64,
}

async fn generate(
    publisher: r2r::Publisher<UInt8MultiArray>,
    load: Load,
    logger: String,
) -> anyhow::Result<r2r::Publisher<UInt8MultiArray>> {
    let deadline = Instant::now() + Duration::from_secs_f64(load.wait_secs);
    while publisher.get_inter_process_subscription_count()? == 0 {
        anyhow::ensure!(
            Instant::now() < deadline,
            "no subscriber within {} s",
            load.wait_secs
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut msg = UInt8MultiArray {
        data: vec![0xA5; load.size],
        ..Default::default()
    };
    let start = Instant::now();
    let period = Duration::from_secs_f64(1.0 / load.rate_hz.max(1e-3));
    for i in 0..load.count {
        msg.data[..8].copy_from_slice(&i.to_le_bytes());
        publisher.publish(&msg).context("publish")?;
        let due = start + period.mul_f64((i + 1) as f64);
        let now = Instant::now();
        if due > now {
            // Sleep through long gaps, spin through short ones: tokio's timer is millisecond-grained.
            if due - now > Duration::from_millis(2) {
                tokio::time::sleep(due - now - Duration::from_millis(1)).await;
            }
            while Instant::now() < due {
                std::hint::spin_loop();
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    r2r::log_info!(
        &logger,
        "published {} x {} B in {secs:.2} s",
        load.count,
        load.size
    );
    println!("published {} {secs:.3}", load.count);
    Ok(publisher)
}
