//! Memory that does not grow with the bag: the peak of the bytes each verb holds at once, measured by an
//! allocator that counts this thread's allocations, against inputs several times larger.

use super::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Live bytes allocated by this thread while tracking is on, and their peak.
struct Tracking;

thread_local! {
    static TRACKING: Cell<bool> = const { Cell::new(false) };
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn note(delta: isize) {
    if TRACKING.try_with(Cell::get).unwrap_or(false) {
        let live = LIVE.try_with(|l| {
            l.set(l.get() + delta);
            l.get()
        });
        let _ = PEAK.try_with(|p| p.set(p.get().max(live.unwrap_or(0))));
    }
}

// SAFETY: forwards every call to the system allocator unchanged; only counts the sizes.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size() as isize);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note(-(layout.size() as isize));
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Tracking = Tracking;

/// The peak of the bytes `f` held at once on this thread.
fn peak_bytes(f: impl FnOnce()) -> usize {
    LIVE.with(|l| l.set(0));
    PEAK.with(|p| p.set(0));
    TRACKING.with(|t| t.set(true));
    f();
    TRACKING.with(|t| t.set(false));
    PEAK.with(Cell::get) as usize
}

#[test]
fn memory_does_not_grow_with_the_bags() {
    let tmp = tempfile::tempdir().unwrap();
    let payload = common::bytes(3, 64 << 10);
    let inputs: Vec<_> = (0..2).map(|n| tmp.path().join(format!("big{n}"))).collect();
    for (n, dir) in inputs.iter().enumerate() {
        let opts = WriterOptions {
            compression: ChunkCompression::None,
            ..WriterOptions::default()
        };
        let mut w = BagWriter::create(dir, opts).unwrap();
        w.add_topic(spec("/big", "sensor_msgs/msg/CompressedImage"))
            .unwrap();
        w.add_topic(spec("/tf_static", "tf2_msgs/msg/TFMessage")).unwrap();
        w.write("/tf_static", T0, b"static").unwrap();
        for i in 0..400u64 {
            w.write("/big", T0 + (2 * i + n as u64) * MS, &payload).unwrap();
        }
        w.finish().unwrap();
    }
    let input_bytes: u64 = inputs
        .iter()
        .flat_map(|d| snapshot(d).into_values())
        .map(|f| f.len() as u64)
        .sum();
    assert!(input_bytes > 50 << 20, "{input_bytes}");
    let limit = 12 << 20;
    let (a, b) = (s(&inputs[0]), s(&inputs[1]));
    let merged = tmp.path().join("merged");
    let peak = peak_bytes(|| drop(bag(&["merge", s(&merged), a, b]).unwrap()));
    eprintln!("merge: peak {peak} bytes for {input_bytes} bytes of input");
    assert!(
        peak < limit,
        "merge held {peak} bytes for {input_bytes} bytes of input"
    );
    let filtered = tmp.path().join("filtered");
    let args = [
        "filter",
        s(&merged),
        s(&filtered),
        "--start-offset",
        "0.5",
        "--last-per-channel-topic-regex",
        "/tf.*",
    ];
    let peak = peak_bytes(|| drop(bag(&args).unwrap()));
    eprintln!("filter: peak {peak} bytes");
    assert!(peak < limit, "filter held {peak} bytes");
    assert_eq!(
        read(&filtered).len(),
        300 + 1,
        "the /big messages from 0.5 s on and the last /tf_static"
    );
    let peak = peak_bytes(|| drop(bag(&["du", s(&merged)]).unwrap()));
    eprintln!("du: peak {peak} bytes");
    assert!(peak < limit, "du held {peak} bytes");
}
