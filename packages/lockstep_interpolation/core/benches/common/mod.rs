//! What the player benchmarks print: peaks per joint as fractions of the limits, ours against a baseline.

use lockstep_interpolation::Stream;

/// A numeric command-line option (`--name N`), or `default`.
pub fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The table of peak |v|, |a| (and |j| when `slots` is 3) per joint, ours against `naive`, and a last row with
/// the alarms and the worst peaks; true if ours went over a limit.
pub fn print_peaks(joints: &[String], ours: &Stream, naive: &Stream, slots: usize) -> bool {
    let names = ["v", "a", "j"];
    let header: Vec<String> = ["ours", "baseline"]
        .iter()
        .flat_map(|who| names[..slots].iter().map(move |q| format!("{who} peak {q}")))
        .collect();
    println!("| joint | {} |", header.join(" | "));
    println!("|---|{}", "---|".repeat(2 * slots));
    for (i, joint) in joints.iter().enumerate() {
        let (o, n) = (ours.peaks()[i], naive.peaks()[i]);
        let ours_cells = o[..slots].iter().map(|f| format!("{f:.3}"));
        let naive_cells = n[..slots].iter().enumerate().map(|(q, f)| {
            if q == 0 {
                format!("{f:.3}")
            } else {
                format!("{f:.1}")
            }
        });
        let cells: Vec<String> = ours_cells.chain(naive_cells).collect();
        println!("| {joint} | {} |", cells.join(" | "));
    }
    let worst = |s: &Stream, slot: usize| s.peaks().iter().map(|p| p[slot]).fold(0.0, f64::max);
    let worst_cells = |s: &Stream, digits: usize| -> String {
        (1..slots)
            .map(|q| format!("worst {}: **{:.digits$}**", names[q], worst(s, q)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "| **all** | alarms: **{}** | {} | alarms: **{}** | {} |\n",
        ours.alarms(),
        worst_cells(ours, 3),
        naive.alarms(),
        worst_cells(naive, 1),
    );
    ours.alarms() > 0 || (0..slots).any(|q| worst(ours, q) > 1.0 + 1e-6)
}
