//! `report.html`: one self-contained page (no file, font or script from outside) for every folder kind: a
//! title, tables of the key figures, then every plot in a `<figure id="plot-<key>">` with an `<h2>` title,
//! the PNG inlined as a base64 data URI and a `<figcaption>`.
//!
//! The content sits in one column at most [`PAGE_WIDTH_PX`] wide; a plot fills the column's width (CSS
//! scales it down on a narrower window), and its PNG's own width and height stay in the markup so the layout
//! does not wait for the images. A small inline script writes each plot image's box on the page into
//! `data-box` (`x,y,width,height` in CSS pixels) and the page height into `<body data-height>`, for tests
//! that look at a screenshot.

use std::fmt::Write as _;

use crate::types::Image;

/// The widest the page's column is, CSS pixels; the plots drawn here are this wide, so they are shown at
/// one image pixel per screen pixel in a full-width window and stay sharp.
pub const PAGE_WIDTH_PX: u32 = 1200;

const STYLE: &str = "body{font-family:'DejaVu Sans',Arial,sans-serif;margin:24px 40px;color:#222;background:#fff}\
h1{font-size:28px;margin:0 0 6px}h2{font-size:20px;margin:0 0 8px}\
table{border-collapse:collapse;margin:10px 0 24px;max-width:100%}td,th{border:1px solid #ccc;padding:4px 10px;\
text-align:left;vertical-align:top;font-size:14px}th{background:#f0f0f0}\
.ok{color:#1a7f37;font-weight:bold}.bad{color:#c62828;font-weight:bold}\
figure{margin:0 0 36px;padding:0}\
figure img{display:block;width:100%;height:auto;box-sizing:border-box;border:1px solid #ddd}\
figcaption{font-size:14px;color:#555;margin-top:6px}.meta{color:#666;font-size:13px}\
pre{font-size:13px;background:#f7f7f7;border:1px solid #ddd;padding:8px;white-space:pre-wrap;\
overflow-wrap:anywhere;margin:4px 0}pre.error{background:#fdecea;border-color:#e0a0a0;color:#7a1010}\
.path{overflow-wrap:anywhere}#stages-table td:nth-child(3){white-space:nowrap}";

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

/// A relative path as a link target: every byte outside the unreserved characters and `/`
/// percent-encoded (a space, `#` or `?` in a file name must not end the path).
pub fn href(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// One cell of a table.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Text, escaped.
    Text(String),
    /// A file or topic name: escaped, and allowed to wrap anywhere.
    Path(String),
    /// Meets its goal: yes (green), NO (red), or empty when the figure is informative only.
    Verdict(Option<bool>),
    /// Markup made by this crate (already escaped).
    Html(String),
}

impl Cell {
    /// A text cell.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(text.into())
    }

    fn to_html(&self) -> String {
        match self {
            Self::Text(t) => format!("<td>{}</td>", escape(t)),
            Self::Path(t) => format!("<td class=\"path\">{}</td>", escape(t)),
            Self::Verdict(Some(true)) => "<td class=\"ok\">yes</td>".into(),
            Self::Verdict(Some(false)) => "<td class=\"bad\">NO</td>".into(),
            Self::Verdict(None) => "<td></td>".into(),
            Self::Html(h) => format!("<td>{h}</td>"),
        }
    }
}

/// A page being written.
#[derive(Debug, Clone)]
pub struct Page {
    out: String,
}

impl Page {
    /// The head, the `<h1>` title and a line of run details under it.
    pub fn new(title: &str, meta: &str) -> Self {
        let mut out = String::new();
        out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
        out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
        let _ = write!(out, "<title>{}</title>", escape(title));
        let _ = write!(
            out,
            "<style>main{{max-width:{PAGE_WIDTH_PX}px}}{STYLE}</style></head>\n<body>\n<main>\n"
        );
        let _ = writeln!(out, "<h1>{}</h1>", escape(title));
        if !meta.is_empty() {
            let _ = writeln!(out, "<p class=\"meta\">{}</p>", escape(meta));
        }
        Self { out }
    }

    /// A section heading, `<h2 id="<id>">`.
    pub fn heading(&mut self, id: &str, text: &str) {
        let _ = writeln!(self.out, "<h2 id=\"{}\">{}</h2>", escape(id), escape(text));
    }

    /// A paragraph of text.
    pub fn paragraph(&mut self, text: &str) {
        let _ = writeln!(self.out, "<p>{}</p>", escape(text));
    }

    /// Preformatted text, whole (wrapped, never cut).
    pub fn pre(&mut self, id: &str, text: &str) {
        let _ = writeln!(self.out, "<pre id=\"{}\">{}</pre>", escape(id), escape(text));
    }

    /// A table with its header row; `id` on the `<table>`.
    pub fn table(&mut self, id: &str, header: &[&str], rows: &[Vec<Cell>]) {
        let _ = write!(self.out, "<table id=\"{}\"><tr>", escape(id));
        for h in header {
            let _ = write!(self.out, "<th>{}</th>", escape(h));
        }
        self.out.push_str("</tr>\n");
        for row in rows {
            self.out.push_str("<tr>");
            for cell in row {
                self.out.push_str(&cell.to_html());
            }
            self.out.push_str("</tr>\n");
        }
        self.out.push_str("</table>\n");
    }

    /// Every plot, in order: `<figure id="plot-<key>">`, its title, the PNG inlined, its caption and file.
    pub fn figures(&mut self, images: &[Image]) {
        for image in images {
            let (w, h) = image.size_px;
            let _ = writeln!(
                self.out,
                "<figure id=\"plot-{}\"><h2>{}</h2><img alt=\"{}\" width=\"{w}\" height=\"{h}\" \
                 src=\"data:image/png;base64,{}\"><figcaption>{} <span class=\"meta\">({})</span></figcaption></figure>",
                escape(&image.key),
                escape(&image.title),
                escape(&image.title),
                data_encoding::BASE64.encode(&image.png),
                escape(&image.caption),
                escape(&image.file)
            );
        }
    }

    /// The page, closed.
    pub fn finish(mut self) -> String {
        let _ = write!(self.out, "</main>\n<script>{SCRIPT}</script>\n</body></html>\n");
        self.out
    }
}

/// A number with `decimals`, or `n/a` when it is missing or not finite.
pub(crate) fn number(value: Option<f64>, decimals: usize) -> String {
    match value {
        Some(v) if v.is_finite() => format!("{v:.decimals$}"),
        _ => "n/a".to_owned(),
    }
}
