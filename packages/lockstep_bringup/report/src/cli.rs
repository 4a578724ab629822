//! `lockstep report <dir>`.

use std::path::PathBuf;

use anyhow::Context as _;

/// Arguments of `lockstep report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// A folder a Lockstep tool wrote: the demo's (scripts/demo.py), a lock-step replay's (lockstep replay
    /// --output) or a calibration's (lockstep calibrate --output). report.html is written into it.
    pub dir: PathBuf,
}

/// Runs `lockstep report`: recognises the folder, draws the plots and writes report.html; prints what it
/// wrote.
pub fn run(args: ReportArgs) -> anyhow::Result<()> {
    // The error names the folder and what it should hold: nothing to add.
    let kind = crate::detect(&args.dir)?;
    let rendered = crate::render_as(&args.dir, kind)
        .with_context(|| format!("cannot render the {kind} report of {}", args.dir.display()))?;
    for plot in &rendered.plots {
        println!("plot: {}", args.dir.join(plot).display());
    }
    for missing in &rendered.missing {
        println!("no plot `{}`: {}", missing.key, missing.why);
    }
    println!("{kind} report: {}", rendered.html.display());
    Ok(())
}
