//! The command-line arguments of `lockstep view` (feature `cli`), apart from what they mean: the node crate
//! derives its access settings and server options from them. Here so that `lockstep view --help` works in a
//! shell without ROS.

use lockstep_ranges::{int_arg, real_arg, Int, Real};

/// A look at the graph more often than 100 times a second only burns CPU; less often than hourly is a typo.
const DISCOVERY_PERIOD_S: Real = Real::closed(0.01, 3600.0, "s");
/// Messages kept per client.
const QUEUE: Int = Int::closed(1, 1_000_000, "messages");
/// The rates `lockstep bag play --rate` takes.
const PLAY_RATE: Real = Real::closed(0.001, 1000.0, "");

/// Arguments of `lockstep view`.
#[derive(Debug, clap::Args)]
pub struct ViewArgs {
    /// Port to listen on (Foxglove's default is 8765).
    #[arg(long, default_value_t = 8765)]
    pub port: u16,
    /// Address to listen on: 127.0.0.1 (this machine only) unless given; 0.0.0.0 for every interface (then
    /// give a --token, and --tls-cert/--tls-key on a network you do not trust).
    #[arg(long, default_value = "127.0.0.1")]
    pub address: String,
    /// Offer only these topics (and those `--regex` matches); default: every topic.
    #[arg(long, num_args = 1..)]
    pub topics: Vec<String>,
    /// Offer the topics this regular expression matches.
    #[arg(long, default_value = "")]
    pub regex: String,
    /// Do not offer the topics this regular expression matches.
    #[arg(long, default_value = "")]
    pub exclude_regex: String,
    /// Seconds between two looks at the graph (new and vanished topics).
    #[arg(long, default_value_t = 1.0, value_parser = real_arg(DISCOVERY_PERIOD_S))]
    pub discovery_period_secs: f64,
    /// Messages kept per client before a slow client's oldest are dropped (counted and logged).
    #[arg(long, default_value_t = 1024, value_parser = int_arg::<usize>(QUEUE))]
    pub queue: usize,
    /// Stamp messages with /clock and send it as the protocol's time (for simulated time).
    #[arg(long)]
    pub sim_time: bool,
    /// Do not offer the nodes' parameters (Foxglove's Parameters panel reads and sets them).
    #[arg(long)]
    pub no_parameters: bool,
    /// Do not offer the graph's services (Foxglove's Service Call panel calls them, in JSON).
    #[arg(long)]
    pub no_services: bool,
    /// Topics that may be offered: regular expressions, each matching whole names (default: every topic).
    #[arg(long, num_args = 1.., default_value = ".*")]
    pub allow_topics: Vec<String>,
    /// Services Foxglove may call: regular expressions, each matching whole names, e.g.
    /// '/lockstep_sim_node/.*' (default: none; with --bag: the bag player's controls).
    #[arg(long, num_args = 1..)]
    pub allow_services: Vec<String>,
    /// Parameters Foxglove may set (`/node.parameter`): regular expressions, each matching whole names, e.g.
    /// '/lockstep_sim_node\.time_scale' (default: none). Reading parameters is not limited.
    #[arg(long, num_args = 1..)]
    pub allow_parameters: Vec<String>,
    /// Clients must send this token (`Authorization: Bearer <token>`, or `?token=<token>` in the URL). It
    /// shows in `ps`: prefer --token-file or the environment variable LOCKSTEP_VIEW_TOKEN.
    #[arg(long, conflicts_with = "token_file")]
    pub token: Option<String>,
    /// Read the token from this file (its first line).
    #[arg(long)]
    pub token_file: Option<std::path::PathBuf>,
    /// Serve wss:// with this certificate chain (PEM); needs --tls-key.
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<std::path::PathBuf>,
    /// Serve this bag instead of the live graph: `lockstep bag play` runs beside the view with /clock, paused
    /// (call /lockstep_bag_player/resume, pause, set_rate, seek ... from Foxglove's Service Call panel), and
    /// only the bag's topics are offered.
    #[arg(long)]
    pub bag: Option<std::path::PathBuf>,
    /// With --bag: start playing at once.
    #[arg(long, requires = "bag")]
    pub play: bool,
    /// With --bag: playback rate.
    #[arg(long, requires = "bag", default_value_t = 1.0, value_parser = real_arg(PLAY_RATE))]
    pub rate: f64,
    /// With --bag: play again from the start at the end.
    #[arg(long = "loop", requires = "bag")]
    pub looping: bool,
}
