//! `lockstep report <dir>`.

use std::path::PathBuf;

use anyhow::Context as _;

/// Arguments of `lockstep report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// The demo output folder holding report.json (scripts/demo.py writes it).
    pub dir: PathBuf,
}

/// Runs `lockstep report`: draws the plots and writes report.html; prints what it wrote.
pub fn run(args: ReportArgs) -> anyhow::Result<()> {
    let rendered = crate::render(&args.dir)
        .with_context(|| format!("rendering the report of {}", args.dir.display()))?;
    for plot in &rendered.plots {
        println!("plot: {}", args.dir.join(plot).display());
    }
    for key in &rendered.missing {
        println!("no plot `{key}`: report.json does not name its source (its stage did not run)");
    }
    println!("report: {}", rendered.html.display());
    Ok(())
}
