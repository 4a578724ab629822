//! `lockstep bag play [BAG] [-i BAG ...] [options]`: the player node, run in this process, with `ros2 bag
//! play`'s flags; on a terminal, rosbag2's keyboard controls (`keys`) and a progress line (`status`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use lockstep_bag_player::Redraw;

use crate::config::PlayerParams;
use crate::player::Started;

pub use lockstep_bag_player::args::PlayArgs;

/// The node's parameters from the flags (the CLI exits at the end, like `ros2 bag play`).
pub fn params(args: &PlayArgs) -> anyhow::Result<PlayerParams> {
    Ok(PlayerParams {
        bag: args.bags().map_err(anyhow::Error::msg)?.join(","),
        rate: args.rate,
        start_paused: args.start_paused,
        start_offset: args.start_offset,
        playback_duration: args.playback_duration,
        playback_until_timestamp: args.playback_until_timestamp,
        topics: args.topics.join(","),
        regex: args.regex.clone(),
        exclude_regex: args.exclude_regex.clone(),
        remap: args.remap.join(","),
        clock: args.clock,
        delay: args.delay,
        read_ahead_queue_size: args.read_ahead_queue_size,
        qos_profile_overrides_path: args
            .qos_profile_overrides_path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        wait_for_all_acked: args.wait_for_all_acked,
        wait_for_subscribers: args.wait_for_subscribers,
        exit_at_end: true,
        message_order: args.message_order.clone(),
        clock_topics: args.clock_topics.join(","),
        clock_topics_all: args.clock_topics_all,
        publish_service_requests: args.publish_service_requests,
        service_requests_source: args.service_requests_source.clone(),
        send_actions_as_client: args.send_actions_as_client,
    })
}

/// Run `lockstep bag play`.
pub fn run(args: PlayArgs) -> anyhow::Result<()> {
    let params = params(&args)?;
    let redraw = Redraw::from_rate(args.progress_bar_update_rate);
    let show = !args.quiet && redraw != Redraw::Never && std::io::IsTerminal::is_terminal(&std::io::stderr());
    // Keys change the terminal's mode; the guard puts it back however the play ends (Ctrl-C included).
    let keys = (!args.disable_keyboard_controls)
        .then(crate::keys::Keyboard::take)
        .flatten();
    if keys.is_some() && !args.quiet {
        eprintln!("{}", crate::keys::HELP);
    }
    let reading_keys = keys.is_some();
    let done = Arc::new(AtomicBool::new(false));
    let changed = Arc::new(AtomicBool::new(false));
    let progress: Arc<Mutex<Option<std::thread::JoinHandle<()>>>> = Arc::default();
    let (progress_slot, progress_done) = (progress.clone(), done.clone());
    let on_start: Box<dyn FnOnce(&Started) + Send> = Box::new(move |started: &Started| {
        if reading_keys {
            // Without a progress line, each key's effect is said on a line of its own.
            crate::keys::read(started.control.clone(), changed.clone(), !show);
        }
        if show {
            let handle = crate::status::spawn(started, redraw, progress_done, changed);
            if let Ok(mut slot) = progress_slot.lock() {
                *slot = handle;
            }
        }
    });
    let outcome = crate::player::run(params, args.r#loop, Some(on_start));
    done.store(true, Ordering::SeqCst);
    let handle = progress.lock().ok().and_then(|mut h| h.take());
    if let Some(handle) = handle {
        let _ = handle.join(); // its last line drawn before anything else is printed
    }
    drop(keys);
    outcome
}
