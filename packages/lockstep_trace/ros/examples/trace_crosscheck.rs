//! The Rust library's answers for cross-checking another implementation of Lockstep's tracing (the Python
//! library `lockstep_trace`, a C++ port) against it: canonical CDR bytes and payload digests of messages, and
//! the bytes of the dependency headers a tracer builds.
//!
//! Reads one request per line on stdin and writes one answer line per request on stdout. Fields are
//! separated by spaces; bytes are written in lowercase hex.
//!
//! - `msg <type> <cdr hex>`: the message of ROS type `<type>` (e.g. `geometry_msgs/msg/PoseArray`) in the
//!   CDR bytes `<cdr hex>` (as `rclpy.serialization.serialize_message` writes them, padding of any value).
//!   Answer: `<canonical cdr hex> <payload digest as a decimal u64>`.
//! - `header <module> <epoch> <channel> <start_ns> <process_ns> <payload hex> <inputs>`: the header a fresh
//!   tracer of `<module>` with epoch `<epoch>` gives its first output on `<channel>`, whose payload (the
//!   bytes digested, `-` if empty) was computed from `<inputs>` (`-` for none, or comma-separated hex CDR of
//!   `lockstep_interfaces/msg/DependencyHeader` messages) in a computation started at `<start_ns>` (ns since
//!   the Unix epoch) that took `<process_ns>` ns. Answer: the canonical CDR hex of the header message.
//! - Anything else: `error <reason>`, and the next request is read.
//!
//! ```text
//! cargo build -p lockstep_trace_ros --examples
//! echo 'msg std_msgs/msg/String 000100000400000061620000' | target/debug/examples/trace_crosscheck
//! ```

use std::io::{self, BufRead, Write};
use std::time::Duration;

use lockstep_trace::{digest, Tracer};
use lockstep_trace_ros::{canonical_cdr, header_from_msg, header_to_msg, DependencyHeader};
use r2r::WrappedTypesupport;

/// The message types a `msg` request may name.
const TYPES: &[&str] = &[
    "geometry_msgs/msg/PoseArray",
    "geometry_msgs/msg/PoseStamped",
    "geometry_msgs/msg/Twist",
    "nav_msgs/msg/Odometry",
    "sensor_msgs/msg/Range",
    "sensor_msgs/msg/LaserScan",
    "std_msgs/msg/String",
    "std_msgs/msg/UInt8MultiArray",
    "std_msgs/msg/Float64MultiArray",
    "std_msgs/msg/UInt8",
    "std_msgs/msg/Bool",
    "std_msgs/msg/Empty",
    "lockstep_interfaces/msg/DependencyHeader",
    "diagnostic_msgs/msg/DiagnosticArray",
];

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(text: &str) -> Result<Vec<u8>, String> {
    if text.len() % 2 != 0 {
        return Err(format!("odd number of hex digits ({})", text.len()));
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or_else(|| format!("not hex at offset {i}"))
        })
        .collect()
}

/// `-` is the empty byte string.
fn bytes_field(text: &str) -> Result<Vec<u8>, String> {
    if text == "-" {
        Ok(Vec::new())
    } else {
        from_hex(text)
    }
}

fn number<T: std::str::FromStr>(what: &str, text: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    text.parse()
        .map_err(|e| format!("{what} `{text}` is not a valid number: {e}"))
}

fn deserialize<T: WrappedTypesupport>(type_name: &str, cdr: &[u8]) -> Result<T, String> {
    T::from_serialized_bytes(cdr).map_err(|e| format!("cannot deserialize {type_name}: {e}"))
}

fn canonical_answer<T: WrappedTypesupport>(type_name: &str, cdr: &[u8]) -> Result<String, String> {
    let msg: T = deserialize(type_name, cdr)?;
    let canonical =
        canonical_cdr(&msg).map_err(|e| format!("cannot serialize {type_name} canonically: {e}"))?;
    Ok(format!("{} {}", to_hex(&canonical), digest(&canonical)))
}

fn answer_msg(type_name: &str, cdr: &[u8]) -> Result<String, String> {
    use r2r::{diagnostic_msgs, geometry_msgs, lockstep_interfaces, nav_msgs, sensor_msgs, std_msgs};
    match type_name {
        "geometry_msgs/msg/PoseArray" => canonical_answer::<geometry_msgs::msg::PoseArray>(type_name, cdr),
        "geometry_msgs/msg/PoseStamped" => {
            canonical_answer::<geometry_msgs::msg::PoseStamped>(type_name, cdr)
        }
        "geometry_msgs/msg/Twist" => canonical_answer::<geometry_msgs::msg::Twist>(type_name, cdr),
        "nav_msgs/msg/Odometry" => canonical_answer::<nav_msgs::msg::Odometry>(type_name, cdr),
        "sensor_msgs/msg/Range" => canonical_answer::<sensor_msgs::msg::Range>(type_name, cdr),
        "sensor_msgs/msg/LaserScan" => canonical_answer::<sensor_msgs::msg::LaserScan>(type_name, cdr),
        "std_msgs/msg/String" => canonical_answer::<std_msgs::msg::String>(type_name, cdr),
        "std_msgs/msg/UInt8MultiArray" => canonical_answer::<std_msgs::msg::UInt8MultiArray>(type_name, cdr),
        "std_msgs/msg/UInt8" => canonical_answer::<std_msgs::msg::UInt8>(type_name, cdr),
        "std_msgs/msg/Bool" => canonical_answer::<std_msgs::msg::Bool>(type_name, cdr),
        "std_msgs/msg/Empty" => canonical_answer::<std_msgs::msg::Empty>(type_name, cdr),
        "std_msgs/msg/Float64MultiArray" => {
            canonical_answer::<std_msgs::msg::Float64MultiArray>(type_name, cdr)
        }
        "lockstep_interfaces/msg/DependencyHeader" => {
            canonical_answer::<lockstep_interfaces::msg::DependencyHeader>(type_name, cdr)
        }
        "diagnostic_msgs/msg/DiagnosticArray" => {
            canonical_answer::<diagnostic_msgs::msg::DiagnosticArray>(type_name, cdr)
        }
        _ => Err(format!(
            "unsupported message type `{type_name}` (supported: {})",
            TYPES.join(", ")
        )),
    }
}

fn answer_header(fields: &[&str]) -> Result<String, String> {
    let [module, epoch, channel, start_ns, process_ns, payload, inputs] = fields else {
        return Err(format!(
            "a header request has 7 fields (module epoch channel start_ns process_ns payload inputs), not {}",
            fields.len()
        ));
    };
    let epoch: u64 = number("epoch", epoch)?;
    let start_ns: i64 = number("start_ns", start_ns)?;
    let process_ns: u64 = number("process_ns", process_ns)?;
    let payload = bytes_field(payload)?;
    let inputs = if *inputs == "-" {
        Vec::new()
    } else {
        inputs
            .split(',')
            .enumerate()
            .map(|(i, hex)| {
                let cdr = from_hex(hex).map_err(|e| format!("input {i}: {e}"))?;
                let msg: DependencyHeader = deserialize(&format!("input {i}"), &cdr)?;
                Ok(header_from_msg(&msg))
            })
            .collect::<Result<Vec<_>, String>>()?
    };
    let mut tracer = Tracer::with_epoch(*module, epoch);
    let token = tracer.begin_at(start_ns);
    let header = tracer.finish_with_process_time(
        token,
        Duration::from_nanos(process_ns),
        channel,
        &payload,
        &inputs.iter().collect::<Vec<_>>(),
    );
    let canonical = canonical_cdr(&header_to_msg(&header))
        .map_err(|e| format!("cannot serialize the header canonically: {e}"))?;
    Ok(to_hex(&canonical))
}

fn answer(line: &str) -> Result<String, String> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    match fields.as_slice() {
        ["msg", type_name, cdr] => answer_msg(type_name, &from_hex(cdr)?),
        ["msg", ..] => Err(format!(
            "a msg request has 2 fields (type cdr_hex), not {}",
            fields.len() - 1
        )),
        ["header", rest @ ..] => answer_header(rest),
        [] => Err("empty request".to_owned()),
        [other, ..] => Err(format!("unknown request `{other}` (expected msg or header)")),
    }
}

fn main() -> io::Result<()> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    for line in io::stdin().lock().lines() {
        let reply = answer(&line?).unwrap_or_else(|reason| format!("error {}", reason.replace('\n', " ")));
        // Flushed per answer, so a client may also talk to the program one request at a time.
        writeln!(out, "{reply}")?;
        out.flush()?;
    }
    Ok(())
}
