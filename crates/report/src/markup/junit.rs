//! JUnit XML as Jenkins, GitLab and GitHub's test summaries read it: `<testsuites>` around one
//! `<testsuite>` with its counts, `<properties>`, one `<testcase>` each with at most one
//! `<failure>` or `<skipped>`, and the suite's `<system-out>`. Every text passes through
//! [`xml_text`]: escaped, and characters XML 1.0 cannot hold dropped.

use std::fmt::Write as _;

/// How a test case ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// It passed.
    Passed,
    /// It failed: the one-line `message`, its `kind` (the `type` attribute) and details.
    Failed {
        message: String,
        kind: &'static str,
        detail: String,
    },
    /// Neither passed nor failed, with why.
    Skipped { message: String },
}

/// One `<testcase>`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Case {
    pub classname: String,
    pub name: String,
    /// Seconds.
    pub time: f64,
    pub outcome: Outcome,
}

/// One `<testsuite>`, the only one in the document.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Suite {
    pub name: String,
    /// When the result started (RFC 3339); written as JUnit's `YYYY-MM-DDTHH:MM:SS`.
    pub started_at: String,
    /// Seconds.
    pub time: f64,
    pub hostname: String,
    pub properties: Vec<(String, String)>,
    pub cases: Vec<Case>,
    /// Plain text for the suite's `<system-out>`; none when empty.
    pub out: String,
}

/// Text safe in XML 1.0 content and attributes: `& < > " '` escaped, control characters other
/// than tab, line feed and carriage return dropped (XML 1.0 cannot hold them at all).
pub(crate) fn xml_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

/// `2026-11-28T01:02:03` from an RFC 3339 time (JUnit's timestamp has no zone or fraction);
/// `None` when it does not start like one.
fn timestamp(rfc3339: &str) -> Option<&str> {
    let t = rfc3339.get(..19)?;
    let b = t.as_bytes();
    let digits = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18];
    let shape = digits.iter().all(|&i| b[i].is_ascii_digit())
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':';
    shape.then_some(t)
}

fn seconds(t: f64) -> String {
    format!("{:.3}", if t.is_finite() { t.max(0.0) } else { 0.0 })
}

/// The whole document.
pub(crate) fn document(suite: &Suite) -> String {
    let count = |f: fn(&Outcome) -> bool| suite.cases.iter().filter(|c| f(&c.outcome)).count();
    let failures = count(|o| matches!(o, Outcome::Failed { .. }));
    let skipped = count(|o| matches!(o, Outcome::Skipped { .. }));
    let tests = suite.cases.len();
    let name = xml_text(&suite.name);
    let time = seconds(suite.time);
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"{name}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{time}\">"
    );
    let stamp = timestamp(&suite.started_at)
        .map(|t| format!(" timestamp=\"{t}\""))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "  <testsuite name=\"{name}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{time}\"{stamp} hostname=\"{}\">",
        xml_text(&suite.hostname)
    );
    if !suite.properties.is_empty() {
        out += "    <properties>\n";
        for (k, v) in &suite.properties {
            let _ = writeln!(
                out,
                "      <property name=\"{}\" value=\"{}\"/>",
                xml_text(k),
                xml_text(v)
            );
        }
        out += "    </properties>\n";
    }
    for case in &suite.cases {
        out += &testcase(case);
    }
    if !suite.out.is_empty() {
        let _ = writeln!(out, "    <system-out>{}</system-out>", xml_text(&suite.out));
    }
    out + "  </testsuite>\n</testsuites>\n"
}

fn testcase(c: &Case) -> String {
    let open = format!(
        "    <testcase classname=\"{}\" name=\"{}\" time=\"{}\"",
        xml_text(&c.classname),
        xml_text(&c.name),
        seconds(c.time)
    );
    match &c.outcome {
        Outcome::Passed => format!("{open}/>\n"),
        Outcome::Failed {
            message,
            kind,
            detail,
        } => format!(
            "{open}>\n      <failure message=\"{}\" type=\"{kind}\">{}</failure>\n    </testcase>\n",
            xml_text(message),
            xml_text(detail)
        ),
        Outcome::Skipped { message } => format!(
            "{open}>\n      <skipped message=\"{}\"/>\n    </testcase>\n",
            xml_text(message)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_control_characters_dropped() {
        assert_eq!(
            xml_text("a<b & \"c\" 'd'>\u{1}\u{7}\tok\n"),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;\tok\n"
        );
    }

    #[test]
    fn timestamps_lose_zone_and_fraction() {
        assert_eq!(
            timestamp("2026-11-28T01:02:03.123Z"),
            Some("2026-11-28T01:02:03")
        );
        assert_eq!(timestamp("yesterday"), None);
        assert_eq!(timestamp("2026-11-28 01:02:03Z"), None);
    }
}
