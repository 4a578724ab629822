//! `report.html`: one self-contained page (no file, font or script from outside): the stages, the key
//! figures as a table, then every plot in a `<figure id="plot-<key>">` with an `<h2>` title, the PNG inlined
//! as a base64 data URI with its size fixed in the markup (so the layout does not wait for the images), and
//! a `<figcaption>`. A small inline script writes each plot image's box on the page into `data-box`
//! (`x,y,width,height` in CSS pixels) and the page height into `<body data-height>`, for tests that look at a
//! screenshot.

use std::fmt::Write as _;

use crate::{Image, ReportJson, STAGE_ORDER};

/// Widest a plot is shown, CSS pixels (narrower PNGs keep their size).
pub const MAX_WIDTH_PX: u32 = 1100;

const STYLE: &str = "body{font-family:'DejaVu Sans',Arial,sans-serif;margin:24px 40px;color:#222;background:#fff}\
h1{font-size:28px;margin:0 0 6px}h2{font-size:20px;margin:0 0 8px}\
table{border-collapse:collapse;margin:10px 0 24px}td,th{border:1px solid #ccc;padding:4px 10px;text-align:left;\
font-size:14px}th{background:#f0f0f0}.ok{color:#1a7f37;font-weight:bold}.bad{color:#c62828;font-weight:bold}\
figure{margin:0 0 36px;padding:0}figure img{display:block;border:1px solid #ddd}\
figcaption{font-size:14px;color:#555;margin-top:6px;max-width:1100px}.meta{color:#666;font-size:13px}";

/// Sets `data-box` on every plot image and `data-height` on the body (read through `--dump-dom`).
const SCRIPT: &str =
    "for(const i of document.querySelectorAll('figure img')){const r=i.getBoundingClientRect();\
i.dataset.box=[r.left+scrollX,r.top+scrollY,r.width,r.height].map(Math.round).join(',');}\
document.body.dataset.height=Math.ceil(document.documentElement.scrollHeight);";

/// Escapes text for HTML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The size a PNG of `size_px` is shown at: at most [`MAX_WIDTH_PX`] wide, aspect kept.
pub fn shown_size((w, h): (u32, u32)) -> (u32, u32) {
    if w <= MAX_WIDTH_PX || w == 0 {
        return (w, h);
    }
    let height = (u64::from(h) * u64::from(MAX_WIDTH_PX) / u64::from(w)) as u32;
    (MAX_WIDTH_PX, height)
}

fn verdict(ok: Option<bool>) -> &'static str {
    match ok {
        Some(true) => "<td class=\"ok\">yes</td>",
        Some(false) => "<td class=\"bad\">NO</td>",
        None => "<td></td>",
    }
}

/// The whole page.
pub fn html(report: &ReportJson, images: &[Image]) -> String {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str("<title>Lockstep demo report</title>");
    let _ = write!(out, "<style>{STYLE}</style></head>\n<body>\n");
    out.push_str("<h1>Lockstep demo report</h1>\n");
    let mut meta = format!("run {}", escape(&report.created_utc));
    if let Some(seed) = report.seed {
        let _ = write!(meta, ", seed {seed}");
    }
    if let Some(total) = report.total_wall_s {
        let _ = write!(meta, ", {total:.1} s in all");
    }
    let _ = writeln!(out, "<p class=\"meta\">{meta}</p>");

    out.push_str("<h2 id=\"stages\">Stages</h2>\n<table><tr><th>stage</th><th>ok</th><th>time</th><th>summary</th></tr>\n");
    let mut names: Vec<&String> = report.stages.keys().collect();
    names.sort_by_key(|n| {
        (
            STAGE_ORDER
                .iter()
                .position(|s| s == n)
                .unwrap_or(STAGE_ORDER.len()),
            (*n).clone(),
        )
    });
    for name in names {
        let s = &report.stages[name];
        let _ = writeln!(
            out,
            "<tr><td>{}</td>{}<td>{:.1} s</td><td>{}</td></tr>",
            escape(name),
            verdict(Some(s.ok)),
            s.wall_s,
            escape(&s.summary)
        );
    }
    out.push_str("</table>\n");

    out.push_str("<h2 id=\"figures\">Key figures</h2>\n<table id=\"figures-table\"><tr><th>stage</th><th>figure</th><th>value</th><th>meets its goal</th></tr>\n");
    for f in &report.figures {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td>{}</tr>",
            escape(&f.stage),
            escape(&f.name),
            escape(&f.value),
            verdict(f.ok)
        );
    }
    out.push_str("</table>\n");

    for image in images {
        let (w, h) = shown_size(image.size_px);
        let key = image.spec.key;
        let _ = writeln!(
            out,
            "<figure id=\"plot-{key}\"><h2>{}</h2><img alt=\"{}\" width=\"{w}\" height=\"{h}\" \
             src=\"data:image/png;base64,{}\"><figcaption>{} <span class=\"meta\">({})</span></figcaption></figure>",
            escape(image.spec.title),
            escape(image.spec.title),
            data_encoding::BASE64.encode(&image.png),
            escape(image.spec.caption),
            escape(&image.file)
        );
    }
    let _ = write!(out, "<script>{SCRIPT}</script>\n</body></html>\n");
    out
}
