//! The three input streams read from a bag: each topic's type checked against the accepted ones, each
//! message decoded with the definition stored in the bag (or the installed `.msg` files when the bag holds
//! none), stamped (header stamp, or log time for an unstamped `Twist`), and put in time order.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use lockstep_bag::cdr::{Schema, Value};
use lockstep_bag::{BagReader, MessageDefinitions, ReadOptions};

use crate::history::{CommandSample, OdomSample, PoseSample, Stream};
use crate::model::Pose;

/// Types accepted on each stream (`Twist` and `TwistStamped` for commands, etc.).
pub(crate) fn accepted_types(stream: Stream) -> &'static [&'static str] {
    match stream {
        Stream::Command => &["geometry_msgs/msg/Twist", "geometry_msgs/msg/TwistStamped"],
        Stream::Odometry => &["nav_msgs/msg/Odometry"],
        Stream::Pose => &[
            "geometry_msgs/msg/PoseStamped",
            "geometry_msgs/msg/PoseWithCovarianceStamped",
        ],
    }
}

/// `pkg/Type` (ROS 1 style, some old bags) as `pkg/msg/Type`.
fn canonical_type(type_name: &str) -> String {
    match type_name.split('/').collect::<Vec<_>>().as_slice() {
        [pkg, name] => format!("{pkg}/msg/{name}"),
        _ => type_name.to_string(),
    }
}

/// One selected topic: its name, type, whether its messages carry a header, and its decoder.
pub(crate) struct Source {
    pub stream: Stream,
    pub topic: String,
    pub type_name: String,
    stamped: bool,
    schema: Schema,
}

/// Finds `topic` in the bag and checks its type; the error is one line naming the topic, the type found
/// and the types accepted.
pub(crate) fn source(reader: &BagReader, stream: Stream, topic: &str) -> Result<Source> {
    let accepted = accepted_types(stream).join(" or ");
    let Some(t) = reader.topics().iter().find(|t| t.metadata.name == topic) else {
        let names: Vec<String> = reader
            .topics()
            .iter()
            .map(|t| format!("{} ({})", t.metadata.name, t.metadata.type_name))
            .collect();
        bail!(
            "{stream} topic {topic} is not in the bag (it holds: {}); accepted types: {accepted}",
            if names.is_empty() {
                "no topics".to_string()
            } else {
                names.join(", ")
            }
        );
    };
    let type_name = canonical_type(&t.metadata.type_name);
    if !accepted_types(stream).contains(&type_name.as_str()) {
        bail!(
            "{stream} topic {topic} has type {}, accepted types: {accepted}",
            t.metadata.type_name
        );
    }
    let stored = t
        .definition
        .as_ref()
        .filter(|d| d.encoding == lockstep_bag::msgdefs::ROS2MSG && !d.text.trim().is_empty());
    let text = match stored {
        Some(d) => d.text.clone(),
        None => {
            let prefixes = std::env::var("AMENT_PREFIX_PATH").unwrap_or_default();
            MessageDefinitions::from_prefix_path(&prefixes)
                .resolve(&type_name)
                .with_context(|| {
                    format!("the bag holds no ros2msg definition of {type_name} (topic {topic}) and none is installed")
                })?
                .text
        }
    };
    let schema = Schema::parse(&type_name, &text)
        .with_context(|| format!("cannot read the definition of {type_name} (topic {topic})"))?;
    Ok(Source {
        stream,
        topic: topic.to_string(),
        stamped: type_name != "geometry_msgs/msg/Twist",
        type_name,
        schema,
    })
}

/// A number at `path` (`pose.pose.position.x`) of a decoded message.
fn number(v: &Value, path: &str) -> Result<f64> {
    let leaf = path.split('.').try_fold(v, |v, name| v.field(name));
    match leaf {
        Some(Value::Float(f)) => Ok(*f),
        Some(Value::Int(i)) => Ok(*i as f64),
        Some(Value::UInt(u)) => Ok(*u as f64),
        _ => bail!("no number at `{path}`"),
    }
}

/// Heading of the quaternion at `path` (`pose.orientation`); NaN for a non-finite component.
fn yaw(v: &Value, path: &str) -> Result<f64> {
    let q = |c: &str| number(v, &format!("{path}.{c}"));
    Ok(crate::model::yaw_of_quaternion(
        q("x")?,
        q("y")?,
        q("z")?,
        q("w")?,
    ))
}

/// The header stamp in nanoseconds.
fn header_stamp_ns(v: &Value) -> Result<i64> {
    let sec = number(v, "header.stamp.sec")?;
    let nanosec = number(v, "header.stamp.nanosec")?;
    Ok(sec as i64 * 1_000_000_000 + nanosec as i64)
}

/// What one message says, before the stamps are made relative.
#[derive(Debug, Clone, Copy)]
struct Decoded {
    stream: Stream,
    stamp_ns: Option<i64>,
    log_ns: i64,
    order: usize,
    /// Commands: v, w. Odometry: x, y, yaw, v, w. Poses: x, y, yaw.
    values: [f64; 5],
}

impl Source {
    fn decode(&self, data: &[u8], log_ns: i64, order: usize) -> Result<Decoded> {
        let v = self.schema.decode(data)?;
        let (stamp_ns, values) = match self.stream {
            Stream::Command => {
                let twist = if self.stamped { "twist." } else { "" };
                let stamp = if self.stamped {
                    Some(header_stamp_ns(&v)?)
                } else {
                    None
                };
                let lin = number(&v, &format!("{twist}linear.x"))?;
                let ang = number(&v, &format!("{twist}angular.z"))?;
                (stamp, [lin, ang, 0.0, 0.0, 0.0])
            }
            Stream::Odometry => (
                Some(header_stamp_ns(&v)?),
                [
                    number(&v, "pose.pose.position.x")?,
                    number(&v, "pose.pose.position.y")?,
                    yaw(&v, "pose.pose.orientation")?,
                    number(&v, "twist.twist.linear.x")?,
                    number(&v, "twist.twist.angular.z")?,
                ],
            ),
            Stream::Pose => {
                let p = if self.type_name.ends_with("PoseStamped") {
                    "pose"
                } else {
                    "pose.pose"
                };
                (
                    Some(header_stamp_ns(&v)?),
                    [
                        number(&v, &format!("{p}.position.x"))?,
                        number(&v, &format!("{p}.position.y"))?,
                        yaw(&v, &format!("{p}.orientation"))?,
                        0.0,
                        0.0,
                    ],
                )
            }
        };
        Ok(Decoded {
            stream: self.stream,
            stamp_ns,
            log_ns,
            order,
            values,
        })
    }
}

/// One input sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Sample {
    Command(CommandSample),
    Odometry(OdomSample),
    Pose(PoseSample),
}

impl Sample {
    /// Its time (s since the first sample).
    pub(crate) fn t_secs(&self) -> f64 {
        match self {
            Sample::Command(c) => c.t_secs,
            Sample::Odometry(o) => o.t_secs,
            Sample::Pose(p) => p.t_secs,
        }
    }
}

/// Everything read from the bag.
pub(crate) struct Inputs {
    /// Samples in time order (stamp, then stream, then bag order); times in seconds since `origin_ns`.
    pub samples: Vec<Sample>,
    /// Time zero of the samples (ns, the stamps' clock).
    pub origin_ns: i64,
    /// Messages read per stream (cmd_vel, odom, pose).
    pub read: [u64; 3],
    /// Messages that did not decode per stream, and the first reason.
    pub undecodable: [u64; 3],
    pub first_undecodable: Option<String>,
    /// Said to the user (e.g. a clock shift).
    pub notes: Vec<String>,
}

/// Reads the three sources' messages from `reader`, calling `tick` after each message.
pub(crate) fn read(reader: &BagReader, sources: &[Source; 3], mut tick: impl FnMut()) -> Result<Inputs> {
    let by_topic: BTreeMap<&str, &Source> = sources.iter().map(|s| (s.topic.as_str(), s)).collect();
    let mut decoded = Vec::new();
    let mut read = [0; 3];
    let mut undecodable = [0; 3];
    let mut first_undecodable = None;
    let options = ReadOptions::topics(by_topic.keys().copied());
    for (order, message) in reader.messages_with(options).enumerate() {
        let message = message.context("cannot read bag")?;
        tick();
        let Some(source) = by_topic.get(&*message.topic) else {
            continue;
        };
        let i = source.stream as usize;
        read[i] += 1;
        let log_ns = i64::try_from(message.log_time_ns).unwrap_or(i64::MAX);
        match source.decode(&message.data, log_ns, order) {
            Ok(d) => decoded.push(d),
            Err(e) => {
                undecodable[i] += 1;
                first_undecodable.get_or_insert_with(|| {
                    format!("{} message at log time {log_ns} ns: {e:#}", source.topic)
                });
            }
        }
    }
    for s in sources {
        let i = s.stream as usize;
        if read[i] == 0 {
            bail!("no usable data: {} topic {} holds no messages", s.stream, s.topic);
        }
        if undecodable[i] == read[i] {
            bail!(
                "no usable data: none of the {} messages of {} topic {} decodes ({})",
                read[i],
                s.stream,
                s.topic,
                first_undecodable.as_deref().unwrap_or("")
            );
        }
    }
    let notes = clock_shift(&mut decoded, sources[0].stamped);
    let stamp = |d: &Decoded| d.stamp_ns.unwrap_or(d.log_ns);
    decoded.sort_by_key(|d| (stamp(d), d.stream, d.order));
    let origin_ns = decoded.first().map_or(0, stamp);
    let samples = (decoded.iter())
        .map(|d| sample(d, (stamp(d) - origin_ns) as f64 * 1e-9))
        .collect();
    Ok(Inputs {
        samples,
        origin_ns,
        read,
        undecodable,
        first_undecodable,
        notes,
    })
}

/// An unstamped Twist has only its log time; when the header stamps run on another clock (a simulator's
/// time from 0 recorded with wall-clock log times), move the log times onto the odometry's clock. Returns
/// the note saying so, if it did.
fn clock_shift(decoded: &mut [Decoded], commands_stamped: bool) -> Vec<String> {
    let mut notes = Vec::new();
    if !commands_stamped {
        let mut offsets: Vec<i64> = decoded
            .iter()
            .filter(|d| d.stream == Stream::Odometry)
            .filter_map(|d| d.stamp_ns.map(|s| d.log_ns - s))
            .collect();
        offsets.sort_unstable();
        if let Some(&median) = offsets.get(offsets.len() / 2) {
            if median.abs() > 1_000_000_000 {
                for d in decoded.iter_mut().filter(|d| d.stamp_ns.is_none()) {
                    d.stamp_ns = Some(d.log_ns - median);
                }
                notes.push(format!(
                    "the odometry's header stamps are {:.3} s behind their log times (another clock, e.g. simulated time): the Twist commands' log times were moved onto the header clock",
                    median as f64 * 1e-9
                ));
            }
        }
    }
    notes
}

/// The sample `d` decoded to, at `t_secs`.
fn sample(d: &Decoded, t_secs: f64) -> Sample {
    let [a, b, c, e, f] = d.values;
    match d.stream {
        Stream::Command => Sample::Command(CommandSample {
            t_secs,
            v_mps: a,
            w_radps: b,
        }),
        Stream::Odometry => Sample::Odometry(OdomSample {
            t_secs,
            pose: Pose {
                x_m: a,
                y_m: b,
                yaw_rad: c,
            },
            v_mps: e,
            w_radps: f,
        }),
        Stream::Pose => Sample::Pose(PoseSample {
            t_secs,
            pose: Pose {
                x_m: a,
                y_m: b,
                yaw_rad: c,
            },
            noise: None,
        }),
    }
}
